package mcp

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/mcp/mcptest"
)

// The reference servers of the MCP project, from npm: real peers written
// with the TypeScript SDK (.ci/run installs them; HERMES_NODE_MODULES
// points at them).

// everythingHTTP starts server-everything serving transport ("streamableHttp"
// or "sse") on a free loopback port until the test ends, and returns its
// base URL.
func everythingHTTP(t testing.TB, transport string) string {
	t.Helper()
	script := mcptest.Reference(t, "server-everything")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", script, transport)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	eventually(t, "server-everything listens on "+addr, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return "http://" + addr
}

func TestEverythingOverStdio(t *testing.T) {
	script := mcptest.Reference(t, "server-everything")
	exerciseEverything(t, ServerConfig{Command: "node", Args: []string{script, "stdio"}})
}

func TestEverythingOverStreamableHTTP(t *testing.T) {
	exerciseEverything(t, ServerConfig{URL: everythingHTTP(t, "streamableHttp") + "/mcp"})
}

func TestEverythingOverSSE(t *testing.T) {
	exerciseEverything(t, ServerConfig{URL: everythingHTTP(t, "sse") + "/sse", Transport: "sse"})
}

// exerciseEverything calls server-everything's tools, resources and
// prompts, its long-running operation and its error cases.
func exerciseEverything(t *testing.T, cfg ServerConfig) {
	cfg.ConnectTimeout = Seconds(30 * time.Second)
	s := start(t, "everything", cfg, &Options{CacheDir: t.TempDir()})
	if st := s.Status(); st.State != Connected || !strings.HasPrefix(st.Peer, "mcp-servers/everything") {
		t.Fatalf("status: %+v", st)
	}
	call := func(tool, args string) (string, error) { return run(t, toolOf(t, s, "mcp_everything_"+tool), args) }
	ok := func(tool, args string, wants ...string) string {
		t.Helper()
		out, err := call(tool, args)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		mustContain(t, out, wants...)
		return out
	}
	ok("echo", `{"message":"hi there"}`, "hi there")
	ok("get_sum", `{"a":2,"b":40}`, "42")
	out := ok("get_tiny_image", `{}`, "image image/png saved to ")
	if m := regexp.MustCompile(`saved to (\S+) `).FindStringSubmatch(out); m == nil {
		t.Fatalf("image: %s", out)
	} else if data, err := os.ReadFile(m[1]); err != nil || !strings.HasPrefix(string(data), "\x89PNG") {
		t.Fatalf("the saved image is not a PNG: %v", err)
	}
	ok("get_structured_content", `{"location":"Chicago"}`, "temperature")
	ok("get_resource_links", `{"count":2}`, "[resource link: uri=demo://resource/", "read it with mcp_everything_read_resource")
	ok("trigger_long_running_operation", `{"duration":0.4,"steps":2}`, "Long running operation completed")
	ok("list_resources", `{}`, "demo://resource/static/document/", "Resource templates")
	ok("read_resource", `{"uri":"demo://resource/dynamic/text/1"}`, "Resource 1")
	ok("list_prompts", `{}`, "simple-prompt", "args-prompt", "city (string, required)")
	ok("get_prompt", `{"name":"args-prompt","arguments":{"city":"Lisbon"}}`, "[user]", "Lisbon")
	// Error cases: arguments the server refuses, a tool it does not have.
	if _, err := call("get_sum", `{"a":"two"}`); err == nil || !strings.Contains(err.Error(), "Input validation error") {
		t.Fatalf("bad arguments: %v", err)
	}
	ghost := &serverTool{s: s, raw: "no-such-tool"}
	if _, err := run(t, ghost, `{}`); err == nil {
		t.Fatal("a tool the server does not have ran")
	}
	if _, err := call("read_resource", `{"uri":"demo://nowhere"}`); err == nil {
		t.Fatal("a resource the server does not have was read")
	}
	if st := s.Status(); st.State != Connected {
		t.Fatalf("the errors cost the connection: %+v", st)
	}
}

// TestEverythingGetsAScrubbedEnvironment: the child starts from the
// environment Options.Env gives (Hermes passes its own without secrets),
// plus the server's env.
func TestEverythingGetsAScrubbedEnvironment(t *testing.T) {
	script := mcptest.Reference(t, "server-everything")
	t.Setenv("HERMES_TEST_SECRET_TOKEN", "sk-should-never-reach-the-child")
	opts := &Options{Env: func() []string {
		var out []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "HERMES_TEST_SECRET_TOKEN=") {
				out = append(out, kv)
			}
		}
		return out
	}}
	s := start(t, "everything", ServerConfig{Command: "node", Args: []string{script, "stdio"}, Env: map[string]string{"MY_SETTING": "blue"}}, opts)
	out, err := run(t, toolOf(t, s, "mcp_everything_get_env"), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, `"MY_SETTING": "blue"`, `"PATH"`)
	if strings.Contains(out, "sk-should-never-reach-the-child") {
		t.Fatal("the secret reached the server")
	}
}

func TestFilesystemServer(t *testing.T) {
	script := mcptest.Reference(t, "server-filesystem")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("line one\nline two\n"), 0o644)
	s := start(t, "fs", ServerConfig{Command: "node", Args: []string{script, dir}, ConnectTimeout: Seconds(30 * time.Second),
		Tools: ToolFilter{Exclude: Names{"read_file"}}}, nil) // read_file is deprecated for read_text_file
	for _, x := range s.Tools() {
		if x.Spec().Name == "mcp_fs_read_file" {
			t.Fatal("tools.exclude was not applied")
		}
	}
	out, err := run(t, toolOf(t, s, "mcp_fs_list_directory"), fmt.Sprintf(`{"path":%q}`, dir))
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "[FILE] notes.txt")
	out, err = run(t, toolOf(t, s, "mcp_fs_read_text_file"), fmt.Sprintf(`{"path":%q}`, filepath.Join(dir, "notes.txt")))
	if err != nil || out != "line one\nline two\n" {
		t.Fatalf("read_text_file: %q, %v", out, err)
	}
	if _, err := run(t, toolOf(t, s, "mcp_fs_write_file"), fmt.Sprintf(`{"path":%q,"content":"x"}`, filepath.Join(dir, "new.txt"))); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "new.txt")); string(b) != "x" {
		t.Fatalf("write_file wrote %q", b)
	}
	// Outside its allowed directory: the server says no (isError).
	if _, err := run(t, toolOf(t, s, "mcp_fs_read_text_file"), `{"path":"/etc/hostname"}`); err == nil || !strings.Contains(err.Error(), "ccess denied") {
		t.Fatalf("outside the allowed directory: %v", err)
	}
}
