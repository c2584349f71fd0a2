package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/mcp/mcptest"
	"github.com/hermes-go/hermes/schema"
)

func TestFakeServerOverStdio(t *testing.T) {
	cache := t.TempDir()
	s := start(t, "fake", fake(mcptest.Basic), &Options{CacheDir: cache})
	st := s.Status()
	if st.State != Connected || st.Peer != "hermes-fake-basic 0.0.1" || st.Handshake <= 0 || st.Transport != Stdio {
		t.Fatalf("status: %+v", st)
	}
	echo := toolOf(t, s, "mcp_fake_echo")
	if f := echo.Flags(); !f.ReadOnly || f.Server != "fake" {
		t.Fatalf("flags: %+v (readOnlyHint and the server)", f)
	}
	out, err := run(t, echo, `{"text":"hello"}`)
	if err != nil || out != "echo: hello" {
		t.Fatalf("echo: %q, %v", out, err)
	}

	t.Run("isError is an error", func(t *testing.T) {
		out, err := run(t, toolOf(t, s, "mcp_fake_fail"), `{}`)
		if err == nil || err.Error() != "the disk is full" || out != "" {
			t.Fatalf("fail: %q, %v", out, err)
		}
	})
	t.Run("renamed properties reach the server under their own names", func(t *testing.T) {
		odd := toolOf(t, s, "mcp_fake_odd_schema")
		props := odd.Spec().Parameters["properties"].(map[string]any)
		if _, ok := props["bad_key_"]; !ok {
			t.Fatalf("property names: %v", props)
		}
		out, err := run(t, odd, `{"at":{"x":1,"y":2},"bad_key_":"v"}`)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		json.Unmarshal([]byte(out), &got)
		if got["bad key!"] != "v" || got["bad_key_"] != nil {
			t.Fatalf("the server got %s", out)
		}
	})
	t.Run("images are saved, structured content kept", func(t *testing.T) {
		out, err := run(t, toolOf(t, s, "mcp_fake_image"), `{}`)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`saved to (\S+) \(\d+ bytes\)`).FindStringSubmatch(out)
		if m == nil || !strings.HasPrefix(m[1], cache) {
			t.Fatalf("image: %q", out)
		}
		if data, err := os.ReadFile(m[1]); err != nil || !bytes.Equal(data, mcptest.TinyPNG) {
			t.Fatalf("saved image: %v (%d bytes)", err, len(data))
		}
		mustContain(t, out, "image image/png", `{"height":1,"width":1}`)
	})
	t.Run("resources and prompts", func(t *testing.T) {
		out, err := run(t, toolOf(t, s, "mcp_fake_list_resources"), `{}`)
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, out, "fake://notes/today", "today", "text/plain", "Today's notes", "mcp_fake_read_resource")
		out, err = run(t, toolOf(t, s, "mcp_fake_read_resource"), `{"uri":"fake://notes/today"}`)
		if err != nil || out != "buy milk" {
			t.Fatalf("read_resource: %q, %v", out, err)
		}
		if _, err := run(t, toolOf(t, s, "mcp_fake_read_resource"), `{"uri":"fake://nope"}`); err == nil {
			t.Fatal("reading a resource that is not there succeeded")
		}
		if _, err := run(t, toolOf(t, s, "mcp_fake_read_resource"), `{}`); err == nil || !strings.Contains(err.Error(), "mcp_fake_list_resources") {
			t.Fatalf("no uri: %v", err)
		}
		out, err = run(t, toolOf(t, s, "mcp_fake_list_prompts"), `{}`)
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, out, "greet", "Greet someone.", "who (string, required)")
		out, err = run(t, toolOf(t, s, "mcp_fake_get_prompt"), `{"name":"greet","arguments":{"who":"Ada"}}`)
		if err != nil || out != "[user]\nSay hello to Ada" {
			t.Fatalf("get_prompt: %q, %v", out, err)
		}
		if s.Status().State != Connected {
			t.Fatalf("an error answer cost the connection: %+v", s.Status())
		}
	})
	t.Run("tools/list_changed refreshes the tools", func(t *testing.T) {
		gen := s.Generation()
		out, err := run(t, toolOf(t, s, "mcp_fake_add_tool"), `{}`)
		if err != nil || out != "added extra_1" {
			t.Fatalf("add_tool: %q, %v", out, err)
		}
		eventually(t, "the added tool is listed", func() bool {
			for _, x := range s.Tools() {
				if x.Spec().Name == "mcp_fake_extra_1" {
					return true
				}
			}
			return false
		})
		if s.Generation() == gen {
			t.Fatal("the generation did not change")
		}
		if out, err := run(t, toolOf(t, s, "mcp_fake_extra_1"), `{}`); err != nil || out != "extra_1 ran" {
			t.Fatalf("the added tool: %q, %v", out, err)
		}
	})
}

func TestFilterAndUtilitySwitches(t *testing.T) {
	no := false
	cfg := fake(mcptest.Basic)
	cfg.Tools = ToolFilter{Exclude: Names{"add_*", "fail"}, Prompts: &no}
	s := start(t, "f", cfg, nil)
	var names []string
	for _, x := range s.Tools() {
		names = append(names, x.Spec().Name)
	}
	if got := strings.Join(names, " "); got != "mcp_f_echo mcp_f_image mcp_f_odd_schema mcp_f_list_resources mcp_f_read_resource" {
		t.Fatalf("tools: %s", got)
	}
	cfg.Tools = ToolFilter{Include: Names{"echo"}, Exclude: Names{"echo"}}
	s = start(t, "g", cfg, nil)
	if n := len(s.Tools()); n != 5 { // echo (include wins over exclude) and the four utility tools
		t.Fatalf("include: %d tools", n)
	}
}

func TestStreamableHTTPWithHeaders(t *testing.T) {
	t.Setenv("FAKE_MCP_TOKEN", "s3cret-token-value")
	srv := mcptest.NewServer(mcptest.Basic)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret-token-value" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close) // after the servers' Close: cleanups run last first
	cfg := ServerConfig{URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer ${FAKE_MCP_TOKEN}"}, ConnectTimeout: Seconds(10 * time.Second)}
	s := start(t, "remote", cfg, nil)
	if st := s.Status(); st.State != Connected || st.Transport != HTTP {
		t.Fatalf("status: %+v", st)
	}
	out, err := run(t, toolOf(t, s, "mcp_remote_echo"), `{"text":"over http"}`)
	if err != nil || out != "echo: over http" {
		t.Fatalf("echo: %q, %v", out, err)
	}
	if _, err := run(t, toolOf(t, s, "mcp_remote_add_tool"), `{}`); err != nil {
		t.Fatal(err)
	}
	eventually(t, "list_changed over the standalone SSE stream", func() bool { return len(s.Tools()) == 10 })

	bad := cfg
	bad.Headers = map[string]string{"Authorization": "Bearer wrong"}
	bad.ConnectTimeout = Seconds(3 * time.Second)
	s = start(t, "refused", bad, nil)
	if st := s.Status(); st.State != Failed || !strings.Contains(st.Error, "Unauthorized") {
		t.Fatalf("a refused connection: %+v", st)
	}
}

// TestCrashMidCall: the server dies during a call. The call fails saying
// so (with the end of its stderr), the server is started again, and the
// next call works.
func TestCrashMidCall(t *testing.T) {
	s := start(t, "crashy", fake(mcptest.Crash), nil)
	_, err := run(t, toolOf(t, s, "mcp_crashy_crash"), `{}`)
	if err == nil {
		t.Fatal("a call the server died in succeeded")
	}
	mustContain(t, err.Error(), "MCP server crashy", "segmentation fault (on purpose)")
	out, err := run(t, toolOf(t, s, "mcp_crashy_echo"), `{"text":"again"}`)
	if err != nil || out != "echo: again" {
		t.Fatalf("after the crash: %q, %v (status %+v)", out, err, s.Status())
	}
	if st := s.Status(); st.State != Connected {
		t.Fatalf("status: %+v", st)
	}
}

// TestHangingTool: a call that never returns times out at the server's
// timeout; the connection is still good for the next call.
func TestHangingTool(t *testing.T) {
	cfg := fake(mcptest.Hang)
	cfg.Timeout = Seconds(500 * time.Millisecond)
	s := start(t, "stuck", cfg, nil)
	_, err := run(t, toolOf(t, s, "mcp_stuck_hang"), `{}`)
	if err == nil || !strings.Contains(err.Error(), "timed out after 500ms (mcp_servers.stuck.timeout)") {
		t.Fatalf("hang: %v", err)
	}
	if out, err := run(t, toolOf(t, s, "mcp_stuck_echo"), `{"text":"still here"}`); err != nil || out != "echo: still here" {
		t.Fatalf("after the timeout: %q, %v", out, err)
	}
	// The caller's own cancellation (Ctrl-C, the agent's tool_timeout)
	// ends the call too.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	if _, err := toolOf(t, s, "mcp_stuck_hang").Run(ctx, json.RawMessage(`{}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// TestHangingHandshake: a server that never answers is given up at
// connect_timeout: Wait returns then, the server is reported failed, and
// it has no tools; calls to it say why.
func TestHangingHandshake(t *testing.T) {
	cfg := fake(mcptest.HangHandshake)
	cfg.ConnectTimeout = Seconds(700 * time.Millisecond)
	s := start(t, "mute", cfg, nil)
	st := s.Status()
	if st.State == Connected || len(s.Tools()) != 0 {
		t.Fatalf("status: %+v", st)
	}
	eventually(t, "the failure is reported", func() bool { return s.Status().State == Failed })
	mustContain(t, s.Status().Error, "no answer within connect_timeout 700ms")
	u := &utility{s: s, kind: "list_resources"}
	if _, err := u.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "is not connected") {
		t.Fatalf("a call to a failed server: %v", err)
	}
}

// TestMalformedMessage: a line that is not JSON ends the connection; the
// call fails, the server is reconnected, and the next call works.
func TestMalformedMessage(t *testing.T) {
	s := start(t, "garbler", fake(mcptest.Malformed), nil)
	if _, err := run(t, toolOf(t, s, "mcp_garbler_garble"), `{}`); err == nil {
		t.Fatal("a call answered by a malformed message succeeded")
	}
	if out, err := run(t, toolOf(t, s, "mcp_garbler_echo"), `{"text":"ok"}`); err != nil || out != "echo: ok" {
		t.Fatalf("after the malformed message: %q, %v (status %+v)", out, err, s.Status())
	}
}

// TestTwoHundredTools lists 200 tools over four pages.
func TestTwoHundredTools(t *testing.T) {
	s := start(t, "big", fake(mcptest.Many), nil)
	if n := len(s.Tools()); n != 201 {
		t.Fatalf("%d tools, want 200 and echo", n)
	}
	out, err := run(t, toolOf(t, s, "mcp_big_tool_150"), `{"n":3}`)
	if err != nil || out != `tool_150 got {"n":3}` {
		t.Fatalf("tool_150: %q, %v", out, err)
	}
}

// TestServerThatExits is reported failed with its stderr, and retried.
func TestServerThatExits(t *testing.T) {
	s := start(t, "broken", fake(mcptest.Exit), nil)
	eventually(t, "a second attempt", func() bool { return s.Status().Attempts >= 2 })
	st := s.Status()
	if st.State != Failed {
		t.Fatalf("status: %+v", st)
	}
	mustContain(t, st.Error, "missing API key FAKE_TOKEN")
}

func TestMissingCommand(t *testing.T) {
	s := start(t, "nope", ServerConfig{Command: "/nonexistent/mcp-server"}, nil)
	if st := s.Status(); st.State != Failed || !strings.Contains(st.Error, "no such file") {
		t.Fatalf("status: %+v", st)
	}
}

func TestApproval(t *testing.T) {
	cfg := fake(mcptest.Basic)
	cfg.Approval = true
	allow := &memAllow{}
	s := start(t, "guarded", cfg, &Options{Allow: allow})
	echo := toolOf(t, s, "mcp_guarded_echo")
	rec := &recorder{answers: []string{"deny", "session"}}
	env := rec.env()
	ctx := tool.WithEnv(context.Background(), env)
	if _, err := echo.Run(ctx, json.RawMessage(`{"text":"x"}`)); err == nil || !strings.Contains(err.Error(), "denied by the user") {
		t.Fatalf("denied: %v", err)
	}
	if len(rec.asked) != 1 || rec.asked[0].Kind != "approval" || !strings.Contains(rec.asked[0].Text, `{"text":"x"}`) {
		t.Fatalf("asked: %+v", rec.asked)
	}
	for range 2 {
		if out, err := echo.Run(ctx, json.RawMessage(`{"text":"y"}`)); err != nil || out != "echo: y" {
			t.Fatalf("approved for the session: %q, %v", out, err)
		}
	}
	if len(rec.asked) != 2 {
		t.Fatalf("asked %d times; the session approval was not kept", len(rec.asked))
	}
	var got []string
	for _, e := range rec.events {
		a := e.(schema.ApprovalDecided)
		got = append(got, a.Decision+"/"+a.By)
		if a.Pattern != "mcp_guarded_echo" {
			t.Fatalf("pattern: %+v", a)
		}
	}
	if strings.Join(got, " ") != "deny/user session/user session/session" {
		t.Fatalf("decisions recorded: %v", got)
	}
	// Resource and prompt tools read only: never asked.
	if _, err := toolOf(t, s, "mcp_guarded_list_prompts").Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// Nobody to ask: denied; yolo: allowed; the allow-list: allowed.
	if _, err := echo.Run(tool.WithEnv(context.Background(), &tool.Env{Values: tool.NewSessionValues()}), json.RawMessage(`{"text":"z"}`)); err == nil {
		t.Fatal("ran with nobody to ask")
	}
	if _, err := echo.Run(tool.WithEnv(context.Background(), &tool.Env{Values: tool.NewSessionValues(), Yolo: true}), json.RawMessage(`{"text":"z"}`)); err != nil {
		t.Fatalf("yolo: %v", err)
	}
	allow.Add("mcp_guarded_*")
	if _, err := echo.Run(tool.WithEnv(context.Background(), &tool.Env{Values: tool.NewSessionValues()}), json.RawMessage(`{"text":"z"}`)); err != nil {
		t.Fatalf("allow-listed server: %v", err)
	}
}

type memAllow struct{ m map[string]bool }

func (a *memAllow) Has(p string) bool { return a.m[p] }
func (a *memAllow) Add(p string) error {
	if a.m == nil {
		a.m = map[string]bool{}
	}
	a.m[p] = true
	return nil
}

func TestManagerStartsServersInParallel(t *testing.T) {
	cfgs := map[string]ServerConfig{}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		cfgs[n] = fake(mcptest.Basic)
	}
	mute := fake(mcptest.HangHandshake)
	mute.ConnectTimeout = Seconds(300 * time.Millisecond)
	cfgs["mute"] = mute
	off := false
	cfgs["off"] = ServerConfig{Command: "x", Enabled: &off}
	m, err := NewManager(cfgs, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Servers()) != 6 || strings.Join(m.Disabled(), ",") != "off" {
		t.Fatalf("servers %d, disabled %v", len(m.Servers()), m.Disabled())
	}
	m.Start()
	m.Wait()
	for _, s := range m.Servers() {
		if s.Name() != "mute" && s.Status().State != Connected {
			t.Errorf("%s: %+v", s.Name(), s.Status())
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range m.Servers() {
		if st := s.Status(); st.State != Closed {
			t.Errorf("%s after Close: %+v", s.Name(), st)
		}
	}
	if _, err := NewManager(map[string]ServerConfig{"my-fs": {Command: "x"}, "my_fs": {Command: "y"}}, nil); err == nil || !strings.Contains(err.Error(), "would both name their tools mcp_my_fs_*") {
		t.Fatalf("names alike: %v", err)
	}
	if _, err := NewManager(map[string]ServerConfig{"bad name": {Command: "x"}, "empty": {}}, nil); err == nil ||
		!strings.Contains(err.Error(), "bad name") || !strings.Contains(err.Error(), "mcp_servers.empty: set command") {
		t.Fatalf("invalid entries: %v", err)
	}
}

// TestHTTPServerRestarts: the peer of a streamable HTTP server goes away
// and comes back on the same address; Hermes finds out, reconnects, and
// the tools work again.
func TestHTTPServerRestarts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	serveOn := func(l net.Listener) *httptest.Server {
		srv := mcptest.NewServer(mcptest.Basic)
		ts := httptest.NewUnstartedServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
		ts.Listener.Close()
		ts.Listener = l
		ts.Start()
		return ts
	}
	first := serveOn(l)
	s := start(t, "remote", ServerConfig{URL: "http://" + addr + "/mcp", ConnectTimeout: Seconds(5 * time.Second)}, nil)
	defer s.Close() // before the servers' cleanups, which wait for its streams
	echo := toolOf(t, s, "mcp_remote_echo")
	if out, err := run(t, echo, `{"text":"one"}`); err != nil || out != "echo: one" {
		t.Fatalf("before: %q %v", out, err)
	}
	first.CloseClientConnections()
	first.Close()
	l2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	second := serveOn(l2)
	t.Cleanup(second.Close)
	// The call finds the old session gone (the new peer never heard of
	// it, so the call did not run): it is made again on a new session.
	if out, err := run(t, echo, `{"text":"two"}`); err != nil || out != "echo: two" {
		t.Fatalf("after the restart: %q %v", out, err)
	}
	if st := s.Status(); st.State != Connected {
		t.Fatalf("status: %+v", st)
	}
}
