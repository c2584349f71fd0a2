package memory

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// pythonMemory is MEMORY.md as the Python agent writes it: entries joined
// by the separator line, no newline at the end.
const pythonMemory = "Project uses uv, not pip\n§\nDeploys go through\nthe staging box first"

func TestChanges(t *testing.T) {
	for _, c := range []struct {
		name     string
		from, to []string
		want     []string // action:entry
	}{
		{"first sight", nil, []string{"a", "b"}, []string{"add:a", "add:b"}},
		{"appended", []string{"a"}, []string{"a", "b"}, []string{"add:b"}},
		{"removed", []string{"a", "b", "c"}, []string{"a", "c"}, []string{"remove:b"}},
		{"edited", []string{"a", "b"}, []string{"a", "B", "c"}, []string{"remove:b", "add:B", "add:c"}},
		{"inserted", []string{"a", "c"}, []string{"a", "b", "c"}, []string{"add:b"}},
		{"reordered", []string{"a", "b"}, []string{"b", "a"}, []string{"adopt:"}},
		{"removed and reordered", []string{"a", "b", "c"}, []string{"c", "a"}, []string{"remove:b", "adopt:"}},
		{"twice", []string{"a"}, []string{"a", "a"}, []string{"add:a"}},
		{"emptied", []string{"a"}, nil, []string{"remove:a"}},
		{"same", []string{"a"}, []string{"a"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch := Changes("memory", c.from, c.to)
			var got []string
			for _, u := range ch {
				got = append(got, u.Action+":"+u.Entry)
				if u.Source != AdoptedFromDisk || u.Target != "memory" {
					t.Fatalf("change %+v", u)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("changes %v, want %v", got, c.want)
			}
			if len(ch) > 0 && !slices.Equal(ch[len(ch)-1].Entries, c.to) {
				t.Fatalf("last state %q, want %q", ch[len(ch)-1].Entries, c.to)
			}
		})
	}
}

func writePython(t *testing.T, dir, name, text string) string {
	t.Helper()
	os.MkdirAll(dir, 0o700)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func history(t *testing.T, s events.Store) []schema.MemoryUpdated {
	rs, err := s.ReadStream(context.Background(), Stream, events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []schema.MemoryUpdated
	for _, r := range rs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.(schema.MemoryUpdated))
	}
	return out
}

// TestAddKeepsEntriesWrittenByPython: the first add over a MEMORY.md the
// Python agent wrote keeps its two entries (they are adopted as events
// first), and USER.md, not touched, stays byte for byte.
func TestAddKeepsEntriesWrittenByPython(t *testing.T) {
	tool, ctx, store := setup(t)
	writePython(t, tool.Dir, "MEMORY.md", pythonMemory)
	user := writePython(t, tool.Dir, "USER.md", "Name: Ada")
	if out, err := call(t, tool, ctx, map[string]any{"action": "add", "target": "memory", "content": "Tests need -race"}); err != nil || !strings.Contains(out, "first took in 2 change(s)") {
		t.Fatalf("%q %v", out, err)
	}
	b, _ := os.ReadFile(filepath.Join(tool.Dir, "MEMORY.md"))
	want := []string{"Project uses uv, not pip", "Deploys go through\nthe staging box first", "Tests need -race"}
	if got := Parse(string(b)); !slices.Equal(got, want) {
		t.Fatalf("MEMORY.md holds %q, want %q", got, want)
	}
	h := history(t, store)
	if len(h) != 3 || h[0].Source != AdoptedFromDisk || h[1].Source != AdoptedFromDisk || h[2].Source != "" {
		t.Fatalf("events %+v: want two adopted entries, then the add", h)
	}
	if b, _ := os.ReadFile(user); string(b) != "Name: Ada" {
		t.Fatalf("USER.md %q", b)
	}
	// A hand edit after that (an entry removed, one appended) is adopted
	// too, not written over by the next change.
	os.WriteFile(filepath.Join(tool.Dir, "MEMORY.md"), []byte("Project uses uv, not pip\n§\nTests need -race\n§\nadded by hand\n"), 0o644)
	if _, err := call(t, tool, ctx, map[string]any{"action": "add", "target": "memory", "content": "four"}); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(tool.Dir, "MEMORY.md"))
	if got := Parse(string(b)); !slices.Equal(got, []string{"Project uses uv, not pip", "Tests need -race", "added by hand", "four"}) {
		t.Fatalf("after a hand edit and an add: %q", got)
	}
}

// TestAdoptFailures: an unreadable file and one that is not UTF-8 text
// stop the change with an error naming the file, and are left as they are.
func TestAdoptFailures(t *testing.T) {
	for _, c := range []struct {
		name, want string
		prepare    func(path string)
	}{
		{"unreadable", "permission denied", func(p string) { os.Chmod(p, 0) }},
		{"not UTF-8", "is not UTF-8 text", func(p string) { os.WriteFile(p, []byte("caf\xe9\n§\nok"), 0o644) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "unreadable" && os.Geteuid() == 0 {
				t.Skip("root reads a file of mode 0")
			}
			tool, ctx, store := setup(t)
			p := writePython(t, tool.Dir, "MEMORY.md", pythonMemory)
			c.prepare(p)
			before, _ := os.ReadFile(p)
			_, err := call(t, tool, ctx, map[string]any{"action": "add", "target": "memory", "content": "new"})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %v, want %q naming %s", err, c.want, p)
			}
			os.Chmod(p, 0o644)
			if after, _ := os.ReadFile(p); string(after) != string(before) {
				t.Fatalf("the file changed: %q", after)
			}
			if h := history(t, store); len(h) != 0 {
				t.Fatalf("events appended: %+v", h)
			}
			n, err := Adopt(ctx, store, tool.Dir)
			if n != 0 || err == nil {
				t.Fatalf("Adopt: %d, %v", n, err)
			}
		})
	}
}

// TestAdoptUnreadableAsDirectory: as root a file of mode 0 is readable, so
// the failure of reading is checked with a directory in the file's place.
func TestAdoptUnreadableAsDirectory(t *testing.T) {
	tool, ctx, store := setup(t)
	os.MkdirAll(filepath.Join(tool.Dir, "USER.md"), 0o700)
	_, err := call(t, tool, ctx, map[string]any{"action": "add", "target": "user", "content": "new"})
	if err == nil || !strings.Contains(err.Error(), "USER.md") {
		t.Fatalf("error %v", err)
	}
	if h := history(t, store); len(h) != 0 {
		t.Fatalf("events appended: %+v", h)
	}
}

// TestAdoptOnce: adopting twice takes the files in once; a file equal to
// the stream's state, in the Python agent's bytes, is not rewritten.
func TestAdoptOnce(t *testing.T) {
	tool, ctx, store := setup(t)
	p := writePython(t, tool.Dir, "MEMORY.md", pythonMemory)
	if n, err := Adopt(ctx, store, tool.Dir); n != 2 || err != nil {
		t.Fatalf("first Adopt: %d %v", n, err)
	}
	if n, err := Adopt(ctx, store, tool.Dir); n != 0 || err != nil {
		t.Fatalf("second Adopt: %d %v", n, err)
	}
	if err := WriteFile(tool.Dir, "memory", Parse(pythonMemory)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != pythonMemory {
		t.Fatalf("rewritten: %q", b)
	}
}

// TestImport adds another home's entries that are missing, keeps those
// here, and refuses text that is not UTF-8 without changing anything.
func TestImport(t *testing.T) {
	tool, ctx, store := setup(t)
	writePython(t, tool.Dir, "MEMORY.md", "here\n§\nshared")
	n, err := Import(ctx, store, tool.Dir, "memory", "shared\n§\nthere", "imported from elsewhere")
	if err != nil || n != 1 {
		t.Fatalf("Import: %d %v", n, err)
	}
	b, _ := os.ReadFile(filepath.Join(tool.Dir, "MEMORY.md"))
	if got := Parse(string(b)); !slices.Equal(got, []string{"here", "shared", "there"}) {
		t.Fatalf("MEMORY.md %q", got)
	}
	if h := history(t, store); h[len(h)-1].Source != "imported from elsewhere" {
		t.Fatalf("last event %+v", h[len(h)-1])
	}
	if n, err := Import(ctx, store, tool.Dir, "memory", "bad \xff", "x"); n != 0 || err == nil || !strings.Contains(err.Error(), "not UTF-8") {
		t.Fatalf("Import of bad text: %d %v", n, err)
	}
	if b2, _ := os.ReadFile(filepath.Join(tool.Dir, "MEMORY.md")); string(b2) != string(b) {
		t.Fatalf("changed by a refused import: %q", b2)
	}
}
