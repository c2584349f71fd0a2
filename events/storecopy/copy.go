// Package storecopy moves a whole event log from one events.Store to
// another (the embedded store to PostgreSQL, PostgreSQL to EventStoreDB,
// and back), for `hermes store copy`.
//
// Events are copied in the source's global order, each stream's run of
// consecutive events in one atomic append that expects the revision before
// it, so that revisions, ids, times and payloads are preserved and the
// target's log is at every moment a prefix of the source's. A stream the
// source has deleted is deleted in the target at the same place in the
// order (its erased events are no longer in the source to copy; only its
// tombstone is). Global positions are not preserved: each store gives its
// own.
//
// A copy that was interrupted is resumed by running it again: the target's
// log is compared event by event with the start of the source's, the part
// already copied is skipped, and the rest is copied. A target holding
// anything that is not such a prefix is refused, and nothing is written.
// At the end both logs are summarised per stream (event count, deletion,
// and a SHA-256 over every event's revision, id, type, version, session,
// turn, causation, time and payload) and must agree.
package storecopy

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// page is how many events one read of a log takes.
const page = 1000

// Options tune a copy.
type Options struct {
	Log zerolog.Logger
	// OnBatch is called after each append with the number of events
	// copied so far by this run.
	OnBatch func(copied int)
}

// Report says what a copy did.
type Report struct {
	// Skipped events were in the target already (a resumed copy).
	Skipped int `json:"skipped"`
	// Copied events (tombstones included) were appended by this run.
	Copied int `json:"copied"`
	// Source is the verified summary both logs share.
	Source Summary `json:"summary"`
}

// NotPrefixError refuses a target whose log is not a prefix of the
// source's.
type NotPrefixError struct {
	// Index is the 0-based place in the global order where they differ.
	Index  int
	Reason string
}

func (e *NotPrefixError) Error() string {
	return fmt.Sprintf("the target is not empty and its log is not a prefix of the source's (event %d: %s): copy into an empty store", e.Index+1, e.Reason)
}

// MismatchError reports logs that differ after a copy.
type MismatchError struct{ Problems []string }

func (e *MismatchError) Error() string {
	return fmt.Sprintf("the copy does not verify: %d streams differ (first: %s)", len(e.Problems), e.Problems[0])
}

// same reports whether target event t is the copy of source event s.
func same(s, t events.Recorded) string {
	switch {
	case s.Stream != t.Stream:
		return fmt.Sprintf("stream %s, the source has %s", t.Stream, s.Stream)
	case s.IsTombstone() || t.IsTombstone():
		if s.IsTombstone() != t.IsTombstone() {
			return fmt.Sprintf("%s@%d is %s, the source has %s", t.Stream, t.Revision, t.Type, s.Type)
		}
		return ""
	case s.Revision != t.Revision || s.ID != t.ID:
		return fmt.Sprintf("%s@%d is event %s, the source has %s@%d event %s", t.Stream, t.Revision, t.ID, s.Stream, s.Revision, s.ID)
	case s.Type != t.Type || s.Version != t.Version || string(s.Payload) != string(t.Payload):
		return fmt.Sprintf("%s@%d differs in type, version or payload", t.Stream, t.Revision)
	}
	return ""
}

// Copy copies the log of from into to (see the package comment).
func Copy(ctx context.Context, from, to events.Store, opts Options) (Report, error) {
	var rep Report
	head, err := from.Head(ctx)
	if err != nil {
		return rep, fmt.Errorf("read the source's head: %w", err)
	}
	// Compare the target with the start of the source, page by page.
	var srcAfter, dstAfter uint64
	var src []events.Recorded
	for {
		dst, err := to.ReadAll(ctx, dstAfter, page)
		if err != nil {
			return rep, fmt.Errorf("read the target: %w", err)
		}
		if len(dst) == 0 {
			break
		}
		for _, t := range dst {
			if len(src) == 0 {
				if src, err = from.ReadAll(ctx, srcAfter, page); err != nil {
					return rep, fmt.Errorf("read the source: %w", err)
				}
				if len(src) == 0 || src[0].Position > head {
					return rep, &NotPrefixError{Index: rep.Skipped, Reason: fmt.Sprintf("the target holds more events than the source (%s@%d is extra)", t.Stream, t.Revision)}
				}
			}
			if why := same(src[0], t); why != "" {
				return rep, &NotPrefixError{Index: rep.Skipped, Reason: why}
			}
			srcAfter = src[0].Position
			src = src[1:]
			rep.Skipped++
		}
		dstAfter = dst[len(dst)-1].Position
	}
	if rep.Skipped > 0 {
		opts.Log.Info().Int("events", rep.Skipped).Msg("the target holds the start of the source already: resuming after it")
	}
	// Copy the rest, up to the head read at the start.
	for srcAfter < head {
		batch, err := from.ReadAll(ctx, srcAfter, page)
		if err != nil {
			return rep, fmt.Errorf("read the source after position %d: %w", srcAfter, err)
		}
		if len(batch) == 0 {
			break
		}
		for len(batch) > 0 && batch[0].Position <= head {
			n := 1
			first := batch[0]
			if !first.IsTombstone() {
				for n < len(batch) && batch[n].Stream == first.Stream && !batch[n].IsTombstone() && batch[n].Position <= head {
					n++
				}
			}
			if err := write(ctx, to, batch[:n]); err != nil {
				return rep, err
			}
			rep.Copied += n
			srcAfter = batch[n-1].Position
			batch = batch[n:]
			if opts.OnBatch != nil {
				opts.OnBatch(rep.Copied)
			}
		}
		if len(batch) > 0 {
			break // past the head
		}
	}
	// Verify.
	sum, err := Summarise(ctx, from, head)
	if err != nil {
		return rep, fmt.Errorf("summarise the source: %w", err)
	}
	got, err := Summarise(ctx, to, 0)
	if err != nil {
		return rep, fmt.Errorf("summarise the target: %w", err)
	}
	if problems := sum.Diff(got); len(problems) > 0 {
		return rep, &MismatchError{Problems: problems}
	}
	rep.Source = sum
	return rep, nil
}

// write appends one stream's run of events (or its tombstone) to the
// target, expecting the revision before it.
func write(ctx context.Context, to events.Store, run []events.Recorded) error {
	first := run[0]
	if first.IsTombstone() {
		if err := to.DeleteStream(ctx, first.Stream, events.Any); err != nil {
			return fmt.Errorf("delete %s in the target: %w", first.Stream, err)
		}
		return nil
	}
	expected := events.NoStream
	if first.Revision > 0 {
		expected = events.Exact(first.Revision - 1)
	}
	batch := make([]schema.Envelope, len(run))
	for i, r := range run {
		batch[i] = r.Envelope
	}
	if _, err := to.Append(ctx, first.Stream, expected, batch...); err != nil {
		return fmt.Errorf("copy %s@%d..%d: %w", first.Stream, first.Revision, run[len(run)-1].Revision, err)
	}
	return nil
}

// StreamSum summarises one stream of a log.
type StreamSum struct {
	Events  int    `json:"events"`
	Deleted bool   `json:"deleted,omitempty"`
	SHA256  string `json:"sha256"`
}

// Summary summarises a whole log, stream by stream.
type Summary struct {
	Streams map[string]StreamSum `json:"streams"`
	Events  int                  `json:"events"`
	Deleted int                  `json:"deleted"`
	// SHA256 covers every stream's summary, in stream-name order.
	SHA256 string `json:"sha256"`
}

// Summarise reads s's log (up to position upTo, 0 for all) and summarises
// it per stream.
func Summarise(ctx context.Context, s events.Store, upTo uint64) (Summary, error) {
	hashes := map[string]hash.Hash{}
	sum := Summary{Streams: map[string]StreamSum{}}
	var after uint64
	var buf [8]byte
	for {
		batch, err := s.ReadAll(ctx, after, page)
		if err != nil {
			return sum, err
		}
		if len(batch) == 0 {
			break
		}
		done := false
		for _, r := range batch {
			if upTo > 0 && r.Position > upTo {
				done = true
				break
			}
			after = r.Position
			st := sum.Streams[r.Stream]
			h := hashes[r.Stream]
			if h == nil {
				h = sha256.New()
				hashes[r.Stream] = h
			}
			if r.IsTombstone() {
				st.Deleted = true
				sum.Streams[r.Stream] = st
				continue
			}
			st.Events++
			sum.Events++
			sum.Streams[r.Stream] = st
			binary.BigEndian.PutUint64(buf[:], r.Revision)
			h.Write(buf[:])
			for _, f := range []string{r.ID, r.Type, fmt.Sprint(r.Version), r.SessionID, r.TurnID, r.CausationID, r.Time.UTC().Format("2006-01-02T15:04:05.999999999Z")} {
				binary.BigEndian.PutUint64(buf[:], uint64(len(f)))
				h.Write(buf[:])
				h.Write([]byte(f))
			}
			binary.BigEndian.PutUint64(buf[:], uint64(len(r.Payload)))
			h.Write(buf[:])
			h.Write(r.Payload)
		}
		if done {
			break
		}
	}
	names := make([]string, 0, len(sum.Streams))
	for name := range sum.Streams {
		names = append(names, name)
	}
	slices.Sort(names)
	all := sha256.New()
	for _, name := range names {
		st := sum.Streams[name]
		if st.Deleted {
			// An erased stream's events are gone; what is left to compare
			// is that it is deleted.
			sum.Deleted++
			st.Events, st.SHA256 = 0, ""
			sum.Events -= sum.Streams[name].Events
		} else {
			st.SHA256 = hex.EncodeToString(hashes[name].Sum(nil))
		}
		sum.Streams[name] = st
		fmt.Fprintf(all, "%s\x00%d\x00%v\x00%s\x00", name, st.Events, st.Deleted, st.SHA256)
	}
	sum.SHA256 = hex.EncodeToString(all.Sum(nil))
	return sum, nil
}

// Diff lists the streams in which got differs from s.
func (s Summary) Diff(got Summary) []string {
	var out []string
	for name, want := range s.Streams {
		g, ok := got.Streams[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s is missing from the target", name))
		case g != want:
			out = append(out, fmt.Sprintf("%s: source %d events (deleted %v, sha256 %.12s), target %d events (deleted %v, sha256 %.12s)",
				name, want.Events, want.Deleted, want.SHA256, g.Events, g.Deleted, g.SHA256))
		}
	}
	for name := range got.Streams {
		if _, ok := s.Streams[name]; !ok {
			out = append(out, fmt.Sprintf("%s is in the target only", name))
		}
	}
	slices.Sort(out)
	return out
}

// IsRefusal reports whether err is a copy refused before anything was
// written (a target that is not a prefix of the source).
func IsRefusal(err error) bool {
	var np *NotPrefixError
	return errors.As(err, &np)
}
