// Package hooks runs Hermes' hooks: shell commands configured under
// hooks: in config.yaml, and functions registered by code (plugins), at
// the hook events of the Python Hermes Agent (see Events): around tool
// calls (pre_tool_call can block one; transform_tool_result and
// transform_terminal_output can change what the model reads of it), around
// each model request, at a turn's start and end (pre_llm_call can add
// context; transform_llm_output can change the answer), at a session's
// start, end, reset and finalisation and around subagents. A hook gets a
// JSON object on stdin and may answer one on stdout, in the Python agent's
// wire format. Hooks never break a turn: one that fails, times out or
// answers nonsense is recorded and otherwise ignored. Every run is a
// HookRan event in the session's stream; what a transform changed is in
// it, and in the loop's own events, so a replay reproduces it. A shell
// hook runs only once its person has allowed its command (see Consent).
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
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/schema"
)

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
		if reserved[e] {
			continue
		}
		if !isEvent(e) {
			errs = append(errs, fmt.Errorf("hooks.%s: unknown hook event; the events are %s", e, strings.Join(Events, ", ")))
			continue
		}
		if ok, why := Fired(e); !ok && len(c[e]) > 0 {
			warnings = append(warnings, fmt.Sprintf("hooks.%s: this build of hermes never fires %s (%s); these hooks do not run", e, e, why))
		}
		for i, h := range c[e] {
			key := fmt.Sprintf("hooks.%s[%d]", e, i)
			if strings.TrimSpace(h.Command) == "" {
				errs = append(errs, fmt.Errorf("%s: command is empty", key))
			} else if _, err := words(h.Command); err != nil {
				errs = append(errs, fmt.Errorf("%s.command: %v", key, err))
			}
			if h.Matcher != "" {
				if !toolEvent(e) {
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
	// Consent decides whether a configured shell hook may run; nil: all
	// may (tests, and callers that asked already).
	Consent *Consent
	Log     zerolog.Logger
}

// Func is a hook registered by code: it reads the payload a shell hook
// reads on stdin and answers what a shell hook would write on stdout
// (nothing, or a JSON object). It runs within the hook's timeout; one
// that does not return in time is abandoned and recorded as timed out.
type Func func(ctx context.Context, payload []byte) ([]byte, error)

// Registration is a hook added by code rather than by config.yaml: a
// plugin's hook.
type Registration struct {
	Event string
	// Name is what records and `hermes hooks list` call it
	// (plugin:<name>).
	Name string
	// Matcher, for tool events, is a regular expression the whole tool
	// name must match (empty: every tool).
	Matcher string
	// Timeout bounds a run (0: DefaultTimeout).
	Timeout time.Duration
	Run     Func
}

// Runner runs the configured hooks and those registered.
type Runner struct {
	mu    sync.RWMutex
	hooks map[string][]*hook
	// skipped are configured hooks their person did not allow.
	skipped []Entry
	opts    Options
}

type hook struct {
	event   string
	name    string
	argv    []string
	fn      Func
	match   *regexp.Regexp
	timeout time.Duration
	matcher string
}

// Entry describes one hook the runner has, for listings.
type Entry struct {
	Event, Name, Matcher string
	Timeout              time.Duration
	// Shell is set for a configured command, unset for a registered Func.
	Shell bool
}

// New returns the runner of c, which must be valid. A configured hook
// its person has not allowed (opts.Consent) is left out and warned about.
func New(c Config, opts Options) (*Runner, error) {
	if _, err := c.Validate(); err != nil {
		return nil, err
	}
	r := &Runner{hooks: map[string][]*hook{}, opts: opts}
	for _, e := range Events {
		for _, h := range c[e] {
			x := compile(e, h)
			if ok, _ := Fired(e); ok && opts.Consent != nil && !opts.Consent.Allow(e, h.Command) {
				r.skipped = append(r.skipped, x.entry())
				opts.Log.Warn().Str("hook", e).Str("command", h.Command).
					Msg("shell hook not allowed, so it does not run: answer its question on a terminal, or pass --accept-hooks, set HERMES_ACCEPT_HOOKS=1 or hooks_auto_accept: true")
				continue
			}
			r.hooks[e] = append(r.hooks[e], x)
		}
	}
	return r, nil
}

// compile makes the hook of a valid config entry.
func compile(e string, h Hook) *hook {
	argv, _ := words(h.Command)
	if strings.HasPrefix(argv[0], "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			argv[0] = filepath.Join(home, argv[0][2:])
		}
	}
	x := &hook{event: e, name: h.Command, argv: argv, timeout: DefaultTimeout}
	if h.Timeout > 0 {
		x.timeout = min(time.Duration(h.Timeout)*time.Second, MaxTimeout)
	}
	if h.Matcher != "" && toolEvent(e) {
		x.matcher = h.Matcher
		x.match = regexp.MustCompile("^(?:" + h.Matcher + ")$")
	}
	return x
}

func (h *hook) entry() Entry {
	return Entry{Event: h.event, Name: h.name, Matcher: h.matcher, Timeout: h.timeout, Shell: h.fn == nil}
}

// Register adds a hook run by code. Tools wrapped before it was added
// see it only if a tool hook was already there (Tool decides at wrapping
// whether a tool needs wrapping): register before wrapping.
func (r *Runner) Register(reg Registration) error {
	if !isEvent(reg.Event) {
		return fmt.Errorf("hook %s: unknown hook event %q; the events are %s", reg.Name, reg.Event, strings.Join(Events, ", "))
	}
	if reg.Run == nil {
		return fmt.Errorf("hook %s: no function", reg.Name)
	}
	x := &hook{event: reg.Event, name: reg.Name, fn: reg.Run, timeout: reg.Timeout}
	if x.timeout <= 0 {
		x.timeout = DefaultTimeout
	}
	x.timeout = min(x.timeout, MaxTimeout)
	if reg.Matcher != "" && toolEvent(reg.Event) {
		m, err := regexp.Compile("^(?:" + reg.Matcher + ")$")
		if err != nil {
			return fmt.Errorf("hook %s: matcher %q: %v", reg.Name, reg.Matcher, err)
		}
		x.match, x.matcher = m, reg.Matcher
	}
	r.mu.Lock()
	r.hooks[reg.Event] = append(r.hooks[reg.Event], x)
	r.mu.Unlock()
	return nil
}

// List returns the hooks that run, by event in the order of Events, and
// the configured ones left out for want of consent.
func (r *Runner) List() (running, skipped []Entry) {
	if r == nil {
		return nil, nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, e := range Events {
		for _, h := range r.hooks[e] {
			running = append(running, h.entry())
		}
	}
	return running, append([]Entry(nil), r.skipped...)
}

// Has reports whether any hook runs at event.
func (r *Runner) Has(event string) bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.hooks[event]) > 0
}

// at returns the hooks of event (of tool, for tool events: those whose
// matcher fits it).
func (r *Runner) at(event, tool string) []*hook {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*hook
	for _, h := range r.hooks[event] {
		if h.match == nil || h.match.MatchString(tool) {
			out = append(out, h)
		}
	}
	return out
}

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
	// replace is a transform's replacement; replaced says there was one
	// (an empty replacement is one).
	replace  string
	replaced bool
}

// Result is what one run of a hook came to, for `hermes hooks test`.
type Result struct {
	// Name is the hook's command, or its registered name.
	Name     string
	Stdout   string
	ExitCode int
	Duration time.Duration
	// Err is why it failed (could not start, timed out, exited non-zero
	// with nothing said, answered nonsense).
	Err error
	// Decision is none, block, context or transform; Text its message,
	// context or replacement.
	Decision, Text string
}

// Test runs the hooks of event (of tool, for tool events) once with the
// payload a real firing would give them (extra holds the event's own
// fields, and any tool_input), and says what each did. Nothing is
// recorded.
func (r *Runner) Test(ctx context.Context, event, tool string, extra map[string]any) []Result {
	var out []Result
	p := payload{SessionID: "test-session", Extra: map[string]any{}}
	for k, v := range extra {
		switch k {
		case "tool_input":
			p.ToolInput = v
		case "session_id":
			p.SessionID, _ = v.(string)
		default:
			p.Extra[k] = v
		}
	}
	if tool != "" {
		p.ToolName = &tool
	}
	for _, h := range r.at(event, tool) {
		p.Event = event
		p.Cwd = r.opts.Dir
		in, _ := json.Marshal(p)
		start := time.Now()
		stdout, code, err := r.spawn(ctx, h, in)
		res := Result{Name: h.name, Stdout: string(stdout), ExitCode: code, Duration: time.Since(start), Err: err, Decision: "none"}
		if err == nil {
			a, perr := parse(event, stdout)
			res.Err = perr
			res.Decision, res.Text = a.decision()
		}
		out = append(out, res)
	}
	return out
}

func (a answer) decision() (string, string) {
	switch {
	case a.block:
		return "block", a.message
	case a.replaced:
		return "transform", a.replace
	case a.context != "":
		return "context", a.context
	}
	return "none", ""
}

// run runs one hook, records what came of it and returns its answer (the
// zero answer when it failed). before, for a transform, is what it may
// replace: the record keeps it beside the replacement.
func (r *Runner) run(ctx context.Context, event string, h *hook, p payload, before string) answer {
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
	ev := schema.HookRan{Event: event, Command: h.name, ExitCode: code, DurationMS: time.Since(start).Milliseconds(), Decision: "none"}
	if p.ToolName != nil {
		ev.Tool = *p.ToolName
	}
	var a answer
	if err != nil {
		ev.Decision, ev.Reason = "failed", err.Error()
	} else {
		a, err = parse(event, out)
		if err != nil {
			ev.Decision, ev.Reason = "failed", err.Error()
		} else {
			ev.Decision, ev.Reason = a.decision()
			if a.replaced {
				if a.replace == before {
					a.replaced, ev.Decision, ev.Reason = false, "none", ""
				} else {
					ev.Original = before
				}
			}
		}
	}
	log := r.opts.Log.With().Str("hook", event).Str("command", h.name).Logger()
	if ev.Decision == "failed" {
		log.Warn().Str("reason", ev.Reason).Msg("hook failed; the turn goes on without it")
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

// spawn runs the hook, its command with in on stdin or its function,
// within its timeout.
func (r *Runner) spawn(ctx context.Context, h *hook, in []byte) (out []byte, code int, err error) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	if h.fn != nil {
		return callFunc(ctx, h, in)
	}
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

// callFunc runs a registered hook, abandoning it at the deadline even if
// it ignores its context (a hung plugin must not hold the turn).
func callFunc(ctx context.Context, h *hook, in []byte) ([]byte, int, error) {
	type res struct {
		out []byte
		err error
	}
	done := make(chan res, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- res{err: fmt.Errorf("hook panicked: %v", v)}
			}
		}()
		out, err := h.fn(ctx, in)
		done <- res{out, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, -1, fmt.Errorf("timed out after %s", h.timeout)
			}
			return nil, 1, r.err
		}
		if len(r.out) > maxOutput {
			r.out = r.out[:maxOutput]
		}
		return r.out, 0, nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, -1, fmt.Errorf("timed out after %s", h.timeout)
		}
		return nil, -1, fmt.Errorf("cancelled: %v", context.Cause(ctx))
	}
}

// replaceKey is the field of a transform's answer that holds the
// replacement: the name of the payload field it replaces.
var replaceKey = map[string]string{
	TransformToolResult:     "result",
	TransformTerminalOutput: "output",
	TransformLLMOutput:      "response_text",
}

// parse reads a hook's stdout: nothing, or a JSON object. pre_tool_call
// blocks with {"action": "block", "message": ...} (Hermes) or
// {"decision": "block", "reason": ...} (Claude Code); the transform events
// replace with the field they replace ({"result": ...},
// {"output": ...}, {"response_text": ...}); the others may add
// {"context": ...}, which pre_llm_call uses. Any other object says
// nothing.
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
		if str("action") == "block" {
			return answer{block: true, message: first(str("message"), str("reason"), "Blocked by shell hook.")}, nil
		}
		if str("decision") == "block" {
			return answer{block: true, message: first(str("reason"), str("message"), "Blocked by shell hook.")}, nil
		}
		return answer{}, nil
	case PreGatewayDispatch:
		switch str("action") {
		case "skip":
			return answer{block: true, message: first(str("reason"), "handled by a hook")}, nil
		case "rewrite":
			if v, ok := m["text"].(string); ok {
				return answer{replace: v, replaced: true}, nil
			}
		}
		return answer{}, nil
	case TransformToolResult, TransformTerminalOutput, TransformLLMOutput:
		if v, ok := m[replaceKey[event]].(string); ok {
			return answer{replace: v, replaced: true}, nil
		}
		return answer{}, nil
	}
	return answer{context: str("context")}, nil
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
