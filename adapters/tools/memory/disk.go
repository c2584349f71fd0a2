package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// How the files and the events stay one memory. The Python Hermes Agent
// keeps the same two files in the same place ($HERMES_HOME/memories, entries
// separated by a line holding §) and edits them in place; people edit them
// by hand. So a file on disk is one of two things:
//
//   - ours: it holds the entries of the stream's latest change, or bytes
//     this build wrote itself (their SHA-256 is in the file's record,
//     .MEMORY.md.written, kept beside it). Such a file is a projection and
//     is rewritten from the events;
//   - foreign: anything else (written by the Python agent, an editor, a
//     shell). It is adopted, never overwritten: its entries become the
//     stream's state, one MemoryUpdated per entry added or removed, with
//     Source AdoptedFromDisk, the first time this build sees it.
//
// A write records the new bytes' hash before it replaces the file and
// forgets the old ones after, so a file killed halfway through a write is
// still known as ours. Every look at a file and every write to it holds
// the file's lock, MEMORY.md.lock: a flock(2) on the file the Python
// agent's memory tool locks around its own read-change-write, so the two
// programs' changes never interleave (both replace the file by a rename,
// so a reader never sees half a file).

// AdoptedFromDisk is the Source of the MemoryUpdated events that take a
// file's entries into the stream.
const AdoptedFromDisk = "adopted from disk"

// MalformedError is a memory file that cannot be adopted without losing
// some of it (it is not UTF-8 text); the file is left as it is.
type MalformedError struct {
	Path   string
	Reason string
}

// Error names the file and says what to do.
func (e *MalformedError) Error() string {
	return fmt.Sprintf("%s %s: fix or move the file; hermes leaves it as it is and changes nothing in it until then", e.Path, e.Reason)
}

// Parse splits a memory file into its entries as the Python agent reads it:
// split on the separator line, each entry trimmed, empty ones dropped.
func Parse(text string) []string {
	var out []string
	for _, e := range strings.Split(text, Separator) {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// render is the text of a file holding entries.
func render(entries []string) string {
	text := strings.Join(entries, Separator)
	if text != "" {
		text += "\n"
	}
	return text
}

func digest(text string) string {
	h := sha256.Sum256([]byte(text))
	return hex.EncodeToString(h[:])
}

// disk is one target's file in a memories directory.
type disk struct {
	dir, target string
}

func (d disk) path() string   { return filepath.Join(d.dir, Files[d.target]) }
func (d disk) record() string { return filepath.Join(d.dir, "."+Files[d.target]+".written") }

// read returns the file's text; exists is false when there is no file.
func (d disk) read() (text string, exists bool, err error) {
	b, err := os.ReadFile(d.path())
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", true, fmt.Errorf("read %s: %w", d.path(), err)
	}
	if !utf8.Valid(b) {
		return "", true, &MalformedError{Path: d.path(), Reason: "is not UTF-8 text"}
	}
	return string(b), true, nil
}

// written is the set of hashes of the bytes this build wrote last.
func (d disk) written() map[string]bool {
	b, _ := os.ReadFile(d.record())
	out := map[string]bool{}
	for _, l := range strings.Fields(string(b)) {
		out[l] = true
	}
	return out
}

func (d disk) setWritten(hashes ...string) error {
	slices.Sort(hashes)
	return replace(d.dir, d.record(), strings.Join(slices.Compact(hashes), "\n")+"\n", 0o600)
}

// ours says whether text (the file's) is a projection of the stream whose
// latest entries are current.
func (d disk) ours(text string, current []string) bool {
	return slices.Equal(Parse(text), current) || d.written()[digest(text)]
}

// claim records text as ours when it holds entries (the stream's) but is
// not in the record: bytes the Python agent wrote for the same entries.
func (d disk) claim(text string) error {
	w := d.written()
	if w[digest(text)] {
		return nil
	}
	hashes := []string{digest(text)}
	for h := range w {
		hashes = append(hashes, h)
	}
	return d.setWritten(hashes...)
}

// write replaces the file (old, ours, exists) with entries, unless it holds
// them already: re-applying the events it was written from costs a read.
func (d disk) write(old string, exists bool, entries []string) error {
	if exists && slices.Equal(Parse(old), entries) {
		return d.claim(old)
	}
	text := render(entries)
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return err
	}
	hashes := []string{digest(text)}
	if exists {
		hashes = append(hashes, digest(old))
	}
	for h := range d.written() {
		hashes = append(hashes, h)
	}
	if err := d.setWritten(hashes...); err != nil {
		return err
	}
	if err := replace(d.dir, d.path(), text, 0o600); err != nil {
		return err
	}
	return d.setWritten(digest(text))
}

// remove deletes the file if it is ours (its bytes are in the record):
// a file this build did not write is never deleted.
func (d disk) remove() error {
	text, exists, err := d.read()
	if !exists || err != nil {
		return nil // what cannot be read cannot be known as ours: it stays
	}
	if !d.written()[digest(text)] {
		return nil
	}
	if err := os.Remove(d.path()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", Files[d.target], err)
	}
	if err := os.Remove(d.record()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// replace writes text to path atomically, through a temporary file of its
// own (several processes may write).
func replace(dir, path, text string, mode os.FileMode) error {
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(text)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// WriteFile writes target's file in dir from its entries, as the
// projection does: under the file's lock, and only over a file that is
// ours (see the comment at the top of disk.go) or none; a foreign file is
// left as it is and the error says so.
func WriteFile(dir, target string, entries []string) error {
	if _, ok := Files[target]; !ok {
		return fmt.Errorf("no memory file for target %q", target)
	}
	d := disk{dir, target}
	unlock, err := lockFile(d)
	if err != nil {
		return err
	}
	defer unlock()
	text, exists, err := d.read()
	if err != nil {
		return err
	}
	if exists && !d.ours(text, entries) {
		return fmt.Errorf("%s was changed outside hermes: left as it is, to be adopted the next time hermes starts", d.path())
	}
	return d.write(text, exists, entries)
}

// Adopt takes what the memory files in dir hold and the stream does not
// into the stream (see the comment at the top of disk.go), and returns how
// many entries were added or removed. A file that cannot be read or is
// malformed is left as it is, and named in the error; the other is still
// adopted.
func Adopt(ctx context.Context, store events.Store, dir string) (int, error) {
	total := 0
	var errs []error
	for _, target := range []string{"memory", "user"} {
		d := disk{dir, target}
		if _, err := os.Lstat(d.path()); errors.Is(err, os.ErrNotExist) {
			continue
		}
		n, err := func() (int, error) {
			unlock, err := lockFile(d)
			if err != nil {
				return 0, err
			}
			defer unlock()
			return adopt(ctx, store, d)
		}()
		total += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

// adopt adopts one file; the caller holds its lock.
func adopt(ctx context.Context, store events.Store, d disk) (int, error) {
	for attempt := 0; attempt < 20; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt*attempt) * time.Millisecond)
		}
		text, exists, err := d.read()
		if err != nil || !exists {
			return 0, err
		}
		current, expected, err := Current(ctx, store, d.target)
		if err != nil {
			return 0, err
		}
		if d.ours(text, current) {
			return 0, nil
		}
		changes := Changes(d.target, current, Parse(text))
		evs := make([]schema.Envelope, 0, len(changes))
		for _, c := range changes {
			ev, err := schema.NewEnvelope(schema.Meta{}, c)
			if err != nil {
				return 0, err
			}
			evs = append(evs, ev)
		}
		_, err = store.Append(ctx, Stream, expected, evs...)
		var wev *events.WrongExpectedVersionError
		if errors.As(err, &wev) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("adopt %s: %w", d.path(), err)
		}
		// The file now holds the stream's latest entries: ours for every
		// check against them, not yet for a projection writing an older
		// state (it is not claimed).
		return len(changes), nil
	}
	return 0, errors.New("memory is being changed by other sessions right now; try again")
}

// Changes are the MemoryUpdated events, Source AdoptedFromDisk, that take
// target from the entries from to the entries to: one remove per entry of
// from that to lacks, then one add per entry of to that from lacks (an
// entry held twice counts twice); the last event's Entries are to exactly
// (entries merely reordered are one event, action "adopt").
func Changes(target string, from, to []string) []schema.MemoryUpdated {
	want := map[string]int{}
	for _, e := range to {
		want[e]++
	}
	var out []schema.MemoryUpdated
	state := slices.Clone(from)
	kept := map[string]int{}
	for i := 0; i < len(state); {
		if e := state[i]; kept[e] < want[e] {
			kept[e]++
			i++
			continue
		}
		e := state[i]
		state = slices.Delete(state, i, i+1)
		out = append(out, schema.MemoryUpdated{Target: target, Action: "remove", Entry: e, Entries: slices.Clone(state), Source: AdoptedFromDisk})
	}
	// The first kept[e] entries e of to are the kept ones; the others are
	// added, in to's order, each event holding to without those still to
	// come.
	added := make([]bool, len(to))
	var adds []int
	for i, e := range to {
		if kept[e] > 0 {
			kept[e]--
			continue
		}
		added[i] = true
		adds = append(adds, i)
	}
	for n, i := range adds {
		var entries []string
		for j, e := range to {
			if !added[j] || !slices.Contains(adds[n+1:], j) {
				entries = append(entries, e)
			}
		}
		out = append(out, schema.MemoryUpdated{Target: target, Action: "add", Entry: to[i], Entries: entries, Source: AdoptedFromDisk})
	}
	if (len(out) == 0 && !slices.Equal(from, to)) || (len(out) > 0 && !slices.Equal(out[len(out)-1].Entries, to)) {
		out = append(out, schema.MemoryUpdated{Target: target, Action: "adopt", Entries: slices.Clone(to), Source: AdoptedFromDisk})
	}
	return out
}

// Import adds to target's memory in dir the entries of another home's
// file (text, in the file format) that it does not hold yet, each a
// MemoryUpdated "add" event with Source source, and writes the file; it
// removes nothing and returns how many entries it added. The file in dir
// is adopted first, as for any change. The limits of the files are not
// applied: nothing imported is dropped; the memory tool refuses to add
// more until entries are removed.
func Import(ctx context.Context, store events.Store, dir, target, text, source string) (int, error) {
	if _, ok := Files[target]; !ok {
		return 0, fmt.Errorf("no memory file for target %q", target)
	}
	if !utf8.ValidString(text) {
		return 0, &MalformedError{Path: source, Reason: "is not UTF-8 text"}
	}
	d := disk{dir, target}
	unlock, err := lockFile(d)
	if err != nil {
		return 0, err
	}
	defer unlock()
	if _, err := adopt(ctx, store, d); err != nil {
		return 0, err
	}
	for attempt := 0; attempt < 20; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt*attempt) * time.Millisecond)
		}
		current, expected, err := Current(ctx, store, target)
		if err != nil {
			return 0, err
		}
		state := slices.Clone(current)
		var evs []schema.Envelope
		for _, e := range Parse(text) {
			if slices.Contains(state, e) {
				continue
			}
			state = append(state, e)
			ev, err := schema.NewEnvelope(schema.Meta{}, schema.MemoryUpdated{Target: target, Action: "add", Entry: e, Entries: slices.Clone(state), Source: source})
			if err != nil {
				return 0, err
			}
			evs = append(evs, ev)
		}
		if len(evs) == 0 {
			return 0, nil
		}
		_, err = store.Append(ctx, Stream, expected, evs...)
		var wev *events.WrongExpectedVersionError
		if errors.As(err, &wev) {
			continue
		}
		if err != nil {
			return 0, err
		}
		old, exists, err := d.read()
		if err != nil {
			return len(evs), err
		}
		return len(evs), d.write(old, exists, state)
	}
	return 0, errors.New("memory is being changed by other sessions right now; try again")
}
