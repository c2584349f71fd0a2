// Package eventstoredb is the event store on EventStoreDB (or KurrentDB),
// through its official gRPC client. Each Hermes stream is an EventStoreDB
// stream (optionally under a prefix, so that several stores or test runs
// share one server); the global log is $all.
//
// Mapping, and its limits:
//
//   - Expected revisions map one to one: Any, NoStream, StreamExists and
//     Exact(n) become esdb.Any, esdb.NoStream, esdb.StreamExists and
//     esdb.Revision(n). The server's wrong-expected-version answer becomes
//     *events.WrongExpectedVersionError; the client does not carry the
//     stream's actual revision in it, so the adapter reads the stream's
//     last event to fill it in (a racing append may move it meanwhile).
//   - Position is the event's commit position in the transaction log plus
//     one (commit positions start at 0, ours at 1). The position an append
//     returns is read back from its last event when the append held more
//     than one (one more read). Commit positions are
//     byte offsets: they increase in commit order but are far from dense.
//     Since EventStoreDB 20 an appended event's commit and prepare
//     positions are equal, so the commit position names one event; events
//     of explicit multi-append transactions of older servers would share
//     a commit position and cannot be told apart by our uint64 (resuming
//     after one of them could skip its siblings). Positions are therefore
//     comparable only within one server's log: they do not survive a
//     backup restored elsewhere or a copy into another store (hermes store
//     copy keeps streams and revisions, not positions).
//   - $all also holds the server's own events (streams and types starting
//     with "$"); reads and subscriptions leave them out, except the
//     $streamDeleted tombstone of a Hermes stream.
//   - DeleteStream is EventStoreDB's tombstone (hard delete): the stream can
//     never be written again, and reads fail with events.ErrStreamDeleted.
//     The server removes the events from $all only when scavenged, so
//     ReadAll and SubscribeAll drop the events of tombstoned streams
//     themselves (one extra stream read per stream seen in a page) and
//     deliver the tombstone. Its Revision is the server's (the largest
//     int64), not the stream's next revision as in the other stores.
//   - Envelope fields other than id, type and payload travel in the event's
//     metadata as JSON.
//
// The contract suite (events/storetest) runs against a real server when
// HERMES_ESDB_URL is set; no EventStoreDB server can run on the machines
// this project is built on, so it is skipped there.
package eventstoredb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Store is the EventStoreDB event store.
type Store struct {
	client *esdb.Client
	log    zerolog.Logger
	prefix string
	safe   string
	closed atomic.Bool
}

// Option configures Open.
type Option func(*Store)

// WithLogger sets the logger for diagnostics.
func WithLogger(l zerolog.Logger) Option { return func(s *Store) { s.log = l } }

// ParseConnectionString reads an esdb:// or esdb+discover:// connection
// string, and the same under KurrentDB's names (kurrentdb://,
// kurrentdb+discover://, kdb://), which the client this build uses knows
// only by the old ones.
func ParseConnectionString(dsn string) (*esdb.Configuration, error) {
	for _, k := range []struct{ from, to string }{
		{"kurrentdb+discover://", "esdb+discover://"}, {"kurrentdb://", "esdb://"},
		{"kdb+discover://", "esdb+discover://"}, {"kdb://", "esdb://"},
	} {
		if rest, ok := strings.CutPrefix(dsn, k.from); ok {
			dsn = k.to + rest
			break
		}
	}
	return esdb.ParseConnectionString(dsn)
}

// WithStreamPrefix keeps this store's streams under prefix on the server:
// its reads of $all see only those, so that several stores share a server.
func WithStreamPrefix(prefix string) Option { return func(s *Store) { s.prefix = prefix } }

// Open connects to the server named by an esdb:// (or kurrentdb://)
// connection string.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	s := &Store{log: zerolog.Nop(), safe: Redact(dsn)}
	for _, o := range opts {
		o(s)
	}
	cfg, err := ParseConnectionString(dsn)
	if err != nil {
		return nil, fmt.Errorf("open event store %s: the connection string does not parse", s.safe)
	}
	if s.client, err = esdb.NewClient(cfg); err != nil {
		return nil, fmt.Errorf("open event store %s: %w", s.safe, err)
	}
	// A first read proves the server answers now rather than at the first
	// append.
	rs, err := s.client.ReadAll(ctx, esdb.ReadAllOptions{Direction: esdb.Backwards, From: esdb.End{}}, 1)
	if err == nil {
		_, err = rs.Recv()
		rs.Close()
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err != nil {
		s.client.Close()
		return nil, fmt.Errorf("open event store %s: %w", s.safe, err)
	}
	return s, nil
}

// Redact returns dsn with any password replaced, for logs and messages.
func Redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	if i, j := strings.Index(dsn, "://"), strings.LastIndex(dsn, "@"); i >= 0 && j > i {
		if k := strings.Index(dsn[i+3:j], ":"); k >= 0 {
			return dsn[:i+3+k+1] + "xxxxx" + dsn[j:]
		}
	}
	return dsn
}

// identityStream holds the log's identity: one event, written by the
// first Hermes to ask, never part of the log Hermes reads.
const identityStream = "hermes-log-identity"

// LogID is the log's identity (see projections.Identified): read models
// built from another log notice they must be rebuilt.
func (s *Store) LogID(ctx context.Context) (string, error) {
	for range 2 {
		rs, err := s.client.ReadStream(ctx, s.prefix+identityStream, esdb.ReadStreamOptions{From: esdb.Start{}}, 1)
		if err != nil {
			return "", fmt.Errorf("read the log identity in %s: %w", s.safe, err)
		}
		ev, err := rs.Recv()
		rs.Close()
		if err == nil {
			return ev.OriginalEvent().EventID.String(), nil
		}
		if c, ok := code(err); !ok || c != esdb.ErrorCodeResourceNotFound {
			return "", fmt.Errorf("read the log identity in %s: %w", s.safe, err)
		}
		_, err = s.client.AppendToStream(ctx, s.prefix+identityStream, esdb.AppendToStreamOptions{ExpectedRevision: esdb.NoStream{}},
			esdb.EventData{EventID: uuid.New(), EventType: "HermesLogIdentity", ContentType: esdb.ContentTypeJson, Data: []byte("{}")})
		if c, ok := code(err); err != nil && (!ok || c != esdb.ErrorCodeWrongExpectedVersion) {
			return "", fmt.Errorf("write the log identity in %s: %w", s.safe, err)
		}
	}
	return "", fmt.Errorf("the log identity of %s cannot be read back", s.safe)
}

// Close closes the connection.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.client.Close()
}

// String names the store (password redacted).
func (s *Store) String() string { return s.safe }

// meta is what an event's metadata carries of its envelope.
type meta struct {
	Version     int       `json:"version"`
	SessionID   string    `json:"session_id,omitempty"`
	Time        time.Time `json:"time"`
	TurnID      string    `json:"turn_id,omitempty"`
	CausationID string    `json:"causation_id,omitempty"`
}

func expectedOf(e events.Expected) esdb.ExpectedRevision {
	if rev, ok := e.ExactRevision(); ok {
		return esdb.Revision(rev)
	}
	switch e {
	case events.NoStream:
		return esdb.NoStream{}
	case events.StreamExists:
		return esdb.StreamExists{}
	}
	return esdb.Any{}
}

func code(err error) (esdb.ErrorCode, bool) {
	var e *esdb.Error
	if errors.As(err, &e) {
		return e.Code(), true
	}
	return 0, false
}

// Append implements events.Store.
func (s *Store) Append(ctx context.Context, stream string, expected events.Expected, evs ...schema.Envelope) (events.AppendResult, error) {
	if stream == "" {
		return events.AppendResult{}, errors.New("append: empty stream name")
	}
	if len(evs) == 0 {
		return events.AppendResult{}, fmt.Errorf("append to %s: no events", stream)
	}
	if s.closed.Load() {
		return events.AppendResult{}, fmt.Errorf("append to %s: %w", stream, events.ErrClosed)
	}
	data := make([]esdb.EventData, len(evs))
	for i, e := range evs {
		if e.ID == "" || e.Type == "" || e.Version < 1 {
			return events.AppendResult{}, fmt.Errorf("append to %s: event %d lacks id, type or version", stream, i)
		}
		if !json.Valid(e.Payload) {
			return events.AppendResult{}, fmt.Errorf("append to %s: event %d (%s) payload is not valid JSON", stream, i, e.Type)
		}
		id, err := uuid.Parse(e.ID)
		if err != nil {
			return events.AppendResult{}, fmt.Errorf("append to %s: event %d id %q is not a UUID, as EventStoreDB requires", stream, i, e.ID)
		}
		m, _ := json.Marshal(meta{Version: e.Version, SessionID: e.SessionID, Time: e.Time, TurnID: e.TurnID, CausationID: e.CausationID})
		data[i] = esdb.EventData{EventID: id, EventType: e.Type, ContentType: esdb.ContentTypeJson, Data: e.Payload, Metadata: m}
	}
	if err := ctx.Err(); err != nil {
		return events.AppendResult{}, err
	}
	res, err := s.client.AppendToStream(ctx, s.prefix+stream, esdb.AppendToStreamOptions{ExpectedRevision: expectedOf(expected)}, data...)
	if err != nil {
		return events.AppendResult{}, s.writeErr(ctx, "append to", stream, expected, err)
	}
	out := events.AppendResult{NextRevision: res.NextExpectedVersion, Position: res.CommitPosition + 1}
	if len(evs) > 1 || res.CommitPosition != res.PreparePosition {
		// Which event of a batch the server's position names is not
		// part of its contract: read the last one's back, by revision
		// (no other append can have taken it).
		last, err := s.ReadStream(ctx, stream, events.Forward, res.NextExpectedVersion, 1)
		if err != nil || len(last) != 1 {
			return out, fmt.Errorf("append to %s: written, but its position cannot be read back: %v", stream, err)
		}
		out.Position = last[0].Position
	}
	return out, nil
}

// writeErr maps the server's answer to a failed write onto ours.
func (s *Store) writeErr(ctx context.Context, op, stream string, expected events.Expected, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	c, ok := code(err)
	switch {
	case ok && c == esdb.ErrorCodeStreamDeleted:
		return fmt.Errorf("%s %s: %w", op, stream, events.ErrStreamDeleted)
	case ok && c == esdb.ErrorCodeWrongExpectedVersion:
		wev := &events.WrongExpectedVersionError{Stream: stream, Expected: expected}
		last, lerr := s.ReadStream(ctx, stream, events.Backward, events.End, 1)
		if errors.Is(lerr, events.ErrStreamDeleted) {
			return fmt.Errorf("%s %s: %w", op, stream, events.ErrStreamDeleted)
		}
		if len(last) == 1 {
			wev.Actual, wev.Exists = last[0].Revision, true
		}
		return wev
	}
	return fmt.Errorf("%s %s in %s: %w", op, stream, s.safe, err)
}

// DeleteStream implements events.Store with EventStoreDB's tombstone.
func (s *Store) DeleteStream(ctx context.Context, stream string, expected events.Expected) error {
	if stream == "" {
		return errors.New("delete: empty stream name")
	}
	_, err := s.client.TombstoneStream(ctx, s.prefix+stream, esdb.TombstoneStreamOptions{ExpectedRevision: expectedOf(expected)})
	if err != nil {
		return s.writeErr(ctx, "delete", stream, expected, err)
	}
	return nil
}

func (s *Store) recorded(ev *esdb.RecordedEvent) (events.Recorded, error) {
	stream := strings.TrimPrefix(ev.StreamID, s.prefix)
	r := events.Recorded{Stream: stream, Revision: ev.EventNumber, Position: ev.Position.Commit + 1}
	r.ID, r.Type, r.Payload = ev.EventID.String(), ev.EventType, ev.Data
	if ev.EventType == events.StreamDeletedType {
		r.Version, r.SessionID, r.Time, r.Payload = 1, events.SessionOf(stream), ev.CreatedDate.UTC(), []byte("{}")
		return r, nil
	}
	var m meta
	if err := json.Unmarshal(ev.UserMetadata, &m); err != nil {
		return r, &events.CorruptEventError{Stream: stream, Revision: ev.EventNumber, Position: r.Position,
			Err: fmt.Errorf("metadata is not a Hermes envelope: %w", err)}
	}
	r.Version, r.SessionID, r.Time, r.TurnID, r.CausationID = m.Version, m.SessionID, m.Time.UTC(), m.TurnID, m.CausationID
	return r, nil
}

// ReadStream implements events.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, dir events.Direction, from uint64, limit int) ([]events.Recorded, error) {
	opts := esdb.ReadStreamOptions{Direction: esdb.Forwards, From: esdb.Revision(from)}
	if dir == events.Backward {
		opts.Direction = esdb.Backwards
		if from == events.End {
			opts.From = esdb.End{}
		}
	}
	count := uint64(math.MaxInt64)
	if limit > 0 {
		count = uint64(limit)
	}
	rs, err := s.client.ReadStream(ctx, s.prefix+stream, opts, count)
	if err != nil {
		return nil, s.readErr(ctx, stream, err)
	}
	defer rs.Close()
	var out []events.Recorded
	for {
		ev, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			if c, ok := code(err); ok && c == esdb.ErrorCodeResourceNotFound {
				return nil, nil
			}
			return nil, s.readErr(ctx, stream, err)
		}
		r, err := s.recorded(ev.OriginalEvent())
		if err != nil {
			return out, fmt.Errorf("read %s: %w", stream, err)
		}
		if r.IsTombstone() {
			return nil, fmt.Errorf("read %s: %w", stream, events.ErrStreamDeleted)
		}
		out = append(out, r)
	}
}

func (s *Store) readErr(ctx context.Context, stream string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if c, ok := code(err); ok && c == esdb.ErrorCodeStreamDeleted {
		return fmt.Errorf("read %s: %w", stream, events.ErrStreamDeleted)
	}
	return fmt.Errorf("read %s in %s: %w", stream, s.safe, err)
}

// ours reports whether an event of $all is one of this store's.
func (s *Store) ours(ev *esdb.RecordedEvent) bool {
	if !strings.HasPrefix(ev.StreamID, s.prefix) || strings.HasPrefix(ev.StreamID, "$") || ev.StreamID == s.prefix+identityStream {
		return false
	}
	return !strings.HasPrefix(ev.EventType, "$") || ev.EventType == events.StreamDeletedType
}

// page reads $all forward from after, keeping this store's events and
// leaving out those of tombstoned streams; deleted caches what it learnt.
func (s *Store) page(ctx context.Context, after uint64, limit int, deleted map[string]bool) ([]events.Recorded, error) {
	var from esdb.AllPosition = esdb.Start{}
	if after > 0 {
		// after-1 is the commit position of the event delivered last: a
		// real record to start from (the read includes it; it is skipped).
		from = esdb.Position{Commit: after - 1, Prepare: after - 1}
	}
	var out []events.Recorded
	for len(out) < limit {
		const chunk = 512
		rs, err := s.client.ReadAll(ctx, esdb.ReadAllOptions{Direction: esdb.Forwards, From: from}, chunk)
		if err != nil {
			return out, s.allErr(ctx, after, err)
		}
		n := 0
		var last esdb.Position
		for {
			ev, err := rs.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rs.Close()
				return out, s.allErr(ctx, after, err)
			}
			n++
			re := ev.OriginalEvent()
			last = re.Position
			if re.Position.Commit+1 <= after || !s.ours(re) || len(out) >= limit {
				continue
			}
			stream := strings.TrimPrefix(re.StreamID, s.prefix)
			if re.EventType != events.StreamDeletedType {
				gone, ok := deleted[stream]
				if !ok {
					_, err := s.ReadStream(ctx, stream, events.Backward, events.End, 1)
					gone = errors.Is(err, events.ErrStreamDeleted)
					deleted[stream] = gone
				}
				if gone {
					continue
				}
			}
			r, err := s.recorded(re)
			if err != nil {
				rs.Close()
				return out, err
			}
			out = append(out, r)
			after = r.Position
		}
		rs.Close()
		if n < chunk {
			break
		}
		from = last
	}
	return out, nil
}

func (s *Store) allErr(ctx context.Context, after uint64, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("read $all in %s after position %d: %w", s.safe, after, err)
}

// ReadAll implements events.Store.
func (s *Store) ReadAll(ctx context.Context, after uint64, limit int) ([]events.Recorded, error) {
	if limit <= 0 {
		limit = 1000
	}
	return s.page(ctx, after, limit, map[string]bool{})
}

// Head implements events.Store: the position of this store's last event.
func (s *Store) Head(ctx context.Context) (uint64, error) {
	from := esdb.AllPosition(esdb.End{})
	for {
		const chunk = 256
		rs, err := s.client.ReadAll(ctx, esdb.ReadAllOptions{Direction: esdb.Backwards, From: from}, chunk)
		if err != nil {
			return 0, s.allErr(ctx, 0, err)
		}
		n := 0
		for {
			ev, err := rs.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rs.Close()
				return 0, s.allErr(ctx, 0, err)
			}
			n++
			re := ev.OriginalEvent()
			if s.ours(re) {
				rs.Close()
				return re.Position.Commit + 1, nil
			}
			from = re.Position
		}
		rs.Close()
		if n < chunk {
			return 0, nil
		}
	}
}

// SubscribeAll implements events.Store: it catches up by reading $all,
// then follows a $all subscription from the last position delivered; when
// the subscription drops it catches up again from there.
func (s *Store) SubscribeAll(ctx context.Context, after uint64, handle func(events.Recorded) error) error {
	deleted := map[string]bool{}
	for {
		for {
			batch, err := s.page(ctx, after, 1000, deleted)
			for _, r := range batch {
				if err := handle(r); err != nil {
					return err
				}
				after = r.Position
			}
			if err != nil {
				return err
			}
			if len(batch) < 1000 {
				break
			}
		}
		var from esdb.AllPosition = esdb.Start{}
		if after > 0 {
			from = esdb.Position{Commit: after - 1, Prepare: after - 1}
		}
		sub, err := s.client.SubscribeToAll(ctx, esdb.SubscribeToAllOptions{From: from})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("subscribe to $all in %s: %w", s.safe, err)
		}
		err = s.follow(ctx, sub, &after, handle)
		sub.Close()
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.log.Warn().Str("store", s.safe).Uint64("after", after).Msg("$all subscription dropped: catching up again")
	}
}

// follow delivers a subscription's events until it drops (nil) or the
// handler fails.
func (s *Store) follow(ctx context.Context, sub *esdb.Subscription, after *uint64, handle func(events.Recorded) error) error {
	for {
		ev := sub.Recv()
		switch {
		case ev.SubscriptionDropped != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		case ev.EventAppeared != nil:
			re := ev.EventAppeared.OriginalEvent()
			if re.Position.Commit+1 <= *after || !s.ours(re) {
				continue
			}
			r, err := s.recorded(re)
			if err != nil {
				return err
			}
			if err := handle(r); err != nil {
				return err
			}
			*after = r.Position
		}
	}
}

var _ events.Store = (*Store)(nil)
