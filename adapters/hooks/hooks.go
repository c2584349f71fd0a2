// Package hooks runs Hermes' shell hooks: external commands configured
// under hooks: in config.yaml, run at a tool call (pre_tool_call, which
// can block it, and post_tool_call), before a turn's model calls
// (pre_llm_call, which can add context), and at a session's first turn
// and each turn's end (on_session_start, on_session_end). A hook gets a
// JSON object on stdin and may answer one on stdout, in the Python Hermes
// Agent's wire format. Hooks never break a turn: one that fails, times
// out or answers nonsense is recorded and otherwise ignored. Every run
// is a HookRan event in the session's stream.
package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/schema"
)

// The events hooks run at.
const (
	PreToolCall    = "pre_tool_call"
	PostToolCall   = "post_tool_call"
	PreLLMCall     = "pre_llm_call"
	OnSessionStart = "on_session_start"
	OnSessionEnd   = "on_session_end"
)

// Events lists the events this build runs hooks at.
var Events = []string{PreToolCall, PostToolCall, PreLLMCall, OnSessionStart, OnSessionEnd}

// elsewhere are hook events of the Python Hermes Agent this build does
// not run: a config.yaml shared with it may name them (warned about).
var elsewhere = []string{"transform_terminal_output", "transform_tool_result", "transform_llm_output", "post_llm_call", "pre_verify",
	"subagent_stop", "on_session_finalize", "on_session_reset", "pre_api_request", "post_api_request", "output_spill"}

// Defaults of a hook's timeout, as Hermes has them.
const (
	DefaultTimeout = 60 * time.Second
	MaxTimeout     = 300 * time.Second
	// maxOutput bounds what a hook's stdout is read of.
	maxOutput = 1 << 20
)

// Hook is one entry under hooks.<event>.
type Hook struct {
	// Command is split into words as a shell would (quotes, backslashes;
	// no pipes or variables: wrap those in a script); a leading ~ is the
	// home directory.
	Command string `yaml:"command"`
	// Matcher, for tool events, is a regular expression the whole tool
	// name must match (empty: every tool).
	Matcher string `yaml:"matcher"`
	// Timeout in seconds (default 60, at most 300).
	Timeout int `yaml:"timeout"`
}

// Config is the hooks: section: event name → its hooks.
type Config map[string][]Hook

// Validate reports entries that cannot run (naming the key) and returns
// warnings about what is ignored: events of the Python Hermes Agent this
// build does not run, matchers on events without a tool.
func (c Config) Validate() (warnings []string, err error) {
	var errs []error
	events := make([]string, 0, len(c))
	for e := range c {
		events = append(events, e)
	}
	sort.Strings(events)
	for _, e := range events {
		known := false
		for _, k := range Events {
			known = known || k == e
		}
		if !known {
			other := false
			for _, k := range elsewhere {
				other = other || k == e
			}
			if other {
				warnings = append(warnings, fmt.Sprintf("hooks.%s: this build of hermes does not run %s hooks; they are ignored", e, e))
				continue
			}
			errs = append(errs, fmt.Errorf("hooks.%s: unknown hook event; the events are %s", e, strings.Join(Events, ", ")))
			continue
		}
		for i, h := range c[e] {
			key := fmt.Sprintf("hooks.%s[%d]", e, i)
			if strings.TrimSpace(h.Command) == "" {
				errs = append(errs, fmt.Errorf("%s: command is empty", key))
			} else if _, err := words(h.Command); err != nil {
				errs = append(errs, fmt.Errorf("%s.command: %v", key, err))
			}
			if h.Matcher != "" {
				if e != PreToolCall && e != PostToolCall {
					warnings = append(warnings, fmt.Sprintf("%s.matcher: only tool hooks have a matcher; this hook runs at every %s", key, e))
				} else if _, err := regexp.Compile("^(?:" + h.Matcher + ")$"); err != nil {
					errs = append(errs, fmt.Errorf("%s.matcher %q: %v", key, h.Matcher, err))
				}
			}
			if h.Timeout < 0 {
				errs = append(errs, fmt.Errorf("%s.timeout must be a positive number of seconds", key))
			}
		}
	}
	return warnings, errors.Join(errs...)
}

// Options are what hooks run with.
type Options struct {
	// Env is the hooks' environment (Hermes' own without its secrets;
	// nil: this process's).
	Env func() []string
	// Dir is the working directory hooks run in and report as cwd.
	Dir string
	// Platform is reported to session and llm hooks (cli, telegram, ...).
	Platform string
	Log      zerolog.Logger
}

// Runner runs the configured hooks.
type Runner struct {
	hooks map[string][]*hook
	opts  Options
}

type hook struct {
	Hook
	argv    []string
	match   *regexp.Regexp
	timeout time.Duration
}

// New returns the runner of c, which must be valid.
func New(c Config, opts Options) (*Runner, error) {
	if _, err := c.Validate(); err != nil {
		return nil, err
	}
	r := &Runner{hooks: map[string][]*hook{}, opts: opts}
	for _, e := range Events {
		for _, h := range c[e] {
			argv, _ := words(h.Command)
			if strings.HasPrefix(argv[0], "~/") {
				if home, err := os.UserHomeDir(); err == nil {
					argv[0] = filepath.Join(home, argv[0][2:])
				}
			}
			x := &hook{Hook: h, argv: argv, timeout: DefaultTimeout}
			if h.Timeout > 0 {
				x.timeout = min(time.Duration(h.Timeout)*time.Second, MaxTimeout)
			}
			if h.Matcher != "" && (e == PreToolCall || e == PostToolCall) {
				x.match = regexp.MustCompile("^(?:" + h.Matcher + ")$")
			}
			r.hooks[e] = append(r.hooks[e], x)
		}
	}
	return r, nil
}

// Has reports whether any hook runs at event.
func (r *Runner) Has(event string) bool { return r != nil && len(r.hooks[event]) > 0 }

// payload is what a hook reads on stdin.
type payload struct {
	Event     string         `json:"hook_event_name"`
	ToolName  *string        `json:"tool_name"`
	ToolInput any            `json:"tool_input"`
	SessionID string         `json:"session_id"`
	Cwd       string         `json:"cwd"`
	Extra     map[string]any `json:"extra"`
}

// answer is what came of one run.
type answer struct {
	block   bool
	message string // block message
	context string // pre_llm_call context
}

// run runs one hook, records what came of it and returns its answer (the
// zero answer when it failed).
func (r *Runner) run(ctx context.Context, event string, h *hook, p payload) answer {
	p.Event = event
	if p.Cwd == "" {
		p.Cwd = r.opts.Dir
	}
	if p.Extra == nil {
		p.Extra = map[string]any{}
	}
	in, _ := json.Marshal(p)
	start := time.Now()
	out, code, err := r.spawn(ctx, h, in)
	ev := schema.HookRan{Event: event, Command: h.Command, ExitCode: code, DurationMS: time.Since(start).Milliseconds(), Decision: "none"}
	if p.ToolName != nil {
		ev.Tool = *p.ToolName
	}
	var a answer
	if err != nil {
		ev.Decision, ev.Reason = "failed", err.Error()
	} else {
		a, err = parse(event, out)
		switch {
		case err != nil:
			ev.Decision, ev.Reason = "failed", err.Error()
		case a.block:
			ev.Decision, ev.Reason = "block", a.message
		case a.context != "":
			ev.Decision, ev.Reason = "context", a.context
		}
	}
	log := r.opts.Log.With().Str("hook", event).Str("command", h.Command).Logger()
	if ev.Decision == "failed" {
		log.Warn().Str("reason", ev.Reason).Msg("shell hook failed; the turn goes on without it")
	} else if code != 0 {
		log.Warn().Int("exit_code", code).Msg("shell hook exited non-zero")
	}
	if env := tool.EnvFrom(ctx); env.Record != nil {
		if err := env.Record(ctx, ev); err != nil {
			log.Warn().Err(err).Msg("recording a hook decision failed")
		}
	}
	return a
}

// spawn runs the hook's command with in on stdin, within its timeout.
func (r *Runner) spawn(ctx context.Context, h *hook, in []byte) (out []byte, code int, err error) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.argv[0], h.argv[1:]...)
	cmd.Dir = r.opts.Dir
	if r.opts.Env != nil {
		cmd.Env = r.opts.Env()
	}
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr capped
	stdout.max, stderr.max = maxOutput, 4<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ownGroup(cmd)
	err = cmd.Run()
	code = cmd.ProcessState.ExitCode()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, code, fmt.Errorf("timed out after %s", h.timeout)
	case ctx.Err() != nil:
		return nil, code, fmt.Errorf("cancelled: %v", context.Cause(ctx))
	case err != nil && cmd.ProcessState == nil:
		return nil, -1, fmt.Errorf("could not run %s: %v", h.argv[0], err)
	}
	if code != 0 && len(bytes.TrimSpace(stdout.b)) == 0 {
		msg := fmt.Sprintf("exited %d", code)
		if s := strings.TrimSpace(string(stderr.b)); s != "" {
			msg += ": " + s
		}
		return nil, code, errors.New(msg)
	}
	// A non-zero exit that still answered is taken at its word, as
	// Hermes does: a script may block and exit 1.
	return stdout.b, code, nil
}

// parse reads a hook's stdout: nothing, or a JSON object. pre_tool_call
// blocks with {"action": "block", "message": ...} (Hermes) or
// {"decision": "block", "reason": ...} (Claude Code); pre_llm_call adds
// {"context": ...}. Any other object says nothing.
func parse(event string, out []byte) (answer, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return answer{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		return answer{}, fmt.Errorf("stdout is not a JSON object: %q", clip(string(out), 200))
	}
	str := func(k string) string { s, _ := m[k].(string); return strings.TrimSpace(s) }
	switch event {
	case PreToolCall:
		if str("action") == "block" || str("decision") == "block" {
			msg := str("message")
			if str("decision") == "block" || msg == "" {
				msg = first(str("reason"), msg)
			}
			return answer{block: true, message: first(msg, "Blocked by shell hook.")}, nil
		}
	case PreLLMCall:
		return answer{context: str("context")}, nil
	}
	return answer{}, nil
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// capped keeps the first max bytes written to it.
type capped struct {
	b   []byte
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

// words splits a command line as a POSIX shell splits words: blanks
// separate, single quotes keep everything, double quotes keep all but \"
// and \\, a backslash escapes the next character.
func words(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			in = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New(`unterminated " quote`)
			}
			in = true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	if len(out) == 0 {
		return nil, errors.New("no command")
	}
	return out, nil
}
