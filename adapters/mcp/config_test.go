package mcp

import (
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestConfigShape(t *testing.T) {
	var cfg map[string]ServerConfig
	err := yaml.Unmarshal([]byte(`
filesystem:
  command: npx
  args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
  env: {DEBUG: "1"}
  timeout: 120
  connect_timeout: 1.5
  tools:
    include: read_file
remote:
  url: https://mcp.example.com/mcp
  headers: {Authorization: "Bearer ${TOKEN}"}
  timeout: 2m
  enabled: false
  approval: true
  tools: {exclude: [delete_*], prompts: false}
old:
  url: http://127.0.0.1:8000/sse
  transport: sse
  sampling: {enabled: true}
`), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	fs, remote, old := cfg["filesystem"], cfg["remote"], cfg["old"]
	if fs.Kind() != Stdio || fs.timeout() != 120*time.Second || fs.connectTimeout() != 1500*time.Millisecond ||
		strings.Join(fs.Tools.Include, ",") != "read_file" || !fs.IsEnabled() || fs.Env["DEBUG"] != "1" {
		t.Fatalf("filesystem: %+v", fs)
	}
	if remote.Kind() != HTTP || remote.timeout() != 2*time.Minute || remote.IsEnabled() || !remote.Approval ||
		remote.Tools.Prompts == nil || *remote.Tools.Prompts || remote.connectTimeout() != DefaultConnectTimeout {
		t.Fatalf("remote: %+v", remote)
	}
	if old.Kind() != SSE || strings.Join(old.Unused(), ",") != "sampling" {
		t.Fatalf("old: %+v %v", old, old.Unused())
	}
	for name, c := range cfg {
		if err := c.Validate(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	var bad map[string]ServerConfig
	if err := yaml.Unmarshal([]byte("x: {command: a, timeout: soon}"), &bad); err == nil || !strings.Contains(err.Error(), "not a number of seconds") {
		t.Fatalf("timeout: soon: %v", err)
	}
	out, _ := yaml.Marshal(ServerConfig{Command: "x", Timeout: Seconds(30 * time.Second)})
	if !strings.Contains(string(out), "timeout: 30\n") {
		t.Fatalf("marshalled: %s", out)
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  ServerConfig
		want string
	}{
		{"a b", ServerConfig{Command: "x"}, `MCP server name "a b"`},
		{"s", ServerConfig{}, "mcp_servers.s: set command"},
		{"s", ServerConfig{Command: "x", URL: "http://h"}, "either command or url"},
		{"s", ServerConfig{URL: "ftp://h"}, "mcp_servers.s.url"},
		{"s", ServerConfig{URL: "http://h", Transport: "carrier-pigeon"}, "mcp_servers.s.transport"},
		{"s", ServerConfig{Command: "x", Transport: "sse"}, "needs url"},
		{"s", ServerConfig{URL: "http://h", Transport: "stdio"}, "needs command"},
		{"s", ServerConfig{Command: "x", Headers: map[string]string{"A": "b"}}, "headers are for url servers"},
		{"s", ServerConfig{Command: "x", Timeout: -1}, "mcp_servers.s.timeout must not be negative"},
		{"s", ServerConfig{Command: "x", Tools: ToolFilter{Include: Names{"[x"}}}, "bad pattern"},
	} {
		err := c.cfg.Validate(c.name)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("HERMES_TEST_VAL", "from-env")
	s := NewServer("s", ServerConfig{Command: "x", Env: map[string]string{"A": "${HERMES_TEST_VAL}", "PATH": "/mine"}},
		&Options{Env: func() []string { return []string{"PATH=/usr/bin", "HOME=/home/ada"} }})
	got := strings.Join(s.environ(), " ")
	for _, w := range []string{"HOME=/home/ada", "A=from-env", "PATH=/mine"} {
		if !strings.Contains(got, w) {
			t.Fatalf("environ %q lacks %s", got, w)
		}
	}
	if strings.Contains(got, "/usr/bin") {
		t.Fatalf("the server's PATH did not win: %s", got)
	}
	if expand("$HOME and ${HERMES_TEST_VAL}") != "$HOME and from-env" {
		t.Fatal(expand("$HOME and ${HERMES_TEST_VAL}"))
	}
}
