package embedded

import (
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/hermes-go/hermes/events"
)

// The record_crc column of a row is a CRC-32C. Rows written since format 2
// hold the checksum of the whole record (recordSum); rows written before it
// held the checksum of the payload alone (payloadSum), in a column then
// called crc: the upgrade renames it, so that a Hermes from before format 2
// fails on an upgraded file ("no such column: crc") instead of writing rows
// that would read as damage, or reading checksums it cannot check. Opening an older database
// with a writer converts the rows whose payload checksum still holds, once
// (see migrate); until then, and for rows that failed that check, a row at a
// position not above the meta key legacy_head may still carry the old kind.
// No row above legacy_head may.

// recordFormat is the first byte hashed by recordSum: a later format can
// never be mistaken for this one.
const recordFormat = 2

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// payloadSum is the checksum rows of format 1 carry: the payload alone.
func payloadSum(b []byte) int64 { return int64(crc32.Checksum(b, castagnoli)) }

// rec is a row of the events table as stored.
type rec struct {
	pos, rev, version, ns             int64
	stream, id, typ, sid, turn, cause string
	payload                           []byte
	crc                               int64

	// class has a bit set for each column read back in another storage
	// class than it is written in (TEXT as BLOB, or the payload as TEXT):
	// the same bytes, but SQLite no longer compares them as written, so
	// the row was changed. Only rows of format 1 may hold a TEXT payload
	// (the tombstones of that format did).
	class uint8
	dest  []any // scan destinations into this rec, made once
}

// payloadText is the bit of class for a payload stored as TEXT.
const payloadText = 1 << 7

// textCol scans a column written as TEXT.
type textCol struct {
	dst   *string
	class *uint8
	bit   uint8
}

func (c textCol) Scan(src any) error {
	switch v := src.(type) {
	case string:
		*c.dst = v
	case []byte:
		*c.dst = string(v)
		*c.class |= c.bit
	default:
		return fmt.Errorf("holds %T, not text", src)
	}
	return nil
}

// blobCol scans the payload, written as a BLOB.
type blobCol struct{ r *rec }

func (c blobCol) Scan(src any) error {
	switch v := src.(type) {
	case []byte:
		c.r.payload = append([]byte(nil), v...)
	case string:
		c.r.payload = []byte(v)
		c.r.class |= payloadText
	default:
		return fmt.Errorf("holds %T, not a payload", src)
	}
	return nil
}

// destinations returns the scan destinations of the columns, in order.
func (r *rec) destinations() []any {
	if r.dest == nil {
		text := func(dst *string, bit uint8) textCol { return textCol{dst, &r.class, bit} }
		r.dest = []any{&r.pos, text(&r.stream, 1), &r.rev, text(&r.id, 2), text(&r.typ, 4), &r.version,
			text(&r.sid, 8), &r.ns, text(&r.turn, 16), text(&r.cause, 32), blobCol{r}, &r.crc}
	}
	return r.dest
}

// recordSum is the checksum of a whole record: every column of the row,
// the position included, each with its length before it so that no byte
// can move from one column to the next unnoticed. A flipped byte anywhere
// in a row (its session, its stream, its place in the log) is reported,
// never read back as different data.
func recordSum(r *rec) int64 {
	var s summer
	return s.sum(r)
}

// summer computes record checksums in a buffer it keeps: the bytes handed
// to the CRC escape, so a buffer of its own saves an allocation per row.
// One per goroutine.
type summer struct{ buf []byte }

func (s *summer) sum(r *rec) int64 {
	b := append(s.buf[:0], recordFormat)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.pos))
	b = appendString(b, r.stream)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.rev))
	b = appendString(b, r.id)
	b = appendString(b, r.typ)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.version))
	b = appendString(b, r.sid)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.ns))
	b = appendString(b, r.turn)
	b = appendString(b, r.cause)
	b = binary.AppendUvarint(b, uint64(len(r.payload)))
	s.buf = b
	c := crc32.Update(0, castagnoli, b)
	return int64(crc32.Update(c, castagnoli, r.payload))
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// check reports why r's checksum does not hold, or nil. legacyHead is the
// highest position that may still hold a payload-only checksum.
func (r *rec) check(legacyHead int64, s *summer) error {
	if s.sum(r) != r.crc && (r.pos > legacyHead || payloadSum(r.payload) != r.crc) {
		return errChecksum
	}
	if r.class != 0 && (r.class != payloadText || r.pos > legacyHead) {
		return errClass
	}
	return nil
}

var errClass = errors.New("a column's storage class changed (text read back as a blob, or the other way): the row was changed after it was written")

var errChecksum = errors.New("record checksum mismatch: the row was changed after it was written")

// errMissing reports a position the log must hold but does not.
var errMissing = errors.New("missing from the log: it is neither stored nor recorded as erased")

func (r *rec) recorded() events.Recorded {
	var out events.Recorded
	out.Position = uint64(r.pos)
	out.Stream = r.stream
	out.Revision = uint64(r.rev)
	out.ID = r.id
	out.Type = r.typ
	out.Version = int(r.version)
	out.SessionID = r.sid
	out.Time = time.Unix(0, r.ns).UTC()
	out.TurnID = r.turn
	out.CausationID = r.cause
	out.Payload = r.payload
	return out
}

const columns = `position, stream, revision, id, type, version, session_id, time_ns, turn_id, causation_id, payload, record_crc`

// columnsV1 are the same columns in a file of format 1, which only a
// read-only open reads without upgrading it.
const columnsV1 = `position, stream, revision, id, type, version, session_id, time_ns, turn_id, causation_id, payload, crc`

// insertColumns leave the position to AUTOINCREMENT (see txWriter.apply).
const insertColumns = `stream, revision, id, type, version, session_id, time_ns, turn_id, causation_id, payload, record_crc`

// scan reads the current row. A row whose columns do not even have the
// types they were written with is damaged too: it is reported with the
// position when that much can be read.
func scan(rows *sql.Rows, r *rec) error {
	r.class = 0
	err := rows.Scan(r.destinations()...)
	if err == nil {
		return nil
	}
	var pos, stream, rev any
	rest := make([]any, 9)
	dest := []any{&pos, &stream, &rev}
	for i := range rest {
		dest = append(dest, &rest[i])
	}
	if rows.Scan(dest...) != nil {
		return err
	}
	ce := &events.CorruptEventError{Err: fmt.Errorf("a column has the wrong type: %w", err)}
	if p, ok := pos.(int64); ok {
		ce.Position = uint64(p)
	}
	if s, ok := stream.(string); ok {
		ce.Stream = s
	}
	if v, ok := rev.(int64); ok {
		ce.Revision = uint64(v)
	}
	return ce
}
