package tool

import (
	"context"
	"io"
)

// TerminalMirror is implemented by an Asker whose front end can show a
// command's output live as it runs (an editor's terminal panel). The
// command still runs where the terminal tool runs it (in the session's
// sandbox); the mirror only displays its output, so containment does not
// depend on the front end.
type TerminalMirror interface {
	// MirrorTerminal opens a live view of command, about to run in dir.
	// It returns nil (and no error) when the front end has none to offer.
	MirrorTerminal(ctx context.Context, command, dir string) (MirroredTerminal, error)
}

// MirroredTerminal receives a command's output as it is produced. Write
// never blocks the command and never fails: output the view cannot take
// in time is dropped from the view (the model's copy is kept elsewhere).
type MirroredTerminal interface {
	io.Writer
	// Gone is closed when the person closed or stopped the view before
	// the command ended: the terminal tool stops the command.
	Gone() <-chan struct{}
	// Close ends the view with the command's exit code.
	Close(code int)
}
