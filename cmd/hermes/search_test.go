package main

import (
	"bufio"
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
	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Add(1)
	written := 1
	go func() {
		defer writer.Done()
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			seed(t, s, fmt.Sprintf("%08d-0000-4000-8000-000000000000", n), 1)
			written++
			time.Sleep(5 * time.Millisecond)
		}
	}()
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
	close(stop)
	writer.Wait()
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
