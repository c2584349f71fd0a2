package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/events/embedded"
)

// TestSearchRebuildsADamagedIndex: `hermes search --rebuild` over an index
// whose segment files were damaged on disk panicked in Bleve; it replaces
// the index, says so, and finds every session again.
func TestSearchRebuildsADamagedIndex(t *testing.T) {
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, "00000000-0000-4000-8000-000000000001", 2)
	seed(t, s, "00000000-0000-4000-8000-000000000002", 1)
	s.Close()
	mustRun(t, home, "search", "hello")
	zaps, _ := filepath.Glob(filepath.Join(home, "search.bleve", "store", "*.zap"))
	if len(zaps) == 0 {
		t.Fatal("the search made no segment files")
	}
	for _, z := range zaps {
		b, _ := os.ReadFile(z)
		// the segment's footer: ... sections index offset (8), chunk
		// mode (4), version (4), crc (4): point it past the end
		for i := len(b) - 20; i < len(b)-12; i++ {
			b[i] = 0x7f
		}
		os.WriteFile(z, b, 0o600)
	}
	out, errOut, err := run(t, home, "search", "hello", "--rebuild", "--json")
	if err != nil || strings.Contains(errOut, "panic") {
		t.Fatalf("search --rebuild of a damaged index: %v\n%s", err, errOut)
	}
	var res searchOut
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Hits) != 2 {
		t.Fatalf("after the rebuild: %v %s", err, out)
	}
	if !strings.Contains(errOut, "search index replaced") || !strings.Contains(errOut, "damaged") {
		t.Fatalf("the replacement is not said:\n%s", errOut)
	}
	if out := mustRun(t, home, "search", "hello", "--json"); !strings.Contains(out, "000000000002") {
		t.Fatalf("the next search: %s", out)
	}
}
