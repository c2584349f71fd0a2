// Package plugins extends Hermes with plugins that run out of process: a
// plugin is a directory with a manifest (hermes-plugin.yaml) and a program
// that speaks MCP on stdio. The manifest declares what the plugin
// registers — tools the model may call, hooks (hook events answered by one
// of its MCP tools), CLI commands (`hermes plugins run`), model providers
// (`provider: plugin:NAME`) and gateway platforms — and what it
// needs (network, environment variables, writing the working directory).
// Hermes starts each enabled plugin through its MCP client (adapters/mcp:
// timeouts, reconnects, a crash is a reported error, not Hermes' end)
// inside the terminal's kernel sandbox (adapters/sandbox), narrowed to what
// the manifest declares. Installs, updates, removals and switches are
// events in the plugins stream, each install pinned to a commit and a hash
// of the installed tree; a plugin whose files no longer match is not
// started.
package plugins

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hermes-go/hermes/adapters/hooks"
)

// ManifestFile is the manifest's name at a plugin's root.
const ManifestFile = "hermes-plugin.yaml"

// Manifest is a plugin's hermes-plugin.yaml.
type Manifest struct {
	Name        string `yaml:"name"`
	Version     string `yaml:"version"`
	Description string `yaml:"description"`
	// Command starts the plugin, in its directory: a program speaking MCP
	// on stdio ("./plugin", or "python3 plugin.py"). A first word with a
	// slash is relative to the plugin's directory.
	Command []string `yaml:"command"`
	// Tools are the plugin's MCP tools the model may call, under their
	// own names.
	Tools []string `yaml:"tools"`
	// Hooks are hook events the plugin answers, each with one of its MCP
	// tools.
	Hooks []HookDecl `yaml:"hooks"`
	// Commands are CLI commands, each run by one of its MCP tools.
	Commands []CommandDecl `yaml:"commands"`
	// Providers are model providers: `provider: plugin:NAME` in
	// config.yaml sends the model's calls to one of its MCP tools.
	Providers []ProviderDecl `yaml:"providers"`
	// Platforms are gateway platforms: `hermes gateway run` serves each
	// through two of its MCP tools (receive and send).
	Platforms []PlatformDecl `yaml:"platforms"`
	// Needs is what the plugin needs from the sandbox.
	Needs Needs `yaml:"needs"`
	// Timeout bounds one tool call, in seconds (default 60).
	Timeout int `yaml:"timeout"`
}

// HookDecl is one hook of a plugin: its MCP tool Tool is called with
// {"payload": <what a shell hook reads on stdin>} and answers what a shell
// hook writes on stdout.
type HookDecl struct {
	Event   string `yaml:"event"`
	Tool    string `yaml:"tool"`
	Matcher string `yaml:"matcher"`
	// Timeout in seconds (default 10).
	Timeout int `yaml:"timeout"`
}

// CommandDecl is one CLI command of a plugin: `hermes plugins run PLUGIN
// NAME ARGS...` calls its MCP tool Tool with {"args": [ARGS...]} and
// prints the text it answers.
type CommandDecl struct {
	Name        string `yaml:"name"`
	Tool        string `yaml:"tool"`
	Description string `yaml:"description"`
}

// ProviderDecl is one model provider of a plugin: its MCP tool Tool is
// called with {"request": <an OpenAI chat.completions request body>} and
// answers the response body — a chat.completion object, or the
// chat.completion.chunk stream as server-sent events ("data: {...}" lines
// ending with "data: [DONE]").
type ProviderDecl struct {
	Name string `yaml:"name"`
	Tool string `yaml:"tool"`
	// Models are the models it serves (shown by hermes plugins list).
	Models []string `yaml:"models"`
}

// PlatformDecl is one gateway platform of a plugin. Receive is called in
// a loop with {"ack": [message ids recorded since the last call],
// "wait_seconds": N} and answers a JSON array of messages, waiting up to N
// seconds for one; a message not acknowledged is to be answered again by
// the next call (the gateway drops one it has already). Each message is
// {"chat", "user", "message_id", "text"} with optional "chat_type" (dm or
// group), "thread", "user_name" and "mentioned". Send is called with
// {"chat", "thread", "text", "in_reply_to", "kind", "choices"} for each
// reply and answers {"ids": [the platform's message ids]}; an error is
// retried as any platform's.
type PlatformDecl struct {
	Name    string `yaml:"name"`
	Receive string `yaml:"receive"`
	Send    string `yaml:"send"`
}

// builtinPlatforms are the gateway's own platforms and session sources:
// a plugin's platform may not take their names.
var builtinPlatforms = map[string]bool{"telegram": true, "slack": true, "matrix": true, "email": true, "irc": true, "xmpp": true,
	"webhook": true, "api": true, "api_server": true, "cli": true, "cron": true, "acp": true, "discord": true, "whatsapp": true, "signal": true}

// Needs is what a plugin asks of the sandbox it runs in; it gets nothing
// it did not ask for.
type Needs struct {
	// Network is off (the default), on, or allow (only Hosts, through
	// the sandbox's proxy).
	Network string   `yaml:"network"`
	Hosts   []string `yaml:"hosts"`
	// Env names the environment variables it receives beyond the basic
	// ones (PATH, HOME, LANG, ...).
	Env []string `yaml:"env"`
	// Workspace is read (the default) or write: whether it may write the
	// working directory Hermes runs in.
	Workspace string `yaml:"workspace"`
}

// DefaultHookTimeout bounds a plugin hook without a timeout of its own.
const DefaultHookTimeout = 10 * time.Second

var (
	pluginName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,39}$`)
	toolName   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)
)

// ReadManifest reads and checks the manifest of the plugin in dir.
func ReadManifest(dir string) (Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Manifest{}, fmt.Errorf("%s has no %s: a plugin is a directory with a manifest (see the README's Plugins section)", dir, ManifestFile)
		}
		return Manifest{}, err
	}
	var m Manifest
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("%s: %v", ManifestFile, err)
	}
	if err := m.Validate(); err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	return m, nil
}

// Validate reports what is wrong with m, naming the key.
func (m Manifest) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !pluginName.MatchString(m.Name) {
		bad("name %q: use lower-case letters, digits, - and _ (at most 40, starting with a letter)", m.Name)
	}
	if len(m.Command) == 0 || strings.TrimSpace(m.Command[0]) == "" {
		bad("command: say how to start the plugin (a program speaking MCP on stdio)")
	}
	if len(m.Tools) == 0 && len(m.Hooks) == 0 && len(m.Commands) == 0 && len(m.Providers) == 0 && len(m.Platforms) == 0 {
		bad("the plugin registers nothing: list tools, hooks, commands, providers or platforms")
	}
	for i, p := range m.Platforms {
		if !pluginName.MatchString(p.Name) || builtinPlatforms[p.Name] {
			bad("platforms[%d].name %q: lower-case letters, digits, - and _, not the name of one of the gateway's own platforms", i, p.Name)
		}
		if !toolName.MatchString(p.Receive) || !toolName.MatchString(p.Send) {
			bad("platforms[%d]: name the MCP tools that receive and send its messages (receive, send)", i)
		}
	}
	for i, p := range m.Providers {
		if !pluginName.MatchString(p.Name) {
			bad("providers[%d].name %q: lower-case letters, digits, - and _ (config.yaml names it provider: plugin:NAME)", i, p.Name)
		}
		if !toolName.MatchString(p.Tool) {
			bad("providers[%d].tool: name the MCP tool that answers the model's calls", i)
		}
	}
	for i, t := range m.Tools {
		if !toolName.MatchString(t) {
			bad("tools[%d] %q: a tool name is letters, digits and _ (at most 64)", i, t)
		}
	}
	for i, h := range m.Hooks {
		ok := false
		for _, e := range hooks.Events {
			ok = ok || e == h.Event
		}
		if !ok {
			bad("hooks[%d].event %q: the events are %s", i, h.Event, strings.Join(hooks.Events, ", "))
		}
		if !toolName.MatchString(h.Tool) {
			bad("hooks[%d].tool: name the MCP tool that answers the hook", i)
		}
		if h.Matcher != "" {
			if _, err := regexp.Compile(h.Matcher); err != nil {
				bad("hooks[%d].matcher: %v", i, err)
			}
		}
		if h.Timeout < 0 {
			bad("hooks[%d].timeout must be a positive number of seconds", i)
		}
	}
	for i, c := range m.Commands {
		if !pluginName.MatchString(c.Name) {
			bad("commands[%d].name %q: lower-case letters, digits, - and _", i, c.Name)
		}
		if !toolName.MatchString(c.Tool) {
			bad("commands[%d].tool: name the MCP tool that runs the command", i)
		}
	}
	switch m.Needs.Network {
	case "", "off", "on":
		if len(m.Needs.Hosts) > 0 {
			bad("needs.hosts is set but needs.network is %q: use allow", m.Needs.Network)
		}
	case "allow":
		if len(m.Needs.Hosts) == 0 {
			bad("needs.network is allow but needs.hosts is empty")
		}
	default:
		bad("needs.network %q: use off, on or allow", m.Needs.Network)
	}
	switch m.Needs.Workspace {
	case "", "read", "write":
	default:
		bad("needs.workspace %q: use read or write", m.Needs.Workspace)
	}
	if m.Timeout < 0 {
		bad("timeout must be a positive number of seconds")
	}
	return errors.Join(errs...)
}

// hookEvents are the events m hooks, in order, once each.
func (m Manifest) hookEvents() []string {
	var out []string
	seen := map[string]bool{}
	for _, h := range m.Hooks {
		if !seen[h.Event] {
			seen[h.Event] = true
			out = append(out, h.Event)
		}
	}
	return out
}

func (m Manifest) platformNames() []string {
	var out []string
	for _, p := range m.Platforms {
		out = append(out, p.Name)
	}
	return out
}

func (m Manifest) providerNames() []string {
	var out []string
	for _, p := range m.Providers {
		out = append(out, ProviderPrefix+p.Name)
	}
	return out
}

func (m Manifest) commandNames() []string {
	var out []string
	for _, c := range m.Commands {
		out = append(out, c.Name)
	}
	return out
}
