package events

import (
	"errors"
	"fmt"
	"strings"
)

// ErrLogLost is what a *LogLostError is: errors.Is(err, ErrLogLost) tells a
// lost log from every other failure.
var ErrLogLost = errors.New("event log lost")

// LogLostError reports that the log a store writes is no longer the one its
// acknowledged appends went to: its file was deleted, replaced, truncated
// or holds a shorter log than was acknowledged, or than another durable
// record of the same home remembers. A store that returns it has stopped
// writing (and reading): carrying on would build a new history on top of a
// lost one.
type LogLostError struct {
	// Path is the log's file.
	Path string
	// What says what happened to it ("was deleted while in use", "holds
	// another log", ...).
	What string
	// Log and Position are what was known before: the log's identity and
	// the highest position acknowledged or remembered (0 when unknown).
	Log      string
	Position uint64
	// Source is the record that remembers Log and Position when it is not
	// the store itself (a witness file, projections.db).
	Source string
	// Rescued is a copy of the log as the process that noticed the loss
	// still saw it (through the files it had open), "" when none was made;
	// RescuedUpTo is the last position it holds, RescueErr why none was made.
	Rescued     string
	RescuedUpTo uint64
	RescueErr   string
}

func (e *LogLostError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "event log %s %s", e.Path, e.What)
	if e.Log != "" || e.Position > 0 {
		b.WriteString(": ")
		if e.Source != "" {
			fmt.Fprintf(&b, "%s remembers ", e.Source)
		} else {
			b.WriteString("this process had ")
		}
		if e.Log != "" {
			fmt.Fprintf(&b, "log %s ", e.Log)
		} else {
			b.WriteString("the log ")
		}
		fmt.Fprintf(&b, "up to position %d", e.Position)
	}
	b.WriteString("; acknowledged sessions may be lost, so writing has stopped")
	switch {
	case e.Rescued != "":
		fmt.Fprintf(&b, "; a copy of the log as this process saw it (up to position %d) was saved to %s", e.RescuedUpTo, e.Rescued)
	case e.RescueErr != "":
		fmt.Fprintf(&b, "; no copy could be saved (%s)", e.RescueErr)
	}
	b.WriteString(". Stop every hermes process, restore events.db from a backup")
	if e.Rescued != "" {
		b.WriteString(" or that copy")
	}
	b.WriteString(", then run `hermes store verify`; if the loss is deliberate, `hermes store accept` records the log as it is now")
	return b.String()
}

// Is makes errors.Is(err, ErrLogLost) true.
func (e *LogLostError) Is(target error) bool { return target == ErrLogLost }
