package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

const routesKey = "k-routes-0123456789abcdef"

// apiGateway is a `hermes gateway run` with the API server on, for the
// route tests; stop ends it (SIGTERM) and waits.
type apiGateway struct {
	t      *testing.T
	base   string
	cmd    *exec.Cmd
	exited chan error
	stderr *syncBuffer
}

func startAPIGateway(t *testing.T, srv *llmtest.Server, home string, port int) *apiGateway {
	t.Helper()
	g := &apiGateway{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port), exited: make(chan error, 1), stderr: &syncBuffer{}}
	g.cmd = exec.Command(bin, "--home", home, "--log-level", "info", "gateway", "run", "--model", "gpt-4o-mini")
	g.cmd.Env = chatEnv(srv, "API_SERVER_ENABLED=true", "API_SERVER_KEY="+routesKey, "API_SERVER_PORT="+strconv.Itoa(port))
	g.cmd.Stderr = g.stderr
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { g.exited <- g.cmd.Wait() }()
	t.Cleanup(g.stop)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if code, _ := g.call("GET", "/health", "", false); code == 200 {
			return g
		}
		select {
		case err := <-g.exited:
			g.exited <- err
			t.Fatalf("the gateway exited: %v\n%s", err, g.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API server did not come up:\n%s", g.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (g *apiGateway) stop() {
	if g.cmd.ProcessState != nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-g.exited:
		g.exited <- err
	case <-time.After(20 * time.Second):
		_ = g.cmd.Process.Kill()
		g.exited <- <-g.exited
	}
}

// kill ends the gateway as a crash does.
func (g *apiGateway) kill() {
	_ = g.cmd.Process.Kill()
	g.exited <- <-g.exited
}

// call sends a request, with the key when auth is set.
func (g *apiGateway) call(method, path, body string, auth bool) (int, string) {
	req, _ := http.NewRequest(method, g.base+path, strings.NewReader(body))
	if auth {
		req.Header.Set("Authorization", "Bearer "+routesKey)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// must calls and wants status want, returning the body decoded.
func (g *apiGateway) must(want int, method, path, body string) map[string]any {
	g.t.Helper()
	code, out := g.call(method, path, body, true)
	if code != want {
		g.t.Fatalf("%s %s: %d, want %d: %s\n%s", method, path, code, want, out, g.stderr.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil && !strings.HasPrefix(out, "event:") && !strings.HasPrefix(out, "data:") && !strings.HasPrefix(out, ":") {
		g.t.Fatalf("%s %s: not JSON: %s", method, path, out)
	}
	return m
}

// TestGatewayAPIRoutes drives upstream's REST routes through the real
// gateway: session create → chat → messages → title → list → delete; a
// run polled to completion and read again after a restart; jobs seen by
// `hermes cron list`; skills and toolsets; the key and malformed bodies.
func TestGatewayAPIRoutes(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	var italy atomic.Int32
	srv.SetRoute(func(r llmtest.Request) *llmtest.Reply {
		switch strings.TrimSpace(lastUser(r)) {
		case "What is two plus two?":
			return &llmtest.Reply{Content: "Four.", Prompt: 30, Completion: 2}
		case "Capital of France?":
			return &llmtest.Reply{Content: "Paris.", Prompt: 20, Completion: 3}
		case "Think slowly.":
			return &llmtest.Reply{Content: "Hmm", PingEvery: 100 * time.Millisecond}
		case "Capital of Italy?":
			// The first call hangs until the gateway is killed; the call
			// the recovered turn makes answers.
			if italy.Add(1) == 1 {
				return &llmtest.Reply{Content: "Let me", PingEvery: 100 * time.Millisecond}
			}
			return &llmtest.Reply{Content: "Rome.", Prompt: 20, Completion: 2}
		}
		return &llmtest.Reply{Content: "Some title"} // titles and the like
	})
	home := t.TempDir()
	skill := filepath.Join(home, "skills", "unit-convert")
	if err := os.MkdirAll(skill, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: unit-convert\ndescription: Convert between metric and imperial units\n---\n# Units\nMultiply inches by 2.54.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	g := startAPIGateway(t, srv, home, port)

	// Every route wants the key.
	for _, r := range [][2]string{{"POST", "/api/sessions"}, {"GET", "/api/jobs"}, {"POST", "/v1/runs"}, {"GET", "/v1/runs/run_x"},
		{"GET", "/v1/skills"}, {"GET", "/v1/toolsets"}, {"GET", "/v1/capabilities"}, {"PATCH", "/api/sessions/x"}, {"DELETE", "/api/jobs/0123456789ab"}} {
		if code, out := g.call(r[0], r[1], `{}`, false); code != 401 || !strings.Contains(out, "API key") {
			t.Fatalf("%s %s without the key: %d %s", r[0], r[1], code, out)
		}
	}

	// Malformed JSON is refused and writes nothing.
	listed := func() int {
		m := g.must(200, "GET", "/api/sessions", "")
		return len(m["data"].([]any))
	}
	before := listed()
	for _, path := range []string{"/api/sessions", "/v1/runs", "/api/jobs"} {
		if code, out := g.call("POST", path, `{"title": "x",`, true); code != 400 || !strings.Contains(out, "invalid_json") {
			t.Fatalf("POST %s with malformed JSON: %d %s", path, code, out)
		}
	}
	if n := listed(); n != before {
		t.Fatalf("a malformed request wrote a session: %d sessions, were %d", n, before)
	}
	if out := mustRun(t, home, "cron", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("a malformed request wrote a job: %s", out)
	}

	// Sessions: create → chat → messages → title → list → delete.
	created := g.must(201, "POST", "/api/sessions", `{"title": "First try"}`)
	sess := created["session"].(map[string]any)
	sid := sess["id"].(string)
	if sess["title"] != "First try" || sess["source"] != "api" || created["object"] != "hermes.session" {
		t.Fatalf("created: %v", created)
	}
	if code, out := g.call("POST", "/api/sessions", `{"id": "`+sid+`"}`, true); code != 409 || !strings.Contains(out, "session_exists") {
		t.Fatalf("the same id again: %d %s", code, out)
	}
	if code, out := g.call("POST", "/api/sessions", `{"id": "../etc"}`, true); code != 400 || !strings.Contains(out, "invalid_session_id") {
		t.Fatalf("a path as id: %d %s", code, out)
	}
	chat := g.must(200, "POST", "/api/sessions/"+sid+"/chat", `{"message": "What is two plus two?"}`)
	if msg := chat["message"].(map[string]any); msg["content"] != "Four." || chat["session_id"] != sid {
		t.Fatalf("chat: %v", chat)
	}
	if code, out := g.call("POST", "/api/sessions/"+sid+"/chat", `{}`, true); code != 400 || !strings.Contains(out, "missing_message") {
		t.Fatalf("chat without a message: %d %s", code, out)
	}
	msgs := g.must(200, "GET", "/api/sessions/"+sid+"/messages", "")["data"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["content"] != "What is two plus two?" || msgs[1].(map[string]any)["content"] != "Four." {
		t.Fatalf("messages: %v", msgs)
	}
	if code, out := g.call("PATCH", "/api/sessions/"+sid, `{"end_reason": "done"}`, true); code != 400 || !strings.Contains(out, "unsupported_session_field") {
		t.Fatalf("patch end_reason: %d %s", code, out)
	}
	patched := g.must(200, "PATCH", "/api/sessions/"+sid, `{"title": "Arithmetic"}`)
	if patched["session"].(map[string]any)["title"] != "Arithmetic" {
		t.Fatalf("patched: %v", patched)
	}
	found := false
	for _, s := range g.must(200, "GET", "/api/sessions", "")["data"].([]any) {
		if m := s.(map[string]any); m["id"] == sid {
			found = m["title"] == "Arithmetic" && m["message_count"].(float64) >= 2
		}
	}
	if !found {
		t.Fatalf("the list does not show %s titled Arithmetic", sid)
	}
	if out := mustRun(t, home, "sessions", "list"); !strings.Contains(out, "Arithmetic") {
		t.Fatalf("hermes sessions list:\n%s", out)
	}
	if del := g.must(200, "DELETE", "/api/sessions/"+sid, ""); del["deleted"] != true {
		t.Fatalf("delete: %v", del)
	}
	for _, r := range [][3]string{{"GET", "/api/sessions/" + sid, ""}, {"PATCH", "/api/sessions/" + sid, `{"title": "Again"}`}, {"DELETE", "/api/sessions/" + sid, ""}} {
		if code, out := g.call(r[0], r[1], r[2], true); code != 404 {
			t.Fatalf("%s %s after the delete: %d %s", r[0], r[1], code, out)
		}
	}

	// A run, started and polled to its end.
	started := g.must(202, "POST", "/v1/runs", `{"input": "Capital of France?"}`)
	runID := started["run_id"].(string)
	poll := func(id string) map[string]any {
		t.Helper()
		var st map[string]any
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			st = g.must(200, "GET", "/v1/runs/"+id, "")
			if s := st["status"]; s == "completed" || s == "failed" || s == "cancelled" {
				return st
			}
		}
		t.Fatalf("run %s did not end: %v\n%s", id, st, g.stderr.String())
		return nil
	}
	st := poll(runID)
	if st["status"] != "completed" || st["output"] != "Paris." || st["session_id"] != started["session_id"] || st["object"] != "hermes.run" {
		t.Fatalf("run: %v", st)
	}
	if code, out := g.call("GET", "/v1/runs/"+runID+"/events", "", true); code != 200 || !strings.Contains(out, `"event":"message.delta"`) || !strings.Contains(out, `"event":"run.completed"`) || !strings.Contains(out, "Paris.") {
		t.Fatalf("run events: %d %s", code, out)
	}
	if code, out := g.call("POST", "/v1/runs", `{"input": 42}`, true); code != 400 || !strings.Contains(out, "invalid_input") {
		t.Fatalf("a run without text: %d %s", code, out)
	}
	if code, out := g.call("POST", "/v1/runs/"+runID+"/stop", "", true); code != 409 || !strings.Contains(out, "run_not_active") {
		t.Fatalf("stop a finished run: %d %s", code, out)
	}
	// A run stopped while its model answers slowly is cancelled.
	slow := g.must(202, "POST", "/v1/runs", `{"input": "Think slowly."}`)["run_id"].(string)
	for end := time.Now().Add(10 * time.Second); g.must(200, "GET", "/v1/runs/"+slow, "")["status"] != "running"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the slow run did not start")
		}
	}
	if stop := g.must(200, "POST", "/v1/runs/"+slow+"/stop", ""); stop["status"] != "stopping" {
		t.Fatalf("stop: %v", stop)
	}
	if st := poll(slow); st["status"] != "cancelled" {
		t.Fatalf("stopped run: %v", st)
	}

	// Jobs, as `hermes cron list` sees them.
	job := g.must(200, "POST", "/api/jobs", `{"name": "morning-news", "schedule": "every 2h", "prompt": "Summarise the news"}`)["job"].(map[string]any)
	jid := job["id"].(string)
	if job["state"] != "scheduled" || job["enabled"] != true {
		t.Fatalf("job: %v", job)
	}
	cronList := func() string { return mustRun(t, home, "cron", "list") }
	if out := cronList(); !strings.Contains(out, jid) || !strings.Contains(out, "morning-news") || !strings.Contains(out, "active") {
		t.Fatalf("cron list after create:\n%s", out)
	}
	if jobs := g.must(200, "GET", "/api/jobs", "")["jobs"].([]any); len(jobs) != 1 || jobs[0].(map[string]any)["id"] != jid {
		t.Fatalf("jobs: %v", jobs)
	}
	if p := g.must(200, "POST", "/api/jobs/"+jid+"/pause", "")["job"].(map[string]any); p["state"] != "paused" || p["enabled"] != false {
		t.Fatalf("paused: %v", p)
	}
	if out := cronList(); !strings.Contains(out, "paused") {
		t.Fatalf("cron list after pause:\n%s", out)
	}
	if jobs := g.must(200, "GET", "/api/jobs", "")["jobs"].([]any); len(jobs) != 0 {
		t.Fatalf("a paused job listed without include_disabled: %v", jobs)
	}
	if jobs := g.must(200, "GET", "/api/jobs?include_disabled=true", "")["jobs"].([]any); len(jobs) != 1 {
		t.Fatalf("jobs with include_disabled: %v", jobs)
	}
	if code, out := g.call("POST", "/api/jobs", `{"name": "bad", "schedule": "whenever"}`, true); code != 400 || !strings.Contains(out, "invalid_job") {
		t.Fatalf("a bad schedule: %d %s", code, out)
	}
	if code, out := g.call("GET", "/api/jobs/not-an-id", "", true); code != 400 || !strings.Contains(out, "invalid_job_id") {
		t.Fatalf("a bad job id: %d %s", code, out)
	}
	if code, _ := g.call("GET", "/api/jobs/0123456789ab", "", true); code != 404 {
		t.Fatalf("an unknown job: %d", code)
	}
	g.must(200, "DELETE", "/api/jobs/"+jid, "")
	if out := cronList(); strings.Contains(out, jid) {
		t.Fatalf("cron list after delete:\n%s", out)
	}
	if out := mustRun(t, home, "cron", "list", "--all"); !strings.Contains(out, jid) || !strings.Contains(out, "removed") {
		t.Fatalf("cron list --all after delete:\n%s", out)
	}

	// Skills and toolsets: the real ones.
	skills := g.must(200, "GET", "/v1/skills", "")["data"].([]any)
	var seen bool
	for _, s := range skills {
		if m := s.(map[string]any); m["name"] == "unit-convert" {
			seen = m["description"] == "Convert between metric and imperial units"
		}
	}
	if !seen {
		t.Fatalf("skills: %v", skills)
	}
	if doc := g.must(200, "GET", "/v1/skills/unit-convert", "")["skill"].(map[string]any); !strings.Contains(doc["content"].(string), "Multiply inches by 2.54.") {
		t.Fatalf("skill: %v", doc)
	}
	if code, _ := g.call("GET", "/v1/skills/no-such-skill", "", true); code != 404 {
		t.Fatalf("an unknown skill: %d", code)
	}
	toolsets := g.must(200, "GET", "/v1/toolsets", "")["data"].([]any)
	var terminal bool
	for _, ts := range toolsets {
		m := ts.(map[string]any)
		for _, name := range m["tools"].([]any) {
			if name == "terminal" {
				terminal = m["enabled"] == true
			}
		}
	}
	if !terminal {
		t.Fatalf("toolsets: no enabled toolset has the terminal tool: %v", toolsets)
	}
	caps := g.must(200, "GET", "/v1/capabilities", "")
	if f := caps["features"].(map[string]any); f["run_submission"] != true || f["jobs_admin"] != true || f["skills_api"] != true {
		t.Fatalf("capabilities: %v", caps)
	}
	if eps := caps["endpoints"].(map[string]any); eps["runs"] == nil || eps["session_delete"] == nil || eps["jobs"] == nil {
		t.Fatalf("capabilities' endpoints: %v", eps)
	}

	// A run in flight when the gateway is killed is polled after the
	// restart: the events say it runs, and then how it ended.
	inflight := g.must(202, "POST", "/v1/runs", `{"input": "Capital of Italy?"}`)["run_id"].(string)
	for end := time.Now().Add(10 * time.Second); italy.Load() == 0 || g.must(200, "GET", "/v1/runs/"+inflight, "")["status"] != "running"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the run did not start")
		}
	}
	g.kill()

	// After a restart the runs are answered from the events.
	g = startAPIGateway(t, srv, home, port)
	if st := poll(inflight); st["status"] != "completed" || st["output"] != "Rome." {
		t.Fatalf("the run the restart recovered: %v", st)
	}
	if st := g.must(200, "GET", "/v1/runs/"+runID, ""); st["status"] != "completed" || st["output"] != "Paris." {
		t.Fatalf("the run after a restart: %v", st)
	}
	if code, out := g.call("GET", "/v1/runs/"+runID+"/events", "", true); code != 200 || !strings.Contains(out, `"event":"run.completed"`) || !strings.Contains(out, "Paris.") {
		t.Fatalf("run events after a restart: %d %s", code, out)
	}
	if st := g.must(200, "GET", "/v1/runs/"+slow, ""); st["status"] != "cancelled" {
		t.Fatalf("the stopped run after a restart: %v", st)
	}
	if code, out := g.call("GET", "/v1/runs/run_nothing", "", true); code != 404 || !strings.Contains(out, "run_not_found") {
		t.Fatalf("an unknown run: %d %s", code, out)
	}
}
