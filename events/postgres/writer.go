package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Group commit: the appends of one process go through one writer
// goroutine, which takes whatever has queued up and writes it in one
// transaction. The transaction takes the counter's row lock first, so the
// stream checks it makes after it see every commit before it, and holds it
// to its commit; one commit (one WAL flush) then serves many appends,
// where one transaction per append would pay a flush each, in turn.

// groupTimeout bounds one group's transaction.
const groupTimeout = 2 * time.Minute

// maxGroup bounds how many queued appends one transaction takes.
const maxGroup = 256

type request struct {
	ctx      context.Context
	stream   string
	expected events.Expected
	evs      []schema.Envelope // nil: delete the stream
	// lazy: the append may commit without waiting for the WAL flush
	// (events.DeferSync); PostgreSQL's own WAL writer flushes it shortly.
	lazy  bool
	reply chan reply
}

type reply struct {
	res events.AppendResult
	err error
}

// submit queues r for the writer and waits for its verdict. Once queued it
// waits even if ctx ends: the writer checks ctx before writing, so the
// answer says exactly whether it was written.
func (s *Store) submit(r *request) (events.AppendResult, error) {
	r.reply = make(chan reply, 1)
	if err := s.w.Queue(r.ctx, r); err != nil {
		return events.AppendResult{}, err
	}
	rep := <-r.reply
	return rep.res, rep.err
}

// commit writes a group in one transaction. A request whose condition
// fails gets its error and writes nothing; the others go on. If the
// transaction fails, every request gets the error and nothing is written;
// if it failed on a revision another writer took (one that does not take
// the counter first: none of this code), each request is retried alone.
func (s *Store) commit(group []*request) {
	replies := make([]reply, len(group))
	err := s.groupTx(group, replies)
	for i, r := range group {
		switch {
		case errors.Is(err, errConflict) && r.ctx.Err() == nil:
			res, err := s.writeAlone(r.ctx, r.stream, r.expected, r.evs)
			replies[i] = reply{res: res, err: err}
		case err != nil && r.evs != nil && s.outage > 0 && transient(err) && r.ctx.Err() == nil:
			// The connection failed: settled on its own, so that the
			// writer takes the next group meanwhile (see settle).
			go func() { r.reply <- s.settle(r, err) }()
			continue
		case err != nil:
			replies[i] = reply{err: fmt.Errorf("append to %s in %s: %w", r.stream, s.safe, err)}
		}
		r.reply <- replies[i]
	}
}

// rowSet collects the rows of a transaction for one INSERT.
type rowSet struct {
	pos, revs, times    []int64
	streams, ids, types []string
	sids, turns, causes []string
	versions            []int32
	payloads            [][]byte
}

func (rs *rowSet) add(pos int64, stream string, rev int64, e schema.Envelope) {
	rs.pos, rs.revs, rs.times = append(rs.pos, pos), append(rs.revs, rev), append(rs.times, e.Time.UnixNano())
	rs.streams, rs.ids, rs.types = append(rs.streams, stream), append(rs.ids, e.ID), append(rs.types, e.Type)
	rs.sids, rs.turns, rs.causes = append(rs.sids, e.SessionID), append(rs.turns, e.TurnID), append(rs.causes, e.CausationID)
	rs.versions, rs.payloads = append(rs.versions, int32(e.Version)), append(rs.payloads, e.Payload)
}

const insertRows = `INSERT INTO hermes_events (` + columns + `)
	SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::integer[], $7::text[], $8::bigint[], $9::text[], $10::text[], $11::bytea[])`

// insertRowsAndHead is insertRows that also moves the counter to $12.
const insertRowsAndHead = `WITH ins AS (` + insertRows + `) UPDATE hermes_head SET position = $12`

// queue queues the INSERT of the collected rows on b, with the counter's
// move to head when head > 0.
func (rs *rowSet) queue(b *pgx.Batch, head int64) {
	switch {
	case len(rs.pos) == 0 && head > 0:
		b.Queue(`UPDATE hermes_head SET position = $1`, head)
	case len(rs.pos) == 0:
	case head > 0:
		b.Queue(insertRowsAndHead, rs.pos, rs.streams, rs.revs, rs.ids, rs.types, rs.versions, rs.sids, rs.times, rs.turns, rs.causes, rs.payloads, head)
	default:
		b.Queue(insertRows, rs.pos, rs.streams, rs.revs, rs.ids, rs.types, rs.versions, rs.sids, rs.times, rs.turns, rs.causes, rs.payloads)
	}
	*rs = rowSet{}
}

// conflict turns a unique violation on (stream, revision) into errConflict.
func conflict(err error) error {
	if isRevisionTaken(err) {
		return errConflict
	}
	return err
}

func tombstoneOf(stream string) schema.Envelope {
	return schema.Envelope{ID: uuid.NewString(), Type: events.StreamDeletedType, Version: 1,
		SessionID: events.SessionOf(stream), Time: time.Now().UTC(), Payload: []byte("{}")}
}

// groupTx writes a group in one transaction of two round trips: the
// first begins it, takes the counter's row lock and reads the state of
// every stream the group writes (pipelined: the state is read after the
// lock is granted, so it sees every commit before); the second inserts
// the rows and moves the counter (one statement) and commits. The
// counter's lock is held for one round trip.
func (s *Store) groupTx(group []*request, replies []reply) (err error) {
	// The transaction is the group's: no one request's ctx may cancel it;
	// a bound keeps a server that stopped answering from holding every
	// append of the process for ever.
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if pc := conn.Conn().PgConn(); err != nil && !pc.IsClosed() && pc.TxStatus() != 'I' {
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if _, rerr := conn.Exec(rctx, "ROLLBACK"); rerr != nil {
				conn.Conn().Close(rctx) // the pool drops it
			}
			cancel()
		}
		conn.Release()
	}()
	lazy := true
	for _, r := range group {
		lazy = lazy && r.lazy
	}
	// Every stream's state in one statement, not one per stream.
	var names []string
	for _, r := range group {
		if r.ctx.Err() == nil && !slices.Contains(names, r.stream) {
			names = append(names, r.stream)
		}
	}
	var head int64
	var touched map[string]streamState
	first := &pgx.Batch{}
	first.Queue("BEGIN")
	if lazy {
		// Asynchronous commit for this transaction only: visible and kept
		// by a crash of this process, on disk within PostgreSQL's
		// wal_writer_delay (a server crash in that window can lose it).
		first.Queue(`SET LOCAL synchronous_commit = off`)
	}
	first.Queue(`SELECT position FROM hermes_head FOR UPDATE`).QueryRow(func(row pgx.Row) error { return row.Scan(&head) })
	if len(names) > 0 {
		first.Queue(statesSQL, names).Query(func(rows pgx.Rows) error {
			var err error
			touched, err = scanStates(rows, len(names))
			return err
		})
	}
	if err := conn.SendBatch(ctx, first).Close(); err != nil {
		return err
	}
	taken := head
	if touched == nil {
		touched = map[string]streamState{}
	}
	if s.hold != nil {
		s.hold(ctx)
	}
	second := &pgx.Batch{}
	var rows rowSet
	for i, r := range group {
		if err := r.ctx.Err(); err != nil {
			replies[i].err = err
			continue
		}
		st := touched[r.stream]
		if st.deleted {
			replies[i].err = fmt.Errorf("append to %s: %w", r.stream, events.ErrStreamDeleted)
			continue
		}
		if !r.expected.Check(st.last, st.exists) {
			replies[i].err = &events.WrongExpectedVersionError{Stream: r.stream, Expected: r.expected, Actual: st.last, Exists: st.exists}
			continue
		}
		next := int64(0)
		if st.exists {
			next = int64(st.last) + 1
		}
		evs := r.evs
		if evs == nil {
			evs = []schema.Envelope{tombstoneOf(r.stream)}
		}
		for j, e := range evs {
			head++
			rows.add(head, r.stream, next+int64(j), e)
		}
		last := uint64(next) + uint64(len(evs)) - 1
		replies[i].res = events.AppendResult{NextRevision: last, Position: uint64(head)}
		touched[r.stream] = streamState{last: last, exists: true, deleted: r.evs == nil}
		if r.evs == nil {
			// The stream's rows queued so far go in first, to be erased
			// with the rest.
			rows.queue(second, 0)
			second.Queue(`DELETE FROM hermes_events WHERE stream = $1 AND revision < $2`, r.stream, next)
		}
	}
	// The counter moves with the last rows, in their statement; a group
	// whose every append was refused leaves it.
	if head == taken {
		head = 0
	}
	rows.queue(second, head)
	second.Queue("COMMIT")
	if err := conflict(conn.SendBatch(ctx, second).Close()); err != nil {
		return err
	}
	if s.lostAck != nil && s.lostAck() {
		return io.ErrUnexpectedEOF
	}
	return nil
}
