package files

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// hugeSize is the size of the sparse files below: 2 GiB that cost no disk.
const hugeSize = 2 << 30

// allocBudget is what one call on a huge file may allocate: the tool's
// output and its buffers, not the file.
const allocBudget = 4 << 20

// sparse makes a file of hugeSize whose first bytes are head and the rest
// a hole (zeros).
func sparse(t *testing.T, dir, name, head string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(head); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(hugeSize); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}
	return p
}

// allocated returns how many bytes of heap fn allocated in total.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// within runs fn and fails the test when it allocated more than the budget.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	n := allocated(fn)
	t.Logf("%s allocated %.2f MiB", what, float64(n)/(1<<20))
	if n > allocBudget {
		t.Errorf("%s allocated %.1f MiB on a %d GiB file; want under %d MiB", what, float64(n)/(1<<20), hugeSize>>30, allocBudget>>20)
	}
}

// TestReadFileOfAHugeSparseFile: a 2 GiB file of zeros is refused as
// binary after its first bytes, not after loading it (an attacker's file
// took the process to 2.1 GB RSS through read_file).
func TestReadFileOfAHugeSparseFile(t *testing.T) {
	r := newRig(t)
	sparse(t, r.wd, "zeros.bin", "")
	within(t, "read_file of zeros", func() {
		r.wantErr("read_file", map[string]any{"path": "zeros.bin"}, "looks binary")
	})
}

// TestReadFileOfAHugeTextFile: a file that starts as text and goes on for
// 2 GiB gives its first lines and says how to read on, reading only what
// it shows (and a bounded look ahead).
func TestReadFileOfAHugeTextFile(t *testing.T) {
	r := newRig(t)
	sparse(t, r.wd, "huge.log", logLines(1000))
	var out string
	within(t, "read_file of a huge log", func() {
		out = r.must("read_file", map[string]any{"path": "huge.log", "limit": 100})
	})
	if !strings.HasPrefix(out, "     1|line 1 of the log\n") || !strings.Contains(out, "   100|line 100 of the log\n") || strings.Contains(out, "line 101") {
		t.Fatalf("first lines:\n%s", clipTail(out))
	}
	if !strings.Contains(out, "2.0 GiB") || !strings.Contains(out, "offset=101") {
		t.Fatalf("no word on how to read on:\n%s", clipTail(out))
	}
	within(t, "read_file of a range", func() {
		out = r.must("read_file", map[string]any{"path": "huge.log", "offset": 250, "limit": 3})
	})
	if out[:strings.Index(out, "[")] != "   250|line 250 of the log\n   251|line 251 of the log\n   252|line 252 of the log\n" || !strings.Contains(out, "offset=253") {
		t.Fatalf("range:\n%s", clipTail(out))
	}
	// The line after the text is 2 GiB of zeros: it is shown cut.
	within(t, "read_file of the endless line", func() {
		out = r.must("read_file", map[string]any{"path": "huge.log", "offset": 1001, "limit": 1})
	})
	if !strings.HasPrefix(out, "  1001|") || !strings.Contains(out, "[line cut]") || len(out) > 3000 {
		t.Fatalf("endless line: %d chars", len(out))
	}
}

// TestEditsOfAHugeFileAreRefused: patch refuses a file too large to edit
// in memory, with a word on what to do instead, without loading it.
func TestEditsOfAHugeFileAreRefused(t *testing.T) {
	r := newRig(t)
	sparse(t, r.wd, "huge.log", logLines(1000))
	within(t, "patch (replace)", func() {
		r.wantErr("patch", map[string]any{"path": "huge.log", "old_string": "line 2 of", "new_string": "LINE 2 OF"}, "too large")
	})
	within(t, "patch (diff)", func() {
		r.wantErr("patch", map[string]any{"mode": "patch", "patch": "--- a/huge.log\n+++ b/huge.log\n@@ -1,2 +1,2 @@\n line 1 of the log\n-line 2 of the log\n+LINE 2\n"}, "too large")
	})
	// write_file replaces a huge file it has read part of without loading
	// the old content.
	r.must("read_file", map[string]any{"path": "huge.log", "limit": 1})
	within(t, "write_file over it", func() {
		r.must("write_file", map[string]any{"path": "huge.log", "content": "small now\n"})
	})
	if r.file("huge.log") != "small now\n" {
		t.Fatal("not replaced")
	}
}

// TestSearchSkipsHugeFiles: search_files does not load a huge file and
// says it left it out.
func TestSearchSkipsHugeFiles(t *testing.T) {
	r := newRig(t)
	sparse(t, r.wd, "huge.log", "needle\n")
	os.WriteFile(filepath.Join(r.wd, "small.txt"), []byte("a needle here\n"), 0o644)
	var out string
	within(t, "search_files", func() {
		out = r.must("search_files", map[string]any{"pattern": "needle"})
	})
	if !strings.Contains(out, "small.txt:1:a needle here") || !strings.Contains(out, "huge.log") || !strings.Contains(out, "not searched") {
		t.Fatalf("search:\n%s", out)
	}
}

// logLines is n numbered lines of text: more than read_file's binary probe
// looks at when n is 1000.
func logLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d of the log\n", i)
	}
	return b.String()
}

func clipTail(s string) string {
	if len(s) > 600 {
		return s[:300] + "\n…\n" + s[len(s)-300:]
	}
	return s
}
