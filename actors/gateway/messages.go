package gateway

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/schema"
)

// Messages the router and chat actors handle. Each is sent as a pointer;
// Receive switches on the pointer types and logs (message_type) any other.

// inbound carries a bus message to the router actor and then to its chat.
type inbound struct {
	in   schema.Inbound
	corr string
	done chan error
}

// chatOf asks which chat a session belongs to.
type chatOf struct {
	session string
	reply   chan *actor.PID
}

// bound tells the router a chat now talks to a session.
type bound struct{ session, key string }

// ask is a tool's question for this chat's user.
type ask struct {
	q     tool.Question
	reply chan askAnswer
}

// askAnswer is the answer to an ask (or why there is none).
type askAnswer struct {
	text string
	err  error
}

// askDone tells the chat a question was answered or given up, so that the
// next waiting one may be asked.
type askDone struct{ reply chan askAnswer }

// turnFinished is a turn ending in its goroutine, back in the chat actor.
type turnFinished struct {
	w   *work
	res session.TurnResult
	// segment and replace: the answer takes the place of the preview
	// segment its turn streamed last.
	segment int
	replace bool
	// thinking is the model's reasoning for the answer, when the chat
	// shows it (/reasoning show).
	thinking string
	// made: the turn made sure its session is written (ensureSession).
	made bool
}
