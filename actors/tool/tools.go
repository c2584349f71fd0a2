// Package tool is the port to the tools a model calls, named for its noun:
// the Tool interface and its Flags, the Toolbox a turn offers, a Call and
// its Result, the Executor that runs calls (in place, or on the tool
// runners of actors/toolrun), and the Env a call runs in (session, the
// person to ask, subagents, the iteration Budget, per-session Values).
// adapters/tools implements tools; actors/agent calls them.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/hermes-go/hermes/actors/model"
)

// Tool is one tool the model may call.
type Tool interface {
	Spec() model.ToolSpec
	Flags() Flags
	// Run executes one call with JSON object arguments and returns what the
	// model will read.
	Run(ctx context.Context, args json.RawMessage) (string, error)
}

// Flags describe how a tool may be scheduled.
type Flags struct {
	// ReadOnly tools change nothing.
	ReadOnly bool
	// Interactive tools ask the person something: a response holding one
	// runs all of its calls one after another.
	Interactive bool
	// WritesPaths, when set, returns the paths a call writes: calls whose
	// paths overlap do not run at the same time.
	WritesPaths func(args json.RawMessage) []string
	// RefundsIteration: a response whose calls all have this flag gives
	// its iteration back (execute_code batches work the model would
	// otherwise spend many iterations on).
	RefundsIteration bool
	// Server names the MCP server a tool belongs to (empty for built-in
	// tools); it is recorded with each call.
	Server string
}

// Toolbox is the set of tools a session may use.
type Toolbox interface {
	Specs() []model.ToolSpec
	Get(name string) (Tool, bool)
	Names() []string
}

// Tools is a simple Toolbox over a fixed list. Each tool's Spec is read
// once, when the list is made: a model step offers the same specs (the
// same schema maps, which the providers keep encoded by identity) instead
// of every tool building its schema afresh for every step.
type Tools struct {
	byName map[string]Tool
	names  []string
	specs  []model.ToolSpec
}

// NewTools returns a toolbox of ts (of two with one name, the last).
func NewTools(ts ...Tool) *Tools {
	t := &Tools{byName: map[string]Tool{}}
	spec := map[string]model.ToolSpec{}
	for _, x := range ts {
		s := x.Spec()
		t.byName[s.Name] = x
		spec[s.Name] = s
	}
	t.names = make([]string, 0, len(t.byName))
	for n := range t.byName {
		t.names = append(t.names, n)
	}
	sort.Strings(t.names)
	for _, n := range t.names {
		t.specs = append(t.specs, spec[n])
	}
	return t
}

func (t *Tools) Get(name string) (Tool, bool) { x, ok := t.byName[name]; return x, ok }

// Names are the tools' names, sorted.
func (t *Tools) Names() []string { return slices.Clone(t.names) }

// Specs are the tools' specs in the order of their names; the slice is
// the caller's (the maps in it are shared and must not be changed).
func (t *Tools) Specs() []model.ToolSpec { return slices.Clone(t.specs) }

// Call is one validated tool call ready to run.
type Call struct {
	ID   string
	Name string
	Args json.RawMessage
	Tool Tool
}

// Result is the outcome of one call.
type Result struct {
	Content  string
	Err      string
	Duration time.Duration
	// Interrupted is set when the call was cancelled before it finished.
	Interrupted bool
}

// Executor runs one tool call; the ToolRunner actors implement it with
// bounded concurrency, and RunTool is the body they share.
type Executor interface {
	Execute(ctx context.Context, c Call) Result
}

// RunTool runs c with a timeout, turning a panic into an error result. A
// tool that ignores its context is abandoned at the timeout.
func RunTool(ctx context.Context, c Call, timeout time.Duration) Result {
	start := time.Now()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	done := make(chan Result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- Result{Err: fmt.Sprintf("tool %s panicked: %v", c.Name, p)}
			}
		}()
		out, err := c.Tool.Run(ctx, c.Args)
		r := Result{Content: out}
		if err != nil {
			r.Err = err.Error()
		}
		done <- r
	}()
	var r Result
	cut := false // the context ended before or while the tool returned
	select {
	case r = <-done:
		cut = r.Err != "" && ctx.Err() != nil
	case <-ctx.Done():
		cut = true
		r = Result{Interrupted: true, Err: "cancelled"}
		if ctx.Err() == context.DeadlineExceeded {
			break
		}
		// Interrupted: give the tool a moment to wind down (a subagent
		// records its end) before abandoning it.
		select {
		case r = <-done:
		case <-time.After(interruptGrace):
		}
	}
	// However the race between the tool's return and the context went,
	// a call cut by its context reports why; a call that finished well is
	// kept even if the deadline passed a moment later.
	if cut {
		switch ctx.Err() {
		case context.DeadlineExceeded:
			r = Result{Err: fmt.Sprintf("tool %s timed out after %s", c.Name, timeout)}
		case context.Canceled:
			r.Interrupted = true
		}
	}
	r.Duration = time.Since(start)
	return r
}

// interruptGrace is how long an interrupted tool may take to return.
const interruptGrace = 15 * time.Second

// DirectExecutor runs calls in the calling goroutine (tests, one-shot use).
type DirectExecutor struct{ Timeout time.Duration }

func (d DirectExecutor) Execute(ctx context.Context, c Call) Result {
	return RunTool(ctx, c, d.Timeout)
}

// Waves splits calls into groups that may run at the same time: all calls
// one by one when any is interactive; otherwise a call waits for a later
// wave when a path it writes overlaps one written in the current wave.
func Waves(calls []Call, maxParallel int) [][]int {
	if maxParallel < 1 {
		maxParallel = 1
	}
	for _, c := range calls {
		if c.Tool.Flags().Interactive {
			out := make([][]int, len(calls))
			for i := range calls {
				out[i] = []int{i}
			}
			return out
		}
	}
	var out [][]int
	var cur []int
	var curPaths []string
	for i, c := range calls {
		var paths []string
		if w := c.Tool.Flags().WritesPaths; w != nil {
			paths = w(c.Args)
		}
		if len(cur) >= maxParallel || overlaps(paths, curPaths) {
			out = append(out, cur)
			cur, curPaths = nil, nil
		}
		cur = append(cur, i)
		curPaths = append(curPaths, paths...)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		x = filepath.Clean(x)
		for _, y := range b {
			y = filepath.Clean(y)
			if x == y || within(x, y) || within(y, x) {
				return true
			}
		}
	}
	return false
}

func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && !filepath.IsAbs(rel) && len(rel) >= 1 && rel[0] != '.'
}
