package toolrun

import (
	"context"
	"time"

	"github.com/hermes-go/hermes/actors/tool"
)

// The ToolRunner's message. It is sent as a pointer; Receive switches on
// the pointer type and logs (message_type) any other.

// run is the message a ToolRunner gets: one call and where to answer.
type run struct {
	ctx     context.Context
	call    tool.Call
	timeout time.Duration
	reply   chan tool.Result
	start   time.Time
}
