package postgres

import (
	"context"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-go/hermes/events"
)

// The fast path of a group commit: one statement, in one round trip, in
// its own implicit transaction, where groupTx takes two round trips and
// five statements and holds the counter's row lock across a round trip.
// The statement takes the counter's lock, reads the last event of every
// stream the group writes, checks every request's condition, inserts the
// rows at the positions after the counter and the revisions after each
// stream's last, and moves the counter — or, when a condition fails,
// writes nothing and says so.
//
// The states it reads are those of the statement's snapshot, which may
// predate a commit the lock waited for. That cannot write anything
// wrong: a commit to a stream the group writes took the revision after
// the last one read, so the insert collides with it on (stream,
// revision) and the statement fails whole. Either way — a condition
// that fails, or a collision — groupTx then writes the group its own
// way, which reads the states under the lock and answers each request
// on its own.

// fastSQL is the fast path's statement. $1–$3 are per request (stream,
// condition kind, expected revision); $4–$13 per row (its request's
// index, from 1, and the event's fields); $14 the number of rows. It
// returns whether it wrote, the counter before, and each request's
// stream's last revision before (-1: none).
const fastSQL = `WITH h AS MATERIALIZED (SELECT position FROM hermes_head FOR UPDATE),
st AS MATERIALIZED (
	SELECT r.i, r.stream, r.kind, r.exp, e.revision AS last, e.type AS ltype
	FROM unnest($1::text[], $2::int[], $3::bigint[]) WITH ORDINALITY AS r(stream, kind, exp, i)
	LEFT JOIN LATERAL (SELECT revision, type FROM hermes_events WHERE stream = r.stream ORDER BY revision DESC LIMIT 1) AS e ON true),
ok AS MATERIALIZED (
	SELECT coalesce(bool_and(coalesce(ltype, '') <> '` + events.StreamDeletedType + `' AND CASE kind
		WHEN 1 THEN last IS NULL
		WHEN 2 THEN last IS NOT NULL
		WHEN 3 THEN last IS NOT DISTINCT FROM exp
		ELSE true END), true) AS ok FROM st),
w AS MATERIALIZED (
	SELECT * FROM unnest($4::int[], $5::text[], $6::text[], $7::integer[], $8::text[], $9::bigint[], $10::text[], $11::text[], $12::bytea[])
		WITH ORDINALITY AS w(req, id, type, version, sid, time_ns, turn, cause, payload, n)),
ins AS (
	INSERT INTO hermes_events (` + columns + `)
	SELECT h.position + w.n, st.stream, coalesce(st.last, -1) + row_number() OVER (PARTITION BY w.req ORDER BY w.n),
		w.id, w.type, w.version, w.sid, w.time_ns, w.turn, w.cause, w.payload
	FROM w JOIN st ON st.i = w.req, h, ok
	WHERE ok.ok),
up AS (
	UPDATE hermes_head SET position = (SELECT position FROM h) + $13
	WHERE (SELECT ok FROM ok))
SELECT ok.ok, h.position, (SELECT array_agg(coalesce(last, -1) ORDER BY i) FROM st) FROM ok, h`

// fastable reports whether group can take the fast path: every request
// an append (not a delete) to a stream no other request of the group
// writes, none lazy (its commit is synchronous) and none whose ctx ended.
func fastable(group []*request) bool {
	streams := make([]string, 0, len(group))
	for _, r := range group {
		if r.evs == nil || r.lazy || r.ctx.Err() != nil || slices.Contains(streams, r.stream) {
			return false
		}
		streams = append(streams, r.stream)
	}
	return len(group) > 0
}

// errFastRefused: a condition failed or a revision was taken; nothing
// was written.
var errFastRefused = errors.New("fast path refused")

// fastTx writes group in one statement (see fastSQL), filling replies.
// errFastRefused says nothing was written and groupTx should write the
// group its own way; another error is the statement's, whose outcome is
// as uncertain as a failed COMMIT's.
func (s *Store) fastTx(ctx context.Context, conn *pgxpool.Conn, group []*request, replies []reply) error {
	n := len(group)
	streams, kinds, exps := make([]string, n), make([]int32, n), make([]int64, n)
	var rows int
	for i, r := range group {
		streams[i] = r.stream
		switch {
		case r.expected == events.NoStream:
			kinds[i] = 1
		case r.expected == events.StreamExists:
			kinds[i] = 2
		default:
			if rev, ok := r.expected.ExactRevision(); ok {
				kinds[i], exps[i] = 3, int64(rev)
			}
		}
		rows += len(r.evs)
	}
	reqs, ids, types := make([]int32, 0, rows), make([]string, 0, rows), make([]string, 0, rows)
	versions, sids, times := make([]int32, 0, rows), make([]string, 0, rows), make([]int64, 0, rows)
	turns, causes, payloads := make([]string, 0, rows), make([]string, 0, rows), make([][]byte, 0, rows)
	for i, r := range group {
		for _, e := range r.evs {
			reqs, ids, types = append(reqs, int32(i+1)), append(ids, e.ID), append(types, e.Type)
			versions, sids, times = append(versions, int32(e.Version)), append(sids, e.SessionID), append(times, e.Time.UnixNano())
			turns, causes, payloads = append(turns, e.TurnID), append(causes, e.CausationID), append(payloads, e.Payload)
		}
	}
	var ok bool
	var head int64
	var lasts []int64
	err := conn.QueryRow(ctx, fastSQL, streams, kinds, exps, reqs, ids, types, versions, sids, times, turns, causes, payloads, rows).
		Scan(&ok, &head, &lasts)
	if err != nil {
		if isRevisionTaken(err) {
			s.fastTaken.Add(1)
			return errFastRefused
		}
		return err
	}
	if !ok || len(lasts) != n {
		s.fastRefused.Add(1)
		return errFastRefused
	}
	pos := head
	for i, r := range group {
		pos += int64(len(r.evs))
		replies[i].res = events.AppendResult{NextRevision: uint64(lasts[i] + int64(len(r.evs))), Position: uint64(pos)}
	}
	return nil
}
