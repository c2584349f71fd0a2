package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hermes-go/hermes/actors/node/nodetest"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
)

// sessionIDs matches the session and turn ids in errors, so that errors
// of one kind are counted together.
var sessionIDs = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// TestClusterSurvivesPostgresRestart: two agent nodes (their own
// processes) run a steady stream of turns from many callers, each on its
// own session, while PostgreSQL is restarted hard (pg_ctl restart -m
// immediate: the postmaster and its backends are killed, every connection
// breaks). Every request ends, with its answer or an error, well before
// its deadline; every turn the store shows completed reached its caller
// with its answer (none reported as failed, none lost); and once the
// server is back every session answers again. HERMES_PGRESTART_WORKERS
// and HERMES_PGRESTART_ROUNDS (default 16 callers, 3 restarts) make a
// longer run.
func TestClusterSurvivesPostgresRestart(t *testing.T) {
	if isolate(t) {
		return
	}
	workers, restarts := 16, 3
	for _, v := range []struct {
		env string
		to  *int
	}{{"HERMES_PGRESTART_WORKERS", &workers}, {"HERMES_PGRESTART_ROUNDS", &restarts}} {
		if s := os.Getenv(v.env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				t.Fatalf("%s=%q: a positive count", v.env, s)
			}
			*v.to = n
		}
	}
	think := 150 * time.Millisecond
	if s := os.Getenv("HERMES_PGRESTART_THINK"); s != "" {
		var err error
		if think, err = time.ParseDuration(s); err != nil {
			t.Fatalf("HERMES_PGRESTART_THINK=%q: %v", s, err)
		}
	}
	pg := pgtest.Start(t)
	dsn := pg.Database(t)
	etcd := nodetest.StartEtcd(t)
	llm := llmtest.New()
	llm.NoRecord = true
	llm.Route = func(r llmtest.Request) *llmtest.Reply {
		return &llmtest.Reply{Content: "answer to " + lastUser(r), Delay: think}
	}
	t.Cleanup(llm.Close)
	env := []string{"HERMES_NODE_STORE=" + dsn, "HERMES_NODE_ETCD=" + etcd.Endpoint, "HERMES_NODE_LLM=" + llm.URL}
	races := t.TempDir()
	t.Cleanup(func() { checkRaces(t, races) })
	startNode(t, env, races)
	startNode(t, env, races)

	ctx := context.Background()
	c := newCaller(t, dsn, etcd.Endpoint, 2)
	store, sessions := c.store, c.sessions

	ids := make([]string, workers)
	for i := range ids {
		ids[i] = uuid.NewString()
		if err := session.Create(ctx, store, ids[i], session.Start{Source: "api", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
			t.Fatal(err)
		}
	}

	// A request's deadline: one that reaches it hung (RunTurn then stops
	// the turn and returns the context's error).
	const deadline = 45 * time.Second
	type outcome struct {
		session, turn, text string
		answer              string
		err                 error
		took                time.Duration
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
		// answeredSoFar counts the requests answered so far.
		answeredSoFar int
		stop          atomic.Bool
		wg            sync.WaitGroup
	)
	turn := func(id, text string) outcome {
		rctx, cancel := context.WithTimeout(ctx, deadline)
		defer cancel()
		began := time.Now()
		tid := uuid.NewString()
		r := sessions.RunTurn(rctx, id, &session.Turn{ID: tid, Text: text})
		return outcome{session: id, turn: tid, text: text, answer: r.Answer, err: r.Err, took: time.Since(began)}
	}
	for w, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				o := turn(id, fmt.Sprintf("message %d of caller %d", i, w))
				mu.Lock()
				outcomes = append(outcomes, o)
				if o.err == nil {
					answeredSoFar++
				}
				mu.Unlock()
				if o.err != nil {
					// A person sees the error and tries again a little later.
					time.Sleep(250 * time.Millisecond)
				}
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return answeredSoFar }
	gatewaytest.WaitFor(t, "turns answered before the restart", func() bool { return count() >= 2*workers })
	for range restarts {
		before := count()
		began := time.Now()
		if err := pg.Restart(); err != nil {
			t.Fatal(err)
		}
		t.Logf("PostgreSQL restarted in %s with %d requests answered", time.Since(began).Round(10*time.Millisecond), before)
		// The load goes on past the restart, until every caller could
		// have been answered again a few times.
		gatewaytest.WaitFor(t, "turns answered after the restart", func() bool { return count() >= before+3*workers })
	}
	stop.Store(true)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(deadline + 2*time.Minute):
		t.Fatalf("callers still waiting %s after the load stopped", deadline+2*time.Minute)
	}

	// Each request: answered with its own answer, or failed with a clear
	// error and not completed in the store.
	answered, failed, hung, lost, carried := 0, 0, 0, 0, 0
	var worst time.Duration
	samples := map[string]int{}
	for _, o := range outcomes {
		worst = max(worst, o.took)
		if o.err == nil {
			// The model answers the request's own message. A message of
			// a turn that failed stays in the session unanswered, and the
			// model sees it joined to the next one ("…\n\nmessage N").
			if !strings.HasPrefix(o.answer, "answer to ") || !strings.HasSuffix(o.answer, o.text) {
				t.Errorf("session %s turn %s answered %q, want the answer to %q", o.session, o.turn, o.answer, o.text)
			} else if o.answer != "answer to "+o.text {
				carried++
			}
			answered++
			continue
		}
		failed++
		if errors.Is(o.err, context.DeadlineExceeded) || o.took >= deadline {
			hung++
			t.Errorf("session %s turn %s hung until its deadline (%s): %v", o.session, o.turn, o.took.Round(time.Millisecond), o.err)
		}
		samples[sessionIDs.ReplaceAllString(o.err.Error(), "<id>")]++
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		st, err := session.LookupTurn(lctx, store, o.session, o.turn)
		cancel()
		if err != nil {
			t.Fatalf("look turn %s up: %v", o.turn, err)
		}
		if st.Completed {
			lost++
			t.Errorf("session %s turn %s completed in the store, but its caller got %v", o.session, o.turn, o.err)
		}
	}
	var errs []string
	for e, n := range samples {
		errs = append(errs, fmt.Sprintf("%d× %s", n, e))
	}
	sort.Strings(errs)
	for _, e := range errs {
		t.Logf("error: %s", e)
	}
	t.Logf("%d requests over %d restarts: %d answered (%d after an earlier message of the session that failed), %d errored (%d hung, %d completed but not delivered); the slowest took %s",
		len(outcomes), restarts, answered, carried, failed, hung, lost, worst.Round(10*time.Millisecond))

	// Every session answers again.
	var again sync.WaitGroup
	for _, id := range ids {
		again.Add(1)
		go func() {
			defer again.Done()
			o := turn(id, "after the restarts")
			if o.err != nil || o.answer != "answer to after the restarts" {
				t.Errorf("session %s after the restarts: %q, %v", id, o.answer, o.err)
			}
		}()
	}
	again.Wait()
}
