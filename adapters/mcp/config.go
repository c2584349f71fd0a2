package mcp

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hermes-go/hermes/adapters/secrets"
)

// Defaults of Hermes' mcp_servers keys.
const (
	DefaultTimeout        = 300 * time.Second // one tool call
	DefaultConnectTimeout = 60 * time.Second  // connecting and the handshake
	DefaultKeepAlive      = 180 * time.Second // pings that find a dead peer
)

// Transports a server can be reached by.
const (
	Stdio = "stdio"
	HTTP  = "http" // streamable HTTP
	SSE   = "sse"  // the HTTP+SSE transport of 2024-11-05 servers
)

// ServerConfig is one entry of mcp_servers: in config.yaml, in Hermes'
// shape. A server is a command (stdio) or a url (streamable HTTP, or SSE
// with transport: sse).
type ServerConfig struct {
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
	// Transport is empty (stdio for a command, streamable HTTP for a
	// url), "http"/"streamable_http", or "sse".
	Transport string `yaml:"transport"`
	// Timeout bounds one tool call; ConnectTimeout the connection and
	// handshake, which is also the longest the first prompt waits for the
	// server. Seconds, or a duration such as 1m30s.
	Timeout        Seconds `yaml:"timeout"`
	ConnectTimeout Seconds `yaml:"connect_timeout"`
	// KeepAliveInterval is how often an idle connection is pinged (a peer
	// that stops answering is reconnected).
	KeepAliveInterval Seconds `yaml:"keepalive_interval"`
	// Enabled false keeps the entry without starting the server.
	Enabled *bool `yaml:"enabled"`
	// Tools selects the server's tools and utility tools.
	Tools ToolFilter `yaml:"tools"`
	// Approval true makes every tool of the server ask the person before
	// it runs, as dangerous commands do.
	Approval bool `yaml:"approval"`

	// Keys of the Python Hermes Agent this build accepts and does not
	// use, so that one config.yaml serves both (a warning names them).
	SupportsParallelToolCalls any `yaml:"supports_parallel_tool_calls"`
	SkipPreflight             any `yaml:"skip_preflight"`
	Sampling                  any `yaml:"sampling"`
	Elicitation               any `yaml:"elicitation"`
	Lifecycle                 any `yaml:"lifecycle"`
	IdleTimeoutSeconds        any `yaml:"idle_timeout_seconds"`
	MaxLifetimeSeconds        any `yaml:"max_lifetime_seconds"`
	SSLVerify                 any `yaml:"ssl_verify"`
	Auth                      any `yaml:"auth"`
	OAuth                     any `yaml:"oauth"`
	ClientCert                any `yaml:"client_cert"`
	ClientKey                 any `yaml:"client_key"`
}

// ToolFilter is a server's tools: entry. Include, when set, keeps only
// the tools it names; otherwise Exclude drops the tools it names. Names
// are the server's own (read_file, not mcp_fs_read_file) and may use
// path.Match wildcards. Resources and Prompts false leave out the
// list_resources/read_resource and list_prompts/get_prompt tools.
type ToolFilter struct {
	Include   Names `yaml:"include"`
	Exclude   Names `yaml:"exclude"`
	Resources *bool `yaml:"resources"`
	Prompts   *bool `yaml:"prompts"`
}

// Names is a list of names; config may give one name as a string.
type Names []string

// UnmarshalYAML accepts a string or a list of strings.
func (n *Names) UnmarshalYAML(v *yaml.Node) error {
	if v.Kind == yaml.ScalarNode {
		*n = Names{v.Value}
		return nil
	}
	var l []string
	if err := v.Decode(&l); err != nil {
		return err
	}
	*n = l
	return nil
}

// Seconds is a duration written as a number of seconds (Hermes' form) or
// as a Go duration ("90s", "2m").
type Seconds time.Duration

// UnmarshalYAML reads a number of seconds or a duration.
func (s *Seconds) UnmarshalYAML(v *yaml.Node) error {
	if f, err := strconv.ParseFloat(v.Value, 64); err == nil {
		*s = Seconds(time.Duration(f * float64(time.Second)))
		return nil
	}
	d, err := time.ParseDuration(v.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a number of seconds or a duration such as 90s", v.Line, v.Value)
	}
	*s = Seconds(d)
	return nil
}

// MarshalYAML writes whole seconds as a number.
func (s Seconds) MarshalYAML() (any, error) {
	d := time.Duration(s)
	if d%time.Second == 0 {
		return int64(d / time.Second), nil
	}
	return d.String(), nil
}

// IsEnabled reports whether the server is to be started.
func (c ServerConfig) IsEnabled() bool { return c.Enabled == nil || *c.Enabled }

// Kind is the transport: Stdio, HTTP or SSE.
func (c ServerConfig) Kind() string {
	switch strings.ToLower(c.Transport) {
	case "stdio":
		return Stdio
	case "sse":
		return SSE
	case "http", "streamable_http", "streamable-http", "streamablehttp":
		return HTTP
	}
	if c.URL != "" {
		return HTTP
	}
	return Stdio
}

func (c ServerConfig) timeout() time.Duration {
	if c.Timeout > 0 {
		return time.Duration(c.Timeout)
	}
	return DefaultTimeout
}

func (c ServerConfig) connectTimeout() time.Duration {
	if c.ConnectTimeout > 0 {
		return time.Duration(c.ConnectTimeout)
	}
	return DefaultConnectTimeout
}

func (c ServerConfig) keepAlive() time.Duration {
	if c.KeepAliveInterval > 0 {
		return max(time.Duration(c.KeepAliveInterval), 5*time.Second)
	}
	return DefaultKeepAlive
}

// Unused names the Python Hermes Agent's keys set on this server that
// this build ignores.
func (c ServerConfig) Unused() []string {
	var out []string
	for k, v := range map[string]any{"supports_parallel_tool_calls": c.SupportsParallelToolCalls, "skip_preflight": c.SkipPreflight,
		"sampling": c.Sampling, "elicitation": c.Elicitation, "lifecycle": c.Lifecycle, "idle_timeout_seconds": c.IdleTimeoutSeconds,
		"max_lifetime_seconds": c.MaxLifetimeSeconds, "ssl_verify": c.SSLVerify, "auth": c.Auth, "oauth": c.OAuth,
		"client_cert": c.ClientCert, "client_key": c.ClientKey} {
		if v != nil {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// serverName is what a server may be called: it becomes part of tool
// names, a toolset and a config key.
var serverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$`)

// ValidName reports a server name that cannot be used, saying why.
func ValidName(name string) error {
	if !serverName.MatchString(name) {
		return fmt.Errorf("MCP server name %q: use letters, digits, - _ and . (at most 40, starting with a letter or digit)", name)
	}
	return nil
}

// Validate reports what is wrong with the entry, naming its keys under
// mcp_servers.<name>.
func (c ServerConfig) Validate(name string) error {
	key := "mcp_servers." + name
	if err := ValidName(name); err != nil {
		return err
	}
	switch {
	case c.Command == "" && c.URL == "":
		return fmt.Errorf("%s: set command (a program speaking MCP on stdio) or url (an MCP endpoint)", key)
	case c.Command != "" && c.URL != "":
		return fmt.Errorf("%s: set either command or url, not both", key)
	}
	switch strings.ToLower(c.Transport) {
	case "", "stdio", "http", "streamable_http", "streamable-http", "streamablehttp", "sse":
	default:
		return fmt.Errorf("%s.transport %q: use stdio, http (streamable HTTP) or sse", key, c.Transport)
	}
	if c.Command != "" && c.Kind() != Stdio {
		return fmt.Errorf("%s.transport %q needs url, not command", key, c.Transport)
	}
	if c.URL != "" {
		if c.Kind() == Stdio {
			return fmt.Errorf("%s.transport stdio needs command, not url", key)
		}
		u, err := url.Parse(expand(c.URL))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s.url %q: use an http:// or https:// URL", key, c.URL)
		}
	} else if len(c.Headers) > 0 {
		return fmt.Errorf("%s.headers are for url servers; a command server gets env", key)
	}
	for k, v := range map[string]Seconds{"timeout": c.Timeout, "connect_timeout": c.ConnectTimeout, "keepalive_interval": c.KeepAliveInterval} {
		if v < 0 {
			return fmt.Errorf("%s.%s must not be negative", key, k)
		}
	}
	for _, p := range append(append([]string(nil), c.Tools.Include...), c.Tools.Exclude...) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("%s.tools: bad pattern %q: %v", key, p, err)
		}
	}
	return nil
}

// expand replaces ${VAR} with the variable's value, so that keys stay
// out of config.yaml: headers: {Authorization: "Bearer ${GITHUB_TOKEN}"}.
func expand(s string) string {
	return envRef.ReplaceAllStringFunc(s, func(m string) string { return os.Getenv(m[2 : len(m)-1]) })
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// wanted reports whether the filter keeps the server's tool name.
func (f ToolFilter) wanted(name string) bool {
	match := func(pats Names) bool {
		for _, p := range pats {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
		return false
	}
	if len(f.Include) > 0 {
		return match(f.Include)
	}
	return !match(f.Exclude)
}

// Secrets are the values of the entry that must not reach the model or
// the log, by a name to show in their place: env values secret by name
// or shape (a server's own GITHUB_TOKEN) and every header value (they
// carry keys: Authorization, X-Api-Key), with a bearer token also alone.
func (c ServerConfig) Secrets(name string) map[string]string {
	out := map[string]string{}
	for k, v := range c.Env {
		if v = expand(v); secrets.SecretVar(k, v) {
			out[fmt.Sprintf("mcp_servers.%s.env.%s", name, k)] = v
		}
	}
	for k, v := range c.Headers {
		v = expand(v)
		label := fmt.Sprintf("mcp_servers.%s.headers.%s", name, k)
		out[label] = v
		if _, tok, ok := strings.Cut(v, " "); ok && strings.EqualFold(strings.Fields(v)[0], "bearer") {
			out[label+" token"] = strings.TrimSpace(tok)
		}
	}
	return out
}
