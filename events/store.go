// Package events owns how events are kept: stream naming, the Store port
// every event store implements (the embedded one and EventStoreDB), and the
// errors callers branch on.
package events

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hermes-go/hermes/schema"
)

// SessionStream is the stream that holds one session's events.
func SessionStream(sessionID string) string { return "session-" + sessionID }

// SessionOf returns the session id of a session stream name, or "" when the
// stream is not a session stream.
func SessionOf(stream string) string {
	if id, ok := strings.CutPrefix(stream, "session-"); ok {
		return id
	}
	return ""
}

// StreamDeletedType is the type of the tombstone record a deleted stream
// leaves in the global log, so that subscribers learn of the erasure.
const StreamDeletedType = "$streamDeleted"

// Recorded is an event as read back from a store.
type Recorded struct {
	schema.Envelope
	// Stream is the stream the event was appended to.
	Stream string `json:"stream"`
	// Revision is the event's 0-based index in its stream.
	Revision uint64 `json:"revision"`
	// Position is the event's place in the global log, starting at 1.
	// Positions increase with commit order; erased events leave holes.
	Position uint64 `json:"position"`
}

// IsTombstone reports whether r marks the deletion of its stream.
func (r Recorded) IsTombstone() bool { return r.Type == StreamDeletedType }

// Expected is the optimistic-concurrency condition of an append.
type Expected struct {
	kind     expectKind
	revision uint64
}

type expectKind uint8

const (
	expectAny expectKind = iota
	expectNoStream
	expectStreamExists
	expectExact
)

var (
	// Any appends whatever the stream's state.
	Any = Expected{kind: expectAny}
	// NoStream appends only if the stream has no event yet.
	NoStream = Expected{kind: expectNoStream}
	// StreamExists appends only if the stream has at least one event.
	StreamExists = Expected{kind: expectStreamExists}
)

// Exact appends only if the stream's last event has revision rev.
func Exact(rev uint64) Expected { return Expected{kind: expectExact, revision: rev} }

// ExactRevision returns n and true for Exact(n), false for the others.
func (e Expected) ExactRevision() (uint64, bool) { return e.revision, e.kind == expectExact }

func (e Expected) String() string {
	switch e.kind {
	case expectNoStream:
		return "no stream"
	case expectStreamExists:
		return "stream exists"
	case expectExact:
		return fmt.Sprintf("revision %d", e.revision)
	}
	return "any"
}

// Check reports whether a stream whose last revision is current (exists
// false when the stream is empty) satisfies e.
func (e Expected) Check(current uint64, exists bool) bool {
	switch e.kind {
	case expectNoStream:
		return !exists
	case expectStreamExists:
		return exists
	case expectExact:
		return exists && current == e.revision
	}
	return true
}

// WrongExpectedVersionError is returned when an append's condition fails.
// Nothing of the batch was written.
type WrongExpectedVersionError struct {
	Stream   string
	Expected Expected
	// Actual is the stream's last revision; valid when Exists.
	Actual uint64
	Exists bool
}

func (e *WrongExpectedVersionError) Error() string {
	actual := "no stream"
	if e.Exists {
		actual = fmt.Sprintf("revision %d", e.Actual)
	}
	return fmt.Sprintf("append to %s: expected %s, stream is at %s", e.Stream, e.Expected, actual)
}

// ErrStreamDeleted is returned when reading or appending to a tombstoned
// stream.
var ErrStreamDeleted = errors.New("stream deleted")

// ErrClosed is returned by a store used after Close.
var ErrClosed = errors.New("event store closed")

// AppendResult says where an append landed.
type AppendResult struct {
	// NextRevision is the revision of the last event appended.
	NextRevision uint64
	// Position is the global position of the last event appended.
	Position uint64
}

// Direction is the order of a stream read.
type Direction uint8

const (
	// Forward reads from a revision towards the end.
	Forward Direction = iota
	// Backward reads from a revision towards the start.
	Backward
)

// End, as the start revision of a backward read, means the last event.
const End = ^uint64(0)

// Store is the event store port. Implementations: events/embedded (SQLite,
// one machine, several processes), events/postgres (PostgreSQL, any number
// of machines) and events/eventstoredb (EventStoreDB).
type Store interface {
	// Append writes evs to the end of stream, all or none, if expected holds.
	Append(ctx context.Context, stream string, expected Expected, evs ...schema.Envelope) (AppendResult, error)
	// ReadStream reads up to limit events of stream from revision from in
	// direction dir. A stream that never existed reads as empty.
	ReadStream(ctx context.Context, stream string, dir Direction, from uint64, limit int) ([]Recorded, error)
	// ReadAll reads up to limit events of the global log with positions
	// greater than after, in order. When it meets a damaged record it
	// returns the events before it together with a *CorruptEventError.
	ReadAll(ctx context.Context, after uint64, limit int) ([]Recorded, error)
	// SubscribeAll delivers every event with position greater than after, in
	// global order, first catching up and then live, until ctx ends or
	// handle returns an error (which SubscribeAll returns).
	SubscribeAll(ctx context.Context, after uint64, handle func(Recorded) error) error
	// DeleteStream erases stream's events and leaves a tombstone in the
	// global log; later appends to it fail with ErrStreamDeleted.
	DeleteStream(ctx context.Context, stream string, expected Expected) error
	// Head is the position of the last event in the global log (0 if none).
	Head(ctx context.Context) (uint64, error)
	// Close releases the store.
	Close() error
}

// CorruptEventError reports a stored event that cannot be read back: its
// record fails its checksum, its payload does not decode, or it is missing
// from a place where the log says it must be. It names where the damage is
// so that nothing is skipped silently.
type CorruptEventError struct {
	// Stream and Revision say whose event it is; Stream is empty when even
	// that cannot be told.
	Stream   string
	Revision uint64
	// Position is the event's place in the global log, 0 when unknown (an
	// event missing from a stream read).
	Position uint64
	Err      error
}

func (e *CorruptEventError) Error() string {
	stream := e.Stream
	if stream == "" {
		stream = "of an unknown stream"
	} else {
		stream = fmt.Sprintf("%s@%d", stream, e.Revision)
	}
	if e.Position == 0 {
		return fmt.Sprintf("event %s is unreadable: %v", stream, e.Err)
	}
	return fmt.Sprintf("event %s (position %d) is unreadable: %v", stream, e.Position, e.Err)
}

func (e *CorruptEventError) Unwrap() error { return e.Err }
