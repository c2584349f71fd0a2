package files

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/tool"
)

type rig struct {
	t     *testing.T
	wd    string
	ctx   context.Context
	tools map[string]tool.Tool
}

func newRig(t *testing.T) *rig {
	wd := t.TempDir()
	env := &tool.Env{WorkingDir: wd, Values: tool.NewSessionValues()}
	r := &rig{t: t, wd: wd, ctx: tool.WithEnv(context.Background(), env), tools: map[string]tool.Tool{}}
	for _, tool := range Tools(Roots{}) {
		r.tools[tool.Spec().Name] = tool
	}
	return r
}

func (r *rig) call(name string, args map[string]any) (string, error) {
	b, _ := json.Marshal(args)
	return r.tools[name].Run(r.ctx, b)
}

func (r *rig) must(name string, args map[string]any) string {
	r.t.Helper()
	out, err := r.call(name, args)
	if err != nil {
		r.t.Fatalf("%s %v: %v", name, args, err)
	}
	return out
}

func (r *rig) wantErr(name string, args map[string]any, substr string) {
	r.t.Helper()
	out, err := r.call(name, args)
	if err == nil || !strings.Contains(err.Error(), substr) {
		r.t.Fatalf("%s %v: got %q, %v; want error with %q", name, args, out, err, substr)
	}
}

func (r *rig) file(name string) string {
	data, err := os.ReadFile(filepath.Join(r.wd, name))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(data)
}

func TestReadAndWrite(t *testing.T) {
	r := newRig(t)
	r.must("write_file", map[string]any{"path": "dir/notes.txt", "content": "one\ntwo\nthree\nfour\n"})
	if r.file("dir/notes.txt") != "one\ntwo\nthree\nfour\n" {
		t.Fatal("content not written")
	}
	out := r.must("read_file", map[string]any{"path": "dir/notes.txt", "offset": 2, "limit": 2})
	if out != "     2|two\n     3|three\n[1 more lines: read on with offset=4]\n" {
		t.Fatalf("range read %q", out)
	}
	os.WriteFile(filepath.Join(r.wd, "blob.bin"), []byte{0x7f, 'E', 'L', 'F', 0, 1, 2}, 0o644)
	r.wantErr("read_file", map[string]any{"path": "blob.bin"}, "looks binary")
	r.wantErr("read_file", map[string]any{"path": "dir"}, "is a directory")
	r.wantErr("read_file", map[string]any{"path": "missing.txt"}, "no such file")
	r.wantErr("read_file", map[string]any{"path": "dir/notes.txt", "offset": 99}, "past the end")
	r.wantErr("write_file", map[string]any{"path": "x.txt"}, "content is required")
	big := strings.Repeat(strings.Repeat("x", 100)+"\n", 3000)
	r.must("write_file", map[string]any{"path": "big.txt", "content": big})
	if out := r.must("read_file", map[string]any{"path": "big.txt"}); !strings.Contains(out, "[output cut at line") || len(out) > maxOutputChars+500 {
		t.Fatalf("big read not capped: %d chars", len(out))
	}
}

func TestEscapesAreRefused(t *testing.T) {
	r := newRig(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("top secret"), 0o600)
	r.wantErr("read_file", map[string]any{"path": "../" + filepath.Base(outside) + "/secret.txt"}, "outside the allowed roots")
	r.wantErr("read_file", map[string]any{"path": filepath.Join(outside, "secret.txt")}, "outside the allowed roots")
	r.wantErr("read_file", map[string]any{"path": "/etc/passwd"}, "outside the allowed roots")
	os.Symlink(outside, filepath.Join(r.wd, "link"))
	r.wantErr("read_file", map[string]any{"path": "link/secret.txt"}, "through a symlink")
	r.wantErr("write_file", map[string]any{"path": "link/new.txt", "content": "x"}, "through a symlink")
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Fatal("a write escaped through the symlink")
	}
	r.wantErr("search_files", map[string]any{"pattern": "secret", "path": "link"}, "outside the allowed roots")
	// A symlink that stays inside is fine.
	os.WriteFile(filepath.Join(r.wd, "real.txt"), []byte("inside"), 0o644)
	os.Symlink(filepath.Join(r.wd, "real.txt"), filepath.Join(r.wd, "alias.txt"))
	if out := r.must("read_file", map[string]any{"path": "alias.txt"}); !strings.Contains(out, "inside") {
		t.Fatal(out)
	}
}

func TestPatchReplace(t *testing.T) {
	r := newRig(t)
	r.must("write_file", map[string]any{"path": "main.go", "content": "package main\n\nfunc main() {\n\tprintln(\"hi\")\n\tprintln(\"hi\")\n}\n"})
	r.wantErr("patch", map[string]any{"path": "main.go", "old_string": "println(\"hi\")", "new_string": "x"}, "matches 2 places")
	r.must("patch", map[string]any{"path": "main.go", "old_string": "println(\"hi\")", "new_string": "println(\"yo\")", "replace_all": true})
	if !strings.Contains(r.file("main.go"), "\tprintln(\"yo\")\n\tprintln(\"yo\")") {
		t.Fatal(r.file("main.go"))
	}
	// Whitespace-tolerant: spaces where the file has a tab.
	r.must("patch", map[string]any{"path": "main.go", "old_string": "func main() {\n    println(\"yo\")\n    println(\"yo\")\n}", "new_string": "func main() {}"})
	if r.file("main.go") != "package main\n\nfunc main() {}\n" {
		t.Fatalf("%q", r.file("main.go"))
	}
	r.wantErr("patch", map[string]any{"path": "main.go", "old_string": "nothing like this", "new_string": "x"}, "was not found")
}

func TestPatchRefusesFileChangedUnderneath(t *testing.T) {
	r := newRig(t)
	r.must("write_file", map[string]any{"path": "a.txt", "content": "alpha\nbeta\n"})
	r.must("read_file", map[string]any{"path": "a.txt"})
	os.WriteFile(filepath.Join(r.wd, "a.txt"), []byte("alpha\nbeta\ngamma (added by a person)\n"), 0o644)
	r.wantErr("patch", map[string]any{"path": "a.txt", "old_string": "beta", "new_string": "BETA"}, "changed by someone else")
	r.wantErr("write_file", map[string]any{"path": "a.txt", "content": "clobber"}, "changed by someone else")
	if !strings.Contains(r.file("a.txt"), "gamma") {
		t.Fatal("the other change was clobbered")
	}
	r.must("read_file", map[string]any{"path": "a.txt"})
	r.must("patch", map[string]any{"path": "a.txt", "old_string": "beta", "new_string": "BETA"})
}

func TestPatchUnifiedDiff(t *testing.T) {
	r := newRig(t)
	r.must("write_file", map[string]any{"path": "f.txt", "content": "1\n2\n3\n4\n5\n6\n7\n8\n"})
	r.must("write_file", map[string]any{"path": "g.txt", "content": "a\nb\nc\n"})
	diff := "--- a/f.txt\n+++ b/f.txt\n@@ -2,3 +2,3 @@\n 2\n-3\n+three\n 4\n@@ -6,2 +6,3 @@\n 6\n+6.5\n 7\n--- a/g.txt\n+++ b/g.txt\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n"
	if out := r.must("patch", map[string]any{"mode": "patch", "patch": diff}); out != "applied patch to 2 file(s)" {
		t.Fatal(out)
	}
	if r.file("f.txt") != "1\n2\nthree\n4\n5\n6\n6.5\n7\n8\n" || r.file("g.txt") != "A\nb\nc\n" {
		t.Fatalf("%q %q", r.file("f.txt"), r.file("g.txt"))
	}
	bad := "--- a/g.txt\n+++ b/g.txt\n@@ -1,2 +1,2 @@\n-zzz\n+y\n b\n"
	r.wantErr("patch", map[string]any{"mode": "patch", "patch": bad}, "does not match")
	r.wantErr("patch", map[string]any{"mode": "patch", "patch": "not a diff"}, "holds no file")
	paths := patchTool{}.Flags().WritesPaths(json.RawMessage(`{"patch":` + strings.ReplaceAll(jsonString(diff), "", "") + `}`))
	if strings.Join(paths, ",") != "f.txt,g.txt" {
		t.Fatalf("paths of a diff %v", paths)
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestSearch(t *testing.T) {
	r := newRig(t)
	r.must("write_file", map[string]any{"path": "a/x.go", "content": "package a\nfunc Hello() {}\n"})
	r.must("write_file", map[string]any{"path": "b/y.go", "content": "package b\nfunc hello() {}\n"})
	r.must("write_file", map[string]any{"path": "b/notes.md", "content": "say Hello\n"})
	os.MkdirAll(filepath.Join(r.wd, ".git"), 0o755)
	os.WriteFile(filepath.Join(r.wd, ".git", "Hello"), []byte("Hello"), 0o644)
	out := r.must("search_files", map[string]any{"pattern": "func [Hh]ello", "file_glob": "*.go"})
	if !strings.Contains(out, "a/x.go:2:func Hello() {}") || !strings.Contains(out, "b/y.go:2:func hello() {}") || strings.Contains(out, "notes") {
		t.Fatalf("content search %q", out)
	}
	if out := r.must("search_files", map[string]any{"pattern": "*.go", "target": "files"}); out != "a/x.go\nb/y.go" {
		t.Fatalf("file search %q", out)
	}
	if out := r.must("search_files", map[string]any{"pattern": "Hello", "limit": 1}); !strings.Contains(out, "results cut at 1") {
		t.Fatalf("limit %q", out)
	}
	if out := r.must("search_files", map[string]any{"pattern": "nothing-here"}); out != "no matches" {
		t.Fatal(out)
	}
	r.wantErr("search_files", map[string]any{"pattern": "("}, "not a valid regular expression")
}

// A directory that resolve saw swapped for a link to Hermes' home before
// the write (a background command racing the tool) is not followed: the
// write and the read fail, the home is untouched.
func TestSwappedLinkIsNotFollowed(t *testing.T) {
	root := t.TempDir()
	home, ws := filepath.Join(root, "home"), filepath.Join(root, "ws")
	os.MkdirAll(home, 0o700)
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: m\n"), 0o600)
	target := filepath.Join(ws, "sub", "config.yaml")
	// What resolve checked: ws/sub/config.yaml, a real path. Then the swap.
	if err := os.Remove(filepath.Join(ws, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(home, filepath.Join(ws, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomic(target, []byte("command_allowlist: [x]\n")); !errors.Is(err, errMoved) {
		t.Fatalf("write through the swapped link: %v", err)
	}
	if f, err := openReal(target); !errors.Is(err, errMoved) {
		if f != nil {
			f.Close()
		}
		t.Fatalf("read through the swapped link: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "config.yaml")); string(b) != "model: m\n" {
		t.Fatalf("the home's config changed: %q", b)
	}
	// The last component swapped for a link: the rename replaces the
	// link, never its target.
	os.Remove(filepath.Join(ws, "sub"))
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	os.Symlink(filepath.Join(home, "config.yaml"), target)
	if err := writeAtomic(target, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "config.yaml")); string(b) != "model: m\n" {
		t.Fatalf("the home's config changed through the last component: %q", b)
	}
	if fi, _ := os.Lstat(target); fi.Mode()&os.ModeSymlink != 0 {
		t.Fatal("the link is still there")
	}
}
