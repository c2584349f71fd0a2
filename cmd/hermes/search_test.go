package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections/search"
)

type searchOut struct {
	Total uint64 `json:"total"`
	Hits  []struct {
		Session string `json:"session"`
	} `json:"hits"`
}

// A search started while another process holds the index says it waits,
// and answers once the index is let go.
func TestSearchWaitsForBusyIndex(t *testing.T) {
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sid := "00000000-0000-4000-8000-000000000001"
	seed(t, s, sid, 2)

	held, err := search.Open(filepath.Join(home, "search.bleve")) // this process holds the lock
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--home", home, "search", "hello", "--json")
	var out strings.Builder
	cmd.Stdout = &out
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		held.Close()
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var said []string
	for sc.Scan() {
		said = append(said, sc.Text())
		if strings.Contains(sc.Text(), "waiting for the search index") {
			break
		}
	}
	held.Close()
	for sc.Scan() {
		said = append(said, sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("search: %v\n%s", err, strings.Join(said, "\n"))
	}
	if !strings.Contains(strings.Join(said, "\n"), "waiting for the search index") {
		t.Fatalf("no waiting note on stderr: %q", said)
	}
	var res searchOut
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil || res.Total != 2 || len(res.Hits) != 1 || res.Hits[0].Session != sid {
		t.Fatalf("result %q: %v", out.String(), err)
	}
}

// Several searches in separate processes at once, while sessions keep
// being written: every one answers, and each sees at least what was
// written before it started.
func TestConcurrentSearchProcesses(t *testing.T) {
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seed(t, s, "00000000-0000-4000-8000-000000000000", 1)
	stopWriter := keepSeeding(t, s, 1, 5*time.Millisecond)
	var wg sync.WaitGroup
	errs := make(chan string, 32)
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3 {
				out, errOut, err := run(t, home, "search", "hello", "--json", "--limit", "1000")
				var res searchOut
				if err == nil {
					err = json.Unmarshal([]byte(out), &res)
				}
				if err != nil || res.Total == 0 {
					errs <- fmt.Sprintf("process %d search %d: %v total %d\n%s", p, i, err, res.Total, errOut)
				}
			}
		}()
	}
	wg.Wait()
	written := 1 + stopWriter()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// and the index holds every message once: one "hello" per session
	var res searchOut
	json.Unmarshal([]byte(mustRun(t, home, "search", "hello", "--json", "--limit", "100000")), &res)
	if res.Total != uint64(written) || len(res.Hits) != written {
		t.Fatalf("%d messages in %d sessions found, %d sessions of one hello each written", res.Total, len(res.Hits), written)
	}
}

// A search process killed (SIGKILL) while it indexes leaves an index the
// next search opens as it is (not replaced) and completes: the counts
// equal a rebuild's and the log's.
func TestSearchIndexSurvivesKill(t *testing.T) {
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	const sessionsN, turns = 400, 30 // 12,000 "hello" messages, 25,000 events
	for i := range sessionsN {
		seed(t, s, fmt.Sprintf("%08d-0000-4000-8000-00000000000a", i), turns)
	}
	s.Close()
	head := func() uint64 {
		s, err := embedded.Open(filepath.Join(home, "events.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		h, _ := s.Head(context.Background())
		return h
	}()
	partial := 0 // kills that landed mid-indexing
	for round := 0; round < 10 && partial < 2; round++ {
		cmd := exec.Command(bin, "--home", home, "search", "hello", "--rebuild")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(500+400*round) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		if idx, err := search.Open(filepath.Join(home, "search.bleve")); err == nil {
			cp, _ := idx.Checkpoint(context.Background())
			t.Logf("round %d: checkpoint %d of %d", round, cp, head)
			if cp > 0 && cp < head {
				partial++
			}
			idx.Close()
		}

		out, errOut, err := run(t, home, "search", "hello", "--json", "--limit", "1000")
		if err != nil {
			t.Fatalf("round %d: search after kill: %v\n%s", round, err, errOut)
		}
		if strings.Contains(errOut, "replaced") {
			t.Fatalf("round %d: the index did not survive the kill: %s", round, errOut)
		}
		var res searchOut
		json.Unmarshal([]byte(out), &res)
		if res.Total != sessionsN*turns || len(res.Hits) != sessionsN {
			t.Fatalf("round %d: %d messages in %d sessions after the kill, want %d in %d", round, res.Total, len(res.Hits), sessionsN*turns, sessionsN)
		}
	}
	if partial == 0 {
		t.Fatal("no kill landed while the index was being built")
	}
}

// Words are all required, field terms filter, unquoted words are one
// query, and the header counts sessions whatever --limit shows.
func TestSearchSyntaxFromTheCLI(t *testing.T) {
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		seed(t, s, fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i), 2) // "hello N from ID"
	}
	s.Close()
	if out := mustRun(t, home, "search", "hello", "nonexistentword"); !strings.Contains(out, "no matches") {
		t.Fatalf("words were OR'd:\n%s", out)
	}
	if out := mustRun(t, home, "search", "hello", "OR", "nonexistentword"); !strings.Contains(out, "6 matching messages in 3 sessions") {
		t.Fatalf("OR:\n%s", out)
	}
	if out := mustRun(t, home, "search", "source:telegram", "hello"); !strings.Contains(out, "no matches") {
		t.Fatalf("source:telegram did not filter:\n%s", out)
	}
	one := mustRun(t, home, "search", "hello", "--limit", "1")
	all := mustRun(t, home, "search", "hello", "--limit", "10")
	if !strings.Contains(one, "6 matching messages in 3 sessions (the best 1 shown") || !strings.Contains(all, "6 matching messages in 3 sessions\n") {
		t.Fatalf("header depends on --limit:\n%s\n---\n%s", one, all)
	}
	if _, errOut, err := run(t, home, "search", "--", "-hello"); err == nil || !strings.Contains(errOut, "at least one word") {
		t.Fatalf("an only-negative query: %v %s", err, errOut)
	}
}
