package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/node/nodetest"
	"github.com/hermes-go/hermes/adapters/bus/bustest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
	"github.com/hermes-go/hermes/schema"
)

// restartIDs matches the ids in errors, so that errors of one kind are
// counted together.
var restartIDs = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}`)

// TestGatewayClusterSurvivesPostgresRestart: the path a user takes — the
// API server's chat completions in hermes gateway run --cluster, the bus on
// NATS JetStream, two hermes node run, PostgreSQL as the shared store —
// under a steady load of callers, each on a conversation of its own, while
// PostgreSQL is restarted hard (pg_ctl restart -m immediate) a few times.
// Every request ends within seconds (well before the client's timeout) with
// its own answer or an HTTP error; no turn the store shows completed was
// answered to its caller with an error; and every conversation answers
// again after the faults. HERMES_GWRESTART_WORKERS and
// HERMES_GWRESTART_ROUNDS make a longer run (default 8 callers, 3
// restarts); HERMES_GWRESTART_FAULTS=pg,node,nats adds, after each
// PostgreSQL restart, a node killed (SIGKILL, then started again) and
// NATS restarted; HERMES_GWRESTART_LOGS names a directory for the
// processes' logs.
func TestGatewayClusterSurvivesPostgresRestart(t *testing.T) {
	workers, rounds := 8, 3
	for _, v := range []struct {
		env string
		to  *int
	}{{"HERMES_GWRESTART_WORKERS", &workers}, {"HERMES_GWRESTART_ROUNDS", &rounds}} {
		if s := os.Getenv(v.env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || (n == 0 && v.to == &workers) {
				t.Fatalf("%s=%q: a count (callers: at least one; rounds: 0 for the load alone)", v.env, s)
			}
			*v.to = n
		}
	}
	faults := map[string]bool{"pg": true}
	if s := os.Getenv("HERMES_GWRESTART_FAULTS"); s != "" {
		faults = map[string]bool{}
		for _, f := range strings.Split(s, ",") {
			switch f {
			case "pg", "node", "nats":
				faults[f] = true
			default:
				t.Fatalf("HERMES_GWRESTART_FAULTS=%q: pg, node and nats, comma-separated", s)
			}
		}
	}
	// A request's bound: the answer or an error within it. The client's
	// own timeout is far longer, so a hang shows as a request over it.
	const bound = 20 * time.Second
	const clientTimeout = 120 * time.Second

	pgsrv := pgtest.Start(t)
	dsn := pgsrv.Database(t)
	etcd := nodetest.StartEtcd(t)
	nats := bustest.StartNATS(t)
	llm := llmtest.New()
	llm.NoRecord = true
	var mixedMu sync.Mutex
	var mixed []string
	asked := map[string][]string{} // last user text → the requests that asked it
	var replies []string           // the model's replies, by number
	llm.Route = func(r llmtest.Request) *llmtest.Reply {
		// A model request carries one caller's conversation: its user
		// messages all name the same caller.
		callers := map[string]bool{}
		var users []string
		msgs, _ := r.Body["messages"].([]any)
		for _, m := range msgs {
			if m, ok := m.(map[string]any); ok && m["role"] == "user" {
				text := fmt.Sprint(m["content"])
				users = append(users, text)
				if i := strings.LastIndex(text, "caller "); i >= 0 {
					callers[text[i:]] = true
				}
			}
		}
		mixedMu.Lock()
		if len(callers) > 1 {
			mixed = append(mixed, fmt.Sprintf("%q", users))
		}
		n := len(replies)
		replies = append(replies, fmt.Sprintf("reply #%d to %d user messages ending %q", n, len(users), lastUserText(r)))
		asked[lastUserText(r)] = append(asked[lastUserText(r)], replies[n])
		mixedMu.Unlock()
		// Each reply numbered: a reply that reaches two sessions shows.
		return &llmtest.Reply{Content: fmt.Sprintf("answer to %s #%d", lastUserText(r), n), Delay: 50 * time.Millisecond}
	}
	t.Cleanup(func() {
		mixedMu.Lock()
		defer mixedMu.Unlock()
		for _, m := range mixed {
			t.Errorf("a model request mixed callers' messages: %s", m)
		}
	})
	t.Cleanup(llm.Close)

	type nodeProc struct {
		cmd    *exec.Cmd
		out    *syncBuffer
		exited <-chan struct{}
	}
	startNodeProc := func(i int) nodeProc {
		cmd, out, exited := startHermes(t, chatEnv(llm, "HERMES_STORE="+dsn),
			"--home", t.TempDir(), "--log-level", "info", "node", "run", "--cluster", etcd.Endpoint, "--model", "gpt-4o-mini")
		waitOutput(t, out, "joined the cluster", fmt.Sprintf("node %d", i))
		return nodeProc{cmd, out, exited}
	}
	nodes := []nodeProc{startNodeProc(0), startNodeProc(1)}
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	const key = "k-test-0123456789abcdef"
	_, gout, _ := startHermes(t, chatEnv(llm, "HERMES_STORE="+dsn, "API_SERVER_ENABLED=true", "API_SERVER_KEY="+key, "API_SERVER_PORT="+strconv.Itoa(port)),
		"--home", t.TempDir(), "--log-level", "info", "gateway", "run", "--bus", nats.URL, "--cluster", etcd.Endpoint, "--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--model", "gpt-4o-mini")
	waitOutput(t, gout, "gateway in cluster mode", "the gateway")
	waitOutput(t, gout, "bus=nats", "the gateway (on the bus given by --bus)")

	client := &http.Client{Timeout: clientTimeout}
	// complete asks one chat completion in conversation sid ("" for a new
	// one) and returns the answer and the conversation's session.
	complete := func(sid, text string) (string, string, error) {
		body := `{"model":"hermes-agent","messages":[{"role":"user","content":` + strconv.Quote(text) + `}]}`
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		if sid != "" {
			req.Header.Set("X-Hermes-Session-Id", sid)
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return "", "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
		}
		var c struct {
			Choices []struct {
				Message struct{ Content string }
			}
		}
		if err := json.Unmarshal(b, &c); err != nil || len(c.Choices) == 0 {
			return "", "", fmt.Errorf("completion %s: %v", b, err)
		}
		return c.Choices[0].Message.Content, resp.Header.Get("X-Hermes-Session-Id"), nil
	}

	// Each caller's conversation, opened before the load.
	sids := make([]string, workers)
	var open sync.WaitGroup
	for w := range sids {
		open.Add(1)
		go func() {
			defer open.Done()
			deadline := time.Now().Add(60 * time.Second)
			for {
				a, sid, err := complete("", fmt.Sprintf("hello from caller %d", w))
				if err == nil && sid != "" && isAnswerTo(a, fmt.Sprintf("hello from caller %d", w)) {
					sids[w] = sid
					return
				}
				if time.Now().After(deadline) {
					t.Errorf("caller %d: no conversation: %q %q %v", w, a, sid, err)
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
	}
	open.Wait()
	if t.Failed() {
		t.Fatalf("gateway:\n%s", gout)
	}

	type outcome struct {
		sid, text, answer string
		err               error
		took              time.Duration
	}
	var (
		mu            sync.Mutex
		outcomes      []outcome
		answeredSoFar int
		stop          atomic.Bool
		wg            sync.WaitGroup
	)
	for w, sid := range sids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				text := fmt.Sprintf("message %d of caller %d", i, w)
				began := time.Now()
				a, _, err := complete(sid, text)
				o := outcome{sid: sid, text: text, answer: a, err: err, took: time.Since(began)}
				mu.Lock()
				outcomes = append(outcomes, o)
				if err == nil {
					answeredSoFar++
				}
				mu.Unlock()
				if err != nil {
					// A person sees the error and tries again a little later.
					time.Sleep(250 * time.Millisecond)
				}
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return answeredSoFar }
	waitAnswered := func(what string, n int) {
		deadline := time.Now().Add(90 * time.Second)
		for count() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d requests answered after 90 s\ngateway:\n%s", what, count(), n, gout)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitAnswered("before the faults", 2*workers)
	for r := range rounds {
		if faults["pg"] {
			before, began := count(), time.Now()
			if err := pgsrv.Restart(); err != nil {
				t.Fatal(err)
			}
			t.Logf("round %d: PostgreSQL restarted in %s with %d requests answered", r, time.Since(began).Round(10*time.Millisecond), before)
			waitAnswered("after a PostgreSQL restart", before+3*workers)
		}
		if faults["node"] {
			i := r % len(nodes)
			before := count()
			if err := nodes[i].cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-nodes[i].exited
			t.Logf("round %d: node %d killed with %d requests answered", r, i, before)
			waitAnswered("after a node's kill", before+3*workers)
			nodes[i] = startNodeProc(i)
		}
		if faults["nats"] {
			before := count()
			nats.Stop()
			time.Sleep(time.Second)
			if err := nats.Start(); err != nil {
				t.Fatal(err)
			}
			t.Logf("round %d: NATS restarted with %d requests answered", r, before)
			waitAnswered("after a NATS restart", before+3*workers)
		}
	}
	stop.Store(true)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(clientTimeout + 30*time.Second):
		t.Fatalf("callers still waiting after the load stopped")
	}

	// The store's record of each conversation: each user message, and how
	// its turn ended.
	store, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	type turnRec struct {
		completed bool
		answer    string
		ended     string
	}
	record := map[string]map[string]*turnRec{} // session → message text → its turn
	recordedIn := map[string][]string{}        // a reply's number → the sessions that recorded it
	for _, sid := range sids {
		rs, err := store.ReadStream(context.Background(), events.SessionStream(sid), events.Forward, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		byTurn := map[string]*turnRec{}
		record[sid] = map[string]*turnRec{}
		for _, r := range rs {
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				continue
			}
			switch p := p.(type) {
			case schema.UserMessageAdded:
				tr := &turnRec{}
				byTurn[r.TurnID] = tr
				record[sid][p.Content] = tr
			case schema.AssistantMessageAdded:
				if tr := byTurn[r.TurnID]; tr != nil && p.Content != "" {
					tr.answer = p.Content
				}
				if i := strings.LastIndex(p.Content, " #"); i >= 0 {
					recordedIn[p.Content[i:]] = append(recordedIn[p.Content[i:]], sid)
				}
			case schema.TurnCompleted:
				if tr := byTurn[r.TurnID]; tr != nil {
					tr.completed, tr.ended = true, "completed"
				}
			case schema.TurnInterrupted:
				if tr := byTurn[r.TurnID]; tr != nil {
					tr.ended = "interrupted: " + p.Reason
				}
			}
		}
	}

	for n, in := range recordedIn {
		if len(in) > 1 {
			t.Errorf("the model's reply %s is recorded in %d sessions: %v", n, len(in), in)
		}
	}
	answered, failed, over, lost, carried := 0, 0, 0, 0, 0
	var worst time.Duration
	samples := map[string]int{}
	for _, o := range outcomes {
		worst = max(worst, o.took)
		if o.took > bound {
			over++
			t.Errorf("session %s %q took %s (bound %s): %q %v", o.sid, o.text, o.took.Round(time.Millisecond), bound, o.answer, o.err)
		}
		tr := record[o.sid][o.text]
		if o.err == nil {
			answered++
			if !isAnswerTo(o.answer, o.text) {
				if strings.Contains(o.answer, "\n\n"+o.text+" #") {
					// An earlier message of the conversation, whose
					// turn failed, was sent to the model with this one.
					carried++
				}
				mixedMu.Lock()
				t.Errorf("session %s %q answered %q; the model was asked %q by %q and %q by %q; the session's events:\n%s", o.sid, o.text, o.answer,
					o.text, asked[o.text], repliedTo(o.answer), asked[repliedTo(o.answer)], restartEvents(store, o.sid))
				mixedMu.Unlock()
			}
			if tr == nil || !tr.completed {
				t.Errorf("session %s %q answered, but the store has no completed turn for it (%+v)", o.sid, o.text, tr)
			}
			continue
		}
		failed++
		samples[restartIDs.ReplaceAllString(o.err.Error(), "<id>")]++
		if tr != nil && tr.completed {
			lost++
			t.Errorf("session %s %q completed in the store (answer %q), but its caller got %v", o.sid, o.text, tr.answer, o.err)
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
	t.Logf("%d requests over %d rounds of %v: %d answered (%d with an earlier failed message joined), %d errored (%d completed in the store but not delivered), %d over %s; the slowest took %s",
		len(outcomes), rounds, faults, answered, carried, failed, lost, over, bound, worst.Round(10*time.Millisecond))

	// Every conversation answers again.
	var again sync.WaitGroup
	for _, sid := range sids {
		again.Add(1)
		go func() {
			defer again.Done()
			a, _, err := complete(sid, "after the faults")
			if err != nil || !isAnswerTo(a, "after the faults") {
				t.Errorf("session %s after the faults: %q, %v", sid, a, err)
			}
		}()
	}
	again.Wait()
	// Two requests at once on one conversation: both answered, one after
	// the other (the chat queues the second), neither interrupted.
	var both sync.WaitGroup
	for i := range 2 {
		both.Add(1)
		go func() {
			defer both.Done()
			text := fmt.Sprintf("at once %d", i)
			a, _, err := complete(sids[0], text)
			if err != nil || !isAnswerTo(a, text) {
				t.Errorf("session %s, two requests at once: %q answered %q, %v", sids[0], text, a, err)
			}
		}()
	}
	both.Wait()
	if dir := os.Getenv("HERMES_GWRESTART_LOGS"); dir != "" {
		// The processes' whole logs, for a look at a failure.
		_ = os.WriteFile(filepath.Join(dir, "gateway.log"), []byte(gout.String()), 0o644)
		for i, n := range nodes {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("node%d.log", i)), []byte(n.out.String()), 0o644)
		}
	}
	if t.Failed() {
		t.Logf("gateway:\n%s", tail(gout.String(), 200))
		for i, n := range nodes {
			t.Logf("node %d:\n%s", i, tail(n.out.String(), 200))
		}
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// restartEvents lists session sid's events, one a line, for a failure's
// message.
func restartEvents(store events.Store, sid string) string {
	rs, err := store.ReadStream(context.Background(), events.SessionStream(sid), events.Forward, 0, 0)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  %d %s turn=%s %.200s\n", r.Revision, r.Type, r.TurnID, r.Payload)
	}
	return b.String()
}

// isAnswerTo says whether a, a reply of the test's model, answers text.
func isAnswerTo(a, text string) bool {
	rest, ok := strings.CutPrefix(a, "answer to "+text+" #")
	_, err := strconv.Atoi(rest)
	return ok && err == nil
}

// repliedTo is the text reply a answers.
func repliedTo(a string) string {
	a = strings.TrimPrefix(a, "answer to ")
	if i := strings.LastIndex(a, " #"); i >= 0 {
		a = a[:i]
	}
	return a
}
