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
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/node/nodetest"
	"github.com/hermes-go/hermes/adapters/bus/bustest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
)

// startHermes starts the hermes binary in the background; cleanup stops it
// (SIGTERM, then kill).
func startHermes(t *testing.T, env []string, args ...string) (*exec.Cmd, *syncBuffer, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	return cmd, out, exited
}

// hermes node run ×2 and hermes gateway run --cluster (the API server
// platform, the bus on NATS), with PostgreSQL as the shared store and etcd
// as the cluster provider: a completion is answered by the node owning its
// session; that node is killed (SIGKILL) while the model answers the
// session's next turn, and the other node continues the turn, so the one
// HTTP request waiting gets its answer.
func TestNodeRunClusterFailover(t *testing.T) {
	pgsrv := pgtest.Start(t)
	dsn := pgsrv.Database(t)
	etcd := nodetest.StartEtcd(t)
	nats := bustest.StartNATS(t)

	var mu sync.Mutex
	slowCalls := 0
	slowSeen := make(chan struct{}, 1)
	llm := llmtest.New()
	llm.Route = func(r llmtest.Request) *llmtest.Reply {
		if !strings.HasSuffix(strings.TrimSpace(lastUserText(r)), "think slowly") {
			return &llmtest.Reply{Content: "pong"}
		}
		mu.Lock()
		defer mu.Unlock()
		slowCalls++
		if slowCalls == 1 {
			slowSeen <- struct{}{}
			return &llmtest.Reply{Delay: 5 * time.Minute}
		}
		return &llmtest.Reply{Content: "thought it through"}
	}
	defer llm.Close()

	type nodeProc struct {
		cmd    *exec.Cmd
		out    *syncBuffer
		exited <-chan struct{}
	}
	// The first node starts alone and takes every projection's lease; the
	// second one stands by.
	var nodes []nodeProc
	status := newStatusReader(t, llm, dsn)
	for i := range 2 {
		home := t.TempDir()
		cmd, out, exited := startHermes(t, chatEnv(llm, "HERMES_STORE="+dsn),
			"--home", home, "--log-level", "info", "node", "run", "--cluster", etcd.Endpoint, "--model", "gpt-4o-mini")
		nodes = append(nodes, nodeProc{cmd, out, exited})
		waitOutput(t, out, "joined the cluster", fmt.Sprintf("node %d", i))
		if i == 0 {
			status.waitFedBy(t, cmd.Process.Pid, false)
		}
	}

	ghome := t.TempDir()
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	gcmd, gout, _ := startHermes(t, chatEnv(llm, "HERMES_STORE="+dsn, "API_SERVER_ENABLED=true", "API_SERVER_KEY=k-test-0123456789abcdef", "API_SERVER_PORT="+strconv.Itoa(port)),
		"--home", ghome, "--log-level", "info", "gateway", "run", "--bus", nats.URL, "--cluster", etcd.Endpoint, "--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--model", "gpt-4o-mini")
	waitOutput(t, gout, "gateway in cluster mode", "the gateway")
	waitOutput(t, gout, "bus=nats", "the gateway (on the bus given by --bus)")

	complete := func(session, text string) (string, string, error) {
		body := `{"model":"hermes-agent","messages":[{"role":"user","content":` + strconv.Quote(text) + `}]}`
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k-test-0123456789abcdef")
		req.Header.Set("Content-Type", "application/json")
		if session != "" {
			req.Header.Set("X-Hermes-Session-Id", session)
		}
		resp, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
		if err != nil {
			return "", "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return "", "", fmt.Errorf("%d %s", resp.StatusCode, b)
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
	// gateway status shows the cluster as the gateway sees it: both nodes.
	deadlineStatus := time.Now().Add(30 * time.Second)
	for {
		out, _, _ := hermes(t, chatEnv(llm), "", "--home", ghome, "gateway", "status", "--json")
		var st struct {
			Status struct {
				Cluster *struct {
					Members []string
					Etcd    []string
				}
			}
		}
		if json.Unmarshal([]byte(out), &st) == nil && st.Status.Cluster != nil && len(st.Status.Cluster.Members) == 2 && st.Status.Cluster.Etcd[0] == etcd.Endpoint {
			text, _, _ := hermes(t, chatEnv(llm), "", "--home", ghome, "gateway", "status")
			if !strings.Contains(text, "cluster: 2 agent node(s)") {
				t.Fatalf("gateway status:\n%s", text)
			}
			break
		}
		if time.Now().After(deadlineStatus) {
			t.Fatalf("gateway status never showed the two nodes: %s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// New sessions until one lives on the first node, which feeds the
	// projections: its kill then moves both the session and the leases.
	var answer, sid string
	owner := -1
	for try := 0; owner != 0; try++ {
		if try == 20 {
			t.Fatal("20 sessions and none placed on the first node")
		}
		var err error
		deadline := time.Now().Add(30 * time.Second)
		for {
			if answer, sid, err = complete("", "hello"); err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil || answer != "pong" || sid == "" {
			t.Fatalf("first completion %q %q %v\n%s", answer, sid, err, gout)
		}
		owner = -1
		for i, n := range nodes {
			if ranSession(n.out.String(), sid) {
				if owner >= 0 {
					t.Fatalf("session %s active on two nodes", sid)
				}
				owner = i
			}
		}
		if owner < 0 {
			t.Fatalf("no node ran session %s:\n%s\n%s", sid, nodes[0].out, nodes[1].out)
		}
	}

	type result struct {
		answer string
		err    error
	}
	slow := make(chan result, 1)
	go func() {
		a, _, err := complete(sid, "think slowly")
		slow <- result{a, err}
	}()
	select {
	case <-slowSeen:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow turn never reached the model")
	}
	if err := nodes[owner].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-slow:
	case <-time.After(60 * time.Second):
		t.Fatalf("no answer 60 s after the kill\n%s", gout)
	}
	if r.err != nil || r.answer != "thought it through" {
		t.Fatalf("answer after the kill %q %v\n%s", r.answer, r.err, gout)
	}
	survivor := nodes[1-owner]
	if !ranSession(survivor.out.String(), sid) {
		t.Fatalf("the survivor did not run session %s:\n%s", sid, survivor.out)
	}
	// The killed node's projection leases went with its connection: a
	// live process feeds each projection, up to the end of the log.
	status.waitFedBy(t, 0, true, nodes[owner].cmd.Process.Pid)

	store, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rs, err := store.ReadStream(context.Background(), events.SessionStream(sid), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range rs {
		count[e.Type]++
	}
	if count["UserMessageAdded"] != 2 || count["TurnCompleted"] != 2 || count["TurnInterrupted"] != 1 {
		t.Fatalf("session events %v", count)
	}
	// Read from a fresh home, the shared projections hold the session with
	// its four messages (without that command catching them up itself:
	// status showed them at the end of the log).
	out, errOut, code := hermes(t, chatEnv(llm, "HERMES_STORE="+dsn), "", "--home", t.TempDir(), "sessions", "list", "--json")
	if code != 0 || !strings.Contains(out, sid) {
		t.Fatalf("sessions list from another home: %d %s %s", code, out, errOut)
	}

	// SIGTERM: the survivor leaves the cluster and exits cleanly.
	if err := survivor.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-survivor.exited:
		if code := survivor.cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("the node exited with %d:\n%s", code, survivor.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the node did not stop within 30 s of SIGTERM:\n%s", survivor.out)
	}
	if !strings.Contains(survivor.out.String(), "leaving the cluster") {
		t.Fatalf("no leave:\n%s", survivor.out)
	}
	// Whatever the survivor fed, it handed over as it left: the gateway,
	// the last process, feeds every projection.
	status.waitFedBy(t, gcmd.Process.Pid, true)
}

// statusReader runs hermes projections status against the shared store
// from a home of its own.
type statusReader struct {
	env  []string
	home string
}

func newStatusReader(t *testing.T, llm *llmtest.Server, dsn string) *statusReader {
	return &statusReader{env: chatEnv(llm, "HERMES_STORE="+dsn), home: t.TempDir()}
}

// waitFedBy waits until each table projection is fed by a live process:
// pid when it is not 0, never one of not; with caughtUp, also until none
// is behind the log.
func (s *statusReader) waitFedBy(t *testing.T, pid int, caughtUp bool, not ...int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		out, errOut, code := hermes(t, s.env, "", "--home", s.home, "projections", "status")
		last = out + errOut
		if code == 0 && s.fedBy(out, pid, caughtUp, not) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("projections not fed by pid %d (not %v, caught up %v) within 60 s:\n%s", pid, not, caughtUp, last)
}

func (s *statusReader) fedBy(out string, pid int, caughtUp bool, not []int) bool {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || !slices.Contains([]string{"sessions", "history", "lineage", "costs"}, f[0]) {
			continue
		}
		_, by, ok := strings.Cut(l, "fed by pid ")
		if !ok {
			return false
		}
		p, err := strconv.Atoi(strings.Fields(by)[0])
		if err != nil || (pid != 0 && p != pid) || slices.Contains(not, p) {
			return false
		}
		if caughtUp && f[3] != "0" {
			return false
		}
		n++
	}
	return n == 4
}

func waitOutput(t *testing.T, out *syncBuffer, want, who string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q within 60 s:\n%s", who, want, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lastUserText is the text of the last user message of a chat request.
func lastUserText(r llmtest.Request) string {
	msgs, _ := r.Body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m, ok := msgs[i].(map[string]any); ok && m["role"] == "user" {
			if s, ok := m["content"].(string); ok {
				return s
			}
			return fmt.Sprint(m["content"])
		}
	}
	return ""
}

// ranSession says whether a node's log shows session sid's grain activated.
func ranSession(log, sid string) bool {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "session grain activated") && strings.Contains(l, sid) {
			return true
		}
	}
	return false
}

// hermes node run without a cluster to join says what to set.
func TestNodeRunWithoutCluster(t *testing.T) {
	llm := llmtest.New()
	defer llm.Close()
	home := t.TempDir()
	_, errOut, code := hermes(t, chatEnv(llm), "", "--home", home, "node", "run", "--model", "gpt-4o-mini")
	if code == 0 || !strings.Contains(errOut, "no cluster: pass --cluster") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	_, errOut, code = hermes(t, chatEnv(llm), "", "--home", home, "gateway", "run", "--listen", "127.0.0.1:7000", "--model", "gpt-4o-mini")
	if code == 0 || !strings.Contains(errOut, "pass --cluster") {
		t.Fatalf("gateway --listen without a cluster: exit %d: %s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("cluster:\n  etcd: [127.0.0.1:1]\n  listen: nowhere\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = hermes(t, chatEnv(llm), "", "--home", home, "node", "run", "--model", "gpt-4o-mini")
	if code == 0 || !strings.Contains(errOut, `cluster.listen "nowhere"`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// A bus the gateway does not know is refused, naming it.
	_, errOut, code = hermes(t, chatEnv(llm), "", "--home", t.TempDir(), "gateway", "run", "--bus", "kafka://somewhere", "--model", "gpt-4o-mini")
	if code == 0 || !strings.Contains(errOut, `gateway.bus "kafka://somewhere"`) {
		t.Fatalf("gateway run --bus kafka://: exit %d: %s", code, errOut)
	}
	// A cluster over the embedded store (one process's log) is refused.
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("cluster:\n  etcd: [127.0.0.1:1]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"node", "run"}, {"gateway", "run"}} {
		_, errOut, code = hermes(t, chatEnv(llm), "", append([]string{"--home", home}, append(args, "--model", "gpt-4o-mini")...)...)
		if code == 0 || !strings.Contains(errOut, "a cluster needs a PostgreSQL store") {
			t.Fatalf("%v over the embedded store: exit %d: %s", args, code, errOut)
		}
	}
}
