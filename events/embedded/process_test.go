package embedded

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/storetest"
	"github.com/hermes-go/hermes/internal/sqlite"
)

// TestMain lets the test binary act as a helper process: the crash and
// multi-process tests start it again with HERMES_HELPER set.
func TestMain(m *testing.M) {
	switch os.Getenv("HERMES_HELPER") {
	case "append-forever":
		appendForever(os.Getenv("HERMES_DB"))
		return
	case "guarded":
		guardedHelper(os.Getenv("HERMES_DB"), os.Getenv("HERMES_WITNESS"))
		return
	case "append-n":
		n, _ := strconv.Atoi(os.Getenv("HERMES_N"))
		if err := appendN(os.Getenv("HERMES_DB"), os.Getenv("HERMES_NAME"), n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// appendForever appends from 4 goroutines, one stream each, and prints
// "stream revision" for every append acknowledged.
func appendForever(path string) {
	s, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := fmt.Sprintf("crash-%d", w)
			last, err := s.ReadStream(context.Background(), stream, events.Backward, events.End, 1)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			next := uint64(0)
			exp := events.NoStream
			if len(last) == 1 {
				next = last[0].Revision + 1
				exp = events.Exact(last[0].Revision)
			}
			// Two of the four writers defer their syncs (what the
			// agent does for a tool's result): a kill must keep their
			// acknowledged appends too.
			ctx := context.Background()
			if w%2 == 1 {
				ctx = events.DeferSync(ctx)
			}
			for {
				res, err := s.Append(ctx, stream, exp, storetest.Event("c", fmt.Sprintf("%s/%d", stream, next)))
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				mu.Lock()
				fmt.Fprintf(out, "%s %d\n", stream, res.NextRevision)
				out.Flush()
				mu.Unlock()
				exp = events.Exact(res.NextRevision)
				next = res.NextRevision + 1
			}
		}()
	}
	wg.Wait()
}

func appendN(path, name string, n int) error {
	s, err := Open(path, WithPollInterval(10*time.Millisecond))
	if err != nil {
		return err
	}
	defer s.Close()
	ctx := context.Background()
	for i := range n {
		// Alternate between a stream shared by every process (expected Any)
		// and one of our own (exact revisions).
		if _, err := s.Append(ctx, "shared", events.Any, storetest.Event("m", fmt.Sprintf("%s-%d", name, i))); err != nil {
			return err
		}
		exp := events.NoStream
		if i > 0 {
			exp = events.Exact(uint64(i - 1))
		}
		if _, err := s.Append(ctx, "own-"+name, exp, storetest.Event("m", fmt.Sprintf("%s-%d", name, i))); err != nil {
			return err
		}
		if _, err := s.ReadAll(ctx, 0, 50); err != nil {
			return err
		}
	}
	return nil
}

func helper(t *testing.T, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// TestCrashKeepsAcknowledgedAppends SIGKILLs a writer at random moments and
// checks that every append it acknowledged is on disk and intact.
func TestCrashKeepsAcknowledgedAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	acked := map[string]uint64{}
	for round := range 5 {
		cmd := helper(t, "HERMES_HELPER=append-forever", "HERMES_DB="+path)
		stdout, _ := cmd.StdoutPipe()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		deadline := time.After(time.Duration(150+rand.IntN(600)) * time.Millisecond)
		n := 0
	read:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("round %d: helper died by itself: %s", round, stderr.String())
				}
				f := strings.Fields(l)
				rev, _ := strconv.ParseUint(f[1], 10, 64)
				acked[f[0]] = max(acked[f[0]], rev)
				n++
			case <-deadline:
				if n > 0 {
					break read
				}
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		for l := range lines { // acknowledgements printed before death count too
			f := strings.Fields(l)
			rev, _ := strconv.ParseUint(f[1], 10, 64)
			acked[f[0]] = max(acked[f[0]], rev)
		}
		cmd.Wait()

		s, err := Open(path)
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		ctx := context.Background()
		for stream, rev := range acked {
			rs, err := s.ReadStream(ctx, stream, events.Forward, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if uint64(len(rs)) < rev+1 {
				t.Fatalf("round %d: %s has %d events but revision %d was acknowledged", round, stream, len(rs), rev)
			}
			for i, r := range rs {
				want := fmt.Sprintf(`{"content":"%s/%d"}`, stream, i)
				if r.Revision != uint64(i) || string(r.Payload) != want {
					t.Fatalf("round %d: %s@%d holds %s, want %s", round, stream, r.Revision, r.Payload, want)
				}
			}
		}
		// Appends continue after the crash.
		last, _ := s.ReadStream(ctx, "crash-0", events.Backward, events.End, 1)
		if len(last) == 1 {
			if _, err := s.Append(ctx, "crash-0", events.Exact(last[0].Revision), storetest.Event("c", fmt.Sprintf("crash-0/%d", last[0].Revision+1))); err != nil {
				t.Fatalf("round %d: append after crash: %v", round, err)
			}
			acked["crash-0"] = last[0].Revision + 1
		}
		s.Close()
		t.Logf("round %d: %d acknowledged appends seen before kill", round, n)
	}
}

// TestSeveralProcessesShareOneStore runs writer processes against one file
// while this process appends and subscribes: nothing hangs, nothing is
// refused as locked, nothing is lost.
func TestSeveralProcessesShareOneStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path, WithPollInterval(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const procs, each = 3, 150
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seen := map[string]int{}
	var mu sync.Mutex
	subDone := make(chan error, 1)
	sctx, stopSub := context.WithCancel(ctx)
	go func() {
		subDone <- s.SubscribeAll(sctx, 0, func(r events.Recorded) error {
			mu.Lock()
			seen[r.Stream]++
			mu.Unlock()
			return nil
		})
	}()
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for p := range procs {
		cmd := helper(t, "HERMES_HELPER=append-n", "HERMES_DB="+path, fmt.Sprintf("HERMES_NAME=p%d", p), fmt.Sprintf("HERMES_N=%d", each))
		var out strings.Builder
		cmd.Stderr, cmd.Stdout = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	for i := range each {
		if _, err := s.Append(ctx, "shared", events.Any, storetest.Event("m", fmt.Sprintf("parent-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d failed: %v\n%s", i, err, outs[i])
		}
	}
	want := map[string]int{"shared": (procs + 1) * each}
	for p := range procs {
		want[fmt.Sprintf("own-p%d", p)] = each
	}
	for stream, n := range want {
		rs, err := s.ReadStream(ctx, stream, events.Forward, 0, 0)
		if err != nil || len(rs) != n {
			t.Fatalf("%s has %d events (%v), want %d", stream, len(rs), err, n)
		}
	}
	// The subscription of this process sees the other processes' appends.
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		ok := true
		for stream, n := range want {
			if seen[stream] != n {
				ok = false
			}
		}
		snapshot := fmt.Sprint(seen)
		mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscription saw %s, want %v", snapshot, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopSub()
	<-subDone
}

func TestCorruptPayloadIsNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := range 5 {
		s.Append(ctx, "session-x", events.Any, storetest.Event("x", fmt.Sprint(i)))
	}
	db, _ := sql.Open("sqlite", sqlite.DSN(path, "", "FULL"))
	if _, err := db.Exec(`UPDATE events SET payload = '{"content": "3!"}' WHERE stream = 'session-x' AND revision = 3`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = s.ReadAll(ctx, 0, 100)
	var ce *events.CorruptEventError
	if !errors.As(err, &ce) {
		t.Fatalf("want CorruptEventError, got %v", err)
	}
	if ce.Stream != "session-x" || ce.Revision != 3 || ce.Position != 4 {
		t.Fatalf("error names %s@%d pos %d", ce.Stream, ce.Revision, ce.Position)
	}
	if !strings.Contains(err.Error(), "session-x@3 (position 4) is unreadable: record checksum mismatch") {
		t.Fatalf("message does not name the place: %v", err)
	}
	if _, err := s.ReadStream(ctx, "session-x", events.Forward, 0, 0); !errors.As(err, &ce) {
		t.Fatalf("stream read of a corrupt event: %v", err)
	}
	// Events before the damage are still readable up to it.
	rs, err := s.ReadAll(ctx, 0, 3)
	if err != nil || len(rs) != 3 {
		t.Fatalf("events before the damage: %d, %v", len(rs), err)
	}
}

// TestDamagedFileGivesClearError truncates or scribbles over the database
// file: opening or reading must fail with an error naming the file, never
// panic and never return a short log as if it were whole.
func TestDamagedFileGivesClearError(t *testing.T) {
	for _, mode := range []string{"truncate", "scribble"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.db")
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			big := strings.Repeat("lorem ipsum ", 200)
			for i := range 300 {
				if _, err := s.Append(ctx, fmt.Sprintf("s%d", i%7), events.Any, storetest.Event("x", fmt.Sprintf("%d %s", i, big))); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			info, _ := os.Stat(path)
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			switch mode {
			case "truncate":
				f.Truncate(info.Size() / 2)
			case "scribble":
				junk := make([]byte, 64*1024)
				for i := range junk {
					junk[i] = byte(rand.IntN(256))
				}
				f.WriteAt(junk, info.Size()/3)
			}
			f.Close()
			s, err = Open(path)
			if err == nil {
				defer s.Close()
				var rs []events.Recorded
				rs, err = s.ReadAll(ctx, 0, 100000)
				if err == nil {
					t.Fatalf("damaged file read as %d events without error", len(rs))
				}
			}
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			t.Logf("%s: %v", mode, err)
		})
	}
}
