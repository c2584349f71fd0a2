package session

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// Blobs is the home's blob store (events/blobs) as export and import use
// it: the bytes of the images events name.
type Blobs interface {
	Get(ctx context.Context, sum string) ([]byte, error)
	Put(ctx context.Context, data []byte) (string, error)
}

// blobLine is an export line that carries one blob's bytes rather than an
// event: written before the events, once per blob the session names.
type blobLine struct {
	Blob *exportedBlob `json:"blob"`
}

type exportedBlob struct {
	SHA256 string `json:"sha256"`
	Data   []byte `json:"data"` // base64 in the file, never in an event
}

// Export writes session id's events as JSON lines, one envelope a line,
// after a line for each image blob the events name (read from bs; nil
// writes none, and then the export names images it does not carry).
func Export(ctx context.Context, store events.Store, id string, w io.Writer, bs Blobs) (int, error) {
	rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
	if err != nil {
		return 0, err
	}
	if len(rs) == 0 {
		return 0, fmt.Errorf("no session %s", id)
	}
	enc := json.NewEncoder(w)
	if bs != nil {
		ps := make([]schema.Payload, 0, len(rs))
		for _, r := range rs {
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				return 0, &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
			}
			ps = append(ps, p)
		}
		for _, ref := range imageRefs(ps) {
			data, err := bs.Get(ctx, ref.SHA256)
			if err != nil {
				return 0, fmt.Errorf("export image %s: %w", ref.SHA256, err)
			}
			if err := enc.Encode(blobLine{Blob: &exportedBlob{SHA256: ref.SHA256, Data: data}}); err != nil {
				return 0, err
			}
		}
	}
	for _, r := range rs {
		if err := enc.Encode(r.Envelope); err != nil {
			return 0, err
		}
	}
	return len(rs), nil
}

// imageRefs lists the images the payloads name, each once, in order.
func imageRefs(ps []schema.Payload) []schema.ImageRef {
	seen := map[string]bool{}
	var out []schema.ImageRef
	add := func(refs []schema.ImageRef) {
		for _, r := range refs {
			if !seen[r.SHA256] {
				seen[r.SHA256] = true
				out = append(out, r)
			}
		}
	}
	for _, p := range ps {
		add(schema.ImagesOf(p))
	}
	return out
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Import appends exported events as a session: under their own id, or
// under newID (events get new ids, causation links follow). Every line is
// checked before anything is written; a bad line fails the whole import
// with its line number, and nothing is written. The image blobs the export
// carries are checked against their hashes and stored in bs before the
// events are appended; an event naming an image neither the file nor bs
// holds fails the import.
func Import(ctx context.Context, store events.Store, r io.Reader, newID string, bs Blobs) (string, int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var envs []schema.Envelope
	var ps []schema.Payload
	carried := map[string][]byte{}
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		if bytes.HasPrefix(sc.Bytes(), []byte(`{"blob":`)) {
			var b blobLine
			if err := json.Unmarshal(sc.Bytes(), &b); err != nil || b.Blob == nil {
				return "", 0, fmt.Errorf("line %d: not a blob: %v", line, err)
			}
			if sha256Hex(b.Blob.Data) != b.Blob.SHA256 {
				return "", 0, fmt.Errorf("line %d: blob %s is damaged: its bytes do not hash to its name", line, b.Blob.SHA256)
			}
			carried[b.Blob.SHA256] = b.Blob.Data
			continue
		}
		var e schema.Envelope
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return "", 0, fmt.Errorf("line %d: not an event: %v", line, err)
		}
		p, err := schema.Decode(e)
		if err != nil {
			return "", 0, fmt.Errorf("line %d: %v", line, err)
		}
		ps = append(ps, p)
		if len(envs) > 0 && e.SessionID != envs[0].SessionID {
			return "", 0, fmt.Errorf("line %d: event of session %s in an export of %s", line, e.SessionID, envs[0].SessionID)
		}
		envs = append(envs, e)
	}
	if err := sc.Err(); err != nil {
		return "", 0, fmt.Errorf("line %d: %w", line+1, err)
	}
	if len(envs) == 0 {
		return "", 0, errors.New("the file holds no events")
	}
	if envs[0].Type != schema.TypeSessionStarted {
		return "", 0, fmt.Errorf("line 1: a session starts with SessionStarted, not %s", envs[0].Type)
	}
	refs := imageRefs(ps)
	if len(refs) > 0 && bs == nil {
		return "", 0, errors.New("the session holds images and this import has no blob store to keep them in")
	}
	for _, ref := range refs {
		data, ok := carried[ref.SHA256]
		if !ok {
			if _, err := bs.Get(ctx, ref.SHA256); err != nil {
				return "", 0, fmt.Errorf("image %s is neither in the file nor in this home: export it again with this build", ref.SHA256)
			}
			continue
		}
		if _, err := bs.Put(ctx, data); err != nil {
			return "", 0, fmt.Errorf("store image %s: %w", ref.SHA256, err)
		}
	}
	id := envs[0].SessionID
	if newID != "" {
		ids := map[string]string{}
		for i := range envs {
			old := envs[i].ID
			envs[i].ID = uuid.NewString()
			ids[old] = envs[i].ID
			envs[i].SessionID = newID
			if c, ok := ids[envs[i].CausationID]; ok {
				envs[i].CausationID = c
			}
		}
		id = newID
	}
	if _, err := store.Append(ctx, events.SessionStream(id), events.NoStream, envs...); err != nil {
		var wev *events.WrongExpectedVersionError
		if errors.As(err, &wev) {
			return "", 0, fmt.Errorf("session %s exists already: import under a new id", id)
		}
		return "", 0, err
	}
	return id, len(envs), nil
}

// Fork starts a new session whose history is id's up to and including
// the event at revision at; the original is untouched. The lineage
// records the fork.
func Fork(ctx context.Context, store events.Store, id string, at uint64) (string, error) {
	rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, int(at)+1)
	if err != nil {
		return "", err
	}
	if len(rs) == 0 {
		return "", fmt.Errorf("no session %s", id)
	}
	if uint64(len(rs)) <= at {
		return "", fmt.Errorf("session %s has events 0 to %d; --at %d is past its end", id, len(rs)-1, at)
	}
	t := &history.Transcript{}
	var start schema.SessionStarted
	for _, r := range rs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return "", &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
		}
		if s, ok := p.(schema.SessionStarted); ok {
			start = s
		}
		t.Apply(p)
	}
	child := uuid.NewString()
	start.Reason, start.ParentSessionID, start.ParentTurnID, start.Goal = schema.StartFork, id, rs[len(rs)-1].TurnID, ""
	// Calls cut by the fork point are closed as interrupted when the
	// branch's history is sent (RepairHistory).
	start.History = t.Messages
	meta := schema.Meta{SessionID: child}
	e1, err := schema.NewEnvelope(meta, start)
	if err != nil {
		return "", err
	}
	meta.CausationID = e1.ID
	e2, err := schema.NewEnvelope(meta, schema.SystemPromptBuilt{Content: t.System})
	if err != nil {
		return "", err
	}
	if _, err := store.Append(ctx, events.SessionStream(child), events.NoStream, e1, e2); err != nil {
		return "", err
	}
	return child, nil
}

// Undone is what Undo took back.
type Undone struct {
	// Fork is the session the conversation goes on in; From is the one it
	// was forked from (before a compression, an earlier session of the
	// conversation).
	Fork, From string
	// Text is the earliest message taken back, to edit or send again.
	Text string
	// Turns is how many turns were taken back (fewer than asked when the
	// conversation holds fewer).
	Turns int
}

// ErrNothingToUndo is Undo's answer for a conversation without a message.
var ErrNothingToUndo = errors.New("nothing to undo: no message was sent in this session yet")

// Undo takes back the last n turns of the conversation session at ends:
// it forks, at the event before the n-th last user message, the session
// holding that message (found back through compressions). The original
// sessions are untouched.
func Undo(ctx context.Context, store events.Store, at string, n int) (Undone, error) {
	// Walk back through the messages, newest first, across compressions;
	// with fewer than n, take back all there are.
	var msg events.Recorded
	from, found := "", 0
	for s := at; s != "" && found < n; {
		rs, err := store.ReadStream(ctx, events.SessionStream(s), events.Forward, 0, 0)
		if err != nil {
			return Undone{}, err
		}
		parent := ""
		var users []events.Recorded
		for _, r := range rs {
			switch r.Type {
			case schema.TypeUserMessageAdded:
				users = append(users, r)
			case schema.TypeSessionStarted:
				if p, err := schema.Decode(r.Envelope); err == nil && p.(schema.SessionStarted).Reason == schema.StartCompression {
					parent = p.(schema.SessionStarted).ParentSessionID
				}
			}
		}
		for i := len(users) - 1; i >= 0 && found < n; i-- {
			msg, from = users[i], s
			found++
		}
		s = parent
	}
	if found == 0 {
		return Undone{}, ErrNothingToUndo
	}
	p, err := schema.Decode(msg.Envelope)
	if err != nil {
		return Undone{}, err
	}
	fork, err := Fork(ctx, store, from, msg.Revision-1)
	if err != nil {
		return Undone{}, err
	}
	return Undone{Fork: fork, From: from, Text: p.(schema.UserMessageAdded).Content, Turns: found}, nil
}

// Conversation calls visit for each event of the conversation session id
// ends: id and the sessions it continued, through compression or a fork
// (/undo, /retry, /branch), each up to the moment the next one started
// from it. The turns /undo took back belong to the conversation (they
// were paid for in it); what another chat added to an original after a
// /branch does not. It returns how many sessions it read.
func Conversation(ctx context.Context, store events.Store, id string, visit func(events.Recorded) error) (int, error) {
	seen := map[string]bool{}
	n := 0
	var before uint64 // where the session after this one started (0: none)
	for id != "" && !seen[id] {
		seen[id] = true
		rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
		if err != nil {
			return n, err
		}
		n++
		next, cut := "", before
		if len(rs) > 0 {
			before = rs[0].Position
		}
		for _, r := range rs {
			if cut > 0 && r.Position >= cut {
				break
			}
			if r.Type == schema.TypeSessionStarted {
				p, err := schema.Decode(r.Envelope)
				if err != nil {
					return n, err
				}
				if s := p.(schema.SessionStarted); s.Reason == schema.StartCompression || s.Reason == schema.StartFork {
					next = s.ParentSessionID
				}
			}
			if err := visit(r); err != nil {
				return n, err
			}
		}
		id = next
	}
	return n, nil
}
