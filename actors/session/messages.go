package session

import (
	"errors"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/schema"
	"go.opentelemetry.io/otel/trace"
)

// Messages the session actor and its supervisor handle. Every message is
// sent as a pointer; Receive switches on the pointer types, and a message
// of any other type is logged (message_type) and dropped.

// Turn asks the session to run one turn. Reply receives the outcome.
// Observe is called from the turn's goroutine (in-process only).
type Turn struct {
	Text string
	// Images go with Text; their blobs must be stored before the turn is
	// asked for (events/blobs), since the user message that names them is
	// appended as the turn starts.
	Images  []schema.ImageRef
	Observe agent.Observer
	Reply   chan<- TurnResult
	// Model, when set, overrides the configured model for this turn.
	Model string
	// ID, when set, is the turn's id (the gateway picks it before the
	// turn starts, so that after a crash it can tell whether the turn's
	// user message was recorded).
	ID string
	// Continue answers the history as it is instead of adding Text: the
	// gateway finishes a turn a crash cut short this way.
	Continue bool
	// Yolo approves dangerous commands in this turn and its subagents'
	// (as Deps.Yolo does in every turn): the chat's /yolo.
	Yolo bool
	// Persona, when set, is a personality the chat took on (/personality):
	// sent with the turn's latest message on every call, as the memory
	// prefetch is, never recorded, so the stable prefix stays as built.
	Persona string
	// Trace is the span the turn runs under (the gateway's, a cluster
	// caller's), so that the turn's model and tool spans join its trace.
	Trace trace.SpanContext
	// Skills are the skills Text loads (/<skill-name>), recorded with the
	// user message as their uses.
	Skills []string
	// New: the caller created the session for this turn and has not asked
	// for the turn before. The session runs it only while it holds no
	// turn (else the result's Err is ErrNotNew), so that a caller that
	// would look the turn up first (a cluster member) need not.
	New bool
}

// ErrNotNew answers a Turn marked New in a session that holds a turn
// already: look the turn up, then ask again without New.
var ErrNotNew = errors.New("the session holds a turn already")

// TurnResult is how a turn ended.
type TurnResult struct {
	// SessionID is the session the turn ended in: a compression moves the
	// conversation to a child session.
	SessionID string
	TurnID    string
	Answer    string
	Err       error
	// Usage, when set, is the sum of the turn's model calls' usage, known
	// to the session that made every one of them (nil when it did not: a
	// turn continued from its events; read them then).
	Usage *schema.Usage
}

// Stop interrupts the turn in flight (and drops queued ones).
type Stop struct{ Reason string }

// Steer hands guidance to the turn in flight (/steer) without
// interrupting it: the model reads it before its next call. Reply gets
// ErrNotRunning when no turn runs (the text is then not kept).
type Steer struct {
	Text  string
	Reply chan<- error
}

// ErrNotRunning answers a Steer when no turn runs.
var ErrNotRunning = errors.New("no turn is running")

// CompressNow compresses the session now (/compress); it is refused while a
// turn runs. Reply receives the session the conversation continues in.
type CompressNow struct {
	Model string
	Reply chan<- TurnResult
	// Force compresses a history whose protected head and tail
	// (compression.protect_first_n, protect_last_n) cover it all, keeping
	// only the first message and the last exchange verbatim.
	Force bool
}

// Retitle records a title the person gave the session (/title); Reply
// receives the outcome.
type Retitle struct {
	Title string
	Reply chan<- error
}

// turnDone is a turn ending in its goroutine, back in the actor.
type turnDone struct {
	turn   *Turn
	result TurnResult
}

// titled is the outcome of Deps.Title, back in the actor.
type titled struct {
	turnID string
	title  string
	call   schema.AuxiliaryCallCompleted
}

// spawnChild asks a session actor to start a subagent as its child.
type spawnChild struct {
	id    string
	task  *childTask
	reply chan error
}

// childFailed makes a subagent's actor fail, so its supervisor decides.
type childFailed struct{ err error }

// stopChild asks a session actor to stop the subagent id (its parent's
// turn was interrupted).
type stopChild struct{ id string }

// idleCheck comes back to an idle session actor after Deps.IdleAfter;
// gen tells which idle spell it ends.
type idleCheck struct{ gen uint64 }

// leaseLost tells the actor its store lease ended without being released
// (the connection holding it broke, as in a PostgreSQL restart): it stops
// at once when idle, else once the turn in flight has ended.
type leaseLost struct{}

// forgotten is sent by a stopped actor to itself so that its PID drops
// the process it caches (see Stopped); it is a dead letter, not logged.
type forgotten struct{}

// IgnoreDeadLetterLogging implements actor.IgnoreDeadLetterLogging.
func (forgotten) IgnoreDeadLetterLogging() {}

// spawn asks the sessions supervisor to start the actor of session id;
// ready receives the outcome of its recovery.
type spawn struct {
	id    string
	ready chan<- error
}

// personaNote is how a Turn's Persona reaches the model.
func personaNote(persona string) string {
	return "[Personality the user chose for this conversation; answer in it:]\n" + persona
}
