// Package agent is the Hermes turn loop as plain Go: build the messages
// from the session's history, call the model, validate and repair its tool
// calls, run them, record every step as events, and loop until a final
// answer or the end of the iteration budget. The session actor drives it;
// it needs no actor system to test.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// Config tunes the loop; zero values take the defaults of the seeds.
type Config struct {
	Model string
	// MaxContinuations bounds "continue" calls after finish_reason=length.
	MaxContinuations int
	// BudgetWarningAt is the used fraction of the budget from which a
	// [BUDGET WARNING] rides on the last tool result; 0 turns it off.
	BudgetWarningAt float64
	// MaxParallelTools bounds the calls of one response run at once.
	MaxParallelTools int
	// MaxJSONRecoveries bounds error results for unparseable arguments per
	// turn; past it the turn ends.
	MaxJSONRecoveries int
	// MaxDelegatesPerResponse bounds delegate_task calls kept per response.
	MaxDelegatesPerResponse int
	MaxTokens               int
	Prices                  model.Prices
	// NoEstimate keeps a usage of zero as it is instead of estimating it
	// (replay hands recorded usages back, estimates included).
	NoEstimate bool
}

func (c Config) withDefaults() Config {
	if c.MaxContinuations == 0 {
		c.MaxContinuations = 3
	}
	if c.MaxParallelTools == 0 {
		c.MaxParallelTools = 8
	}
	if c.MaxJSONRecoveries == 0 {
		c.MaxJSONRecoveries = 3
	}
	if c.MaxDelegatesPerResponse == 0 {
		c.MaxDelegatesPerResponse = 1
	}
	if c.Prices == nil {
		c.Prices = model.DefaultPrices()
	}
	return c
}

// Recorder appends a turn's events to the session's stream. Record returns
// only once they are durable.
type Recorder interface {
	Record(ctx context.Context, turnID string, ps ...schema.Payload) error
}

// Observation is one thing the CLI or gateway may show while a turn runs.
type Observation struct {
	Kind string // one of the Observe… kinds
	Text string
	Tool string
	Err  string
	Step int
	// ID is the tool call's id (tool_start, tool_end): calls of one
	// response run at once, and their ends come in any order.
	ID string
	// Duration is how long the tool ran (tool_end).
	Duration time.Duration
	// Depth is 0 for the session's own turn and n for what its subagents
	// n levels down do (the session actor sets it on their observations).
	Depth int
}

// Kinds of Observation.
const (
	// ObserveDelta is a piece of the answer being written (Text).
	ObserveDelta = "delta"
	// ObserveReasoning is a piece of the model's reasoning (Text).
	ObserveReasoning = "reasoning"
	// ObserveToolStart is a tool call starting (Tool, ID, Text: its
	// arguments as shown).
	ObserveToolStart = "tool_start"
	// ObserveToolEnd is a tool call ending (Tool, ID, Duration, Text: the
	// start of its result, Err).
	ObserveToolEnd = "tool_end"
	// ObserveStatus is a line about what the loop is doing (Text).
	ObserveStatus = "status"
	// ObserveStep is the start of model call number Step of the turn.
	ObserveStep = "step"
)

// Observer receives observations; it must not block for long.
type Observer func(Observation)

// Loop runs turns of one session.
type Loop struct {
	Provider model.Provider
	Tools    tool.Toolbox
	Exec     tool.Executor
	Rec      Recorder
	Observe  Observer
	Budget   *tool.Budget
	Cfg      Config
	// Ephemeral, when set, returns context to add to the latest user
	// message at call time only (memory prefetch, plugin context).
	Ephemeral func() string
	// Steered, when set, returns the guidance the user sent (/steer)
	// since it was last called. Before each model call the loop records
	// it (TurnSteered) for the model to read; guidance that arrives while
	// the model writes its answer makes the turn go on with it.
	Steered func() []string
	// Hooks, when set, hear of each turn's start (what they return joins
	// the ephemeral context of the turn) and end.
	Hooks TurnHooks
	// NewID makes tool-call ids where a provider gave none.
	NewID func() string
	// Env is handed to tools (session id, working directory, asker, ...);
	// the loop fills in TurnID and Record.
	Env tool.Env
	// Compressor, when set, keeps the history within the model's context
	// window: checked before each call, forced on a context overflow.
	Compressor Compressor
	// Guard, when set, is checked before each model call; an error (a
	// cost cap reached) ends the turn with that message.
	Guard func() error
	// KeepOpenOnError leaves the turn open when the provider fails past
	// the ladder (a supervised subagent is restarted and continues it)
	// instead of recording it as interrupted.
	KeepOpenOnError bool
	// Redact, when set, removes secrets from what the model wrote before
	// it is recorded: the answer, the reasoning and the strings of each
	// tool call's arguments (the JSON stays valid). The tool itself runs
	// with the arguments as the model wrote them. Tools redact their own
	// output (see adapters/secrets).
	Redact func(string) string
	// Blobs reads the bytes of the images user messages name, for the
	// provider to send; nil sends each image as a line of text.
	Blobs model.Blobs
	// Sees says whether a model takes images; nil: every model does.
	Sees func(model string) bool
	// Describe, when set, describes an image for a model that cannot see
	// it (the auxiliary vision model, upstream's vision_analyze); the
	// call it made, if any, is recorded. Nil: such a model is told an
	// image was there, and the person what to set.
	Describe func(ctx context.Context, ref schema.ImageRef) (string, *schema.AuxiliaryCallCompleted, error)
}

// Compressor shrinks a session's history. Compress may move the session to
// a child stream: it rewrites t and the recorder in place.
type Compressor interface {
	// Maybe compresses when the estimated prompt is over the threshold.
	Maybe(ctx context.Context, t *history.Transcript) error
	// Compress compresses now (force skips the anti-thrash guard).
	Compress(ctx context.Context, t *history.Transcript, force bool) error
}

// Outcomes of a turn.
const (
	OutcomeAnswer      = "answer"
	OutcomeBudget      = "budget_exhausted"
	OutcomeBadToolJSON = "invalid_tool_arguments"
)

// ErrInterrupted is returned when a turn was cancelled; the history holds
// nothing partial of the call in flight.
var ErrInterrupted = errors.New("turn interrupted")

const (
	continuePrompt = "[Your previous response was cut off by the output limit. Continue exactly where it stopped, without repeating anything.]"
	gracePrompt    = "[You have used your whole iteration budget. Tools are no longer available. Summarise what you did, what the result is, and what remains to be done.]"
	nudgePrompt    = "[You only thought and gave no answer. Reply to the user now.]"
)

// Turn runs one turn from the user's text until a final answer, the end of
// the budget, an interruption or an error. t is the session's transcript;
// it is updated through the same fold that recovery uses.
func (l *Loop) Turn(ctx context.Context, t *history.Transcript, turnID, userText string) (string, error) {
	return l.TurnMessage(ctx, t, turnID, schema.UserMessageAdded{Content: userText})
}

// TurnMessage is Turn for a user message that may carry images (their
// blobs already stored: see events/blobs).
func (l *Loop) TurnMessage(ctx context.Context, t *history.Transcript, turnID string, msg schema.UserMessageAdded) (string, error) {
	tc := l.turnContext(ctx, t, turnID)
	if err := tc.record(msg); err != nil {
		return "", err
	}
	return l.run(ctx, t, tc)
}

// Continue resumes a turn whose user message is already in t (a subagent
// restarted by its supervisor): the model is called on the history as it
// is, and tool results already recorded are not produced again.
func (l *Loop) Continue(ctx context.Context, t *history.Transcript, turnID string) (string, error) {
	return l.run(ctx, t, l.turnContext(ctx, t, turnID))
}

// turn is what one turn's steps share.
type turn struct {
	id  string
	cfg Config
	obs Observer
	// record appends events and folds them into the transcript; it is
	// never cut by the interrupt: what happened is kept.
	record func(ps ...schema.Payload) error
	// recordResult is record for a tool's result: written at once (a kill
	// keeps it) but synced to disk by the step's next commit (see
	// events.DeferSync), so a step costs one fsync, not one per event.
	recordResult func(ps ...schema.Payload) error
}

func (l *Loop) turnContext(ctx context.Context, t *history.Transcript, turnID string) *turn {
	tc := &turn{id: turnID, cfg: l.Cfg.withDefaults(), obs: l.Observe}
	if tc.obs == nil {
		tc.obs = func(Observation) {}
	}
	rec := func(ctx context.Context, ps ...schema.Payload) error {
		if err := l.Rec.Record(ctx, turnID, ps...); err != nil {
			return err
		}
		for _, p := range ps {
			t.Apply(p)
		}
		return nil
	}
	durable := context.WithoutCancel(ctx)
	tc.record = func(ps ...schema.Payload) error { return rec(durable, ps...) }
	lazy := events.DeferSync(durable)
	tc.recordResult = func(ps ...schema.Payload) error { return rec(lazy, ps...) }
	return tc
}

func (tc *turn) interrupted(reason string) (string, error) {
	if err := tc.record(schema.TurnInterrupted{Reason: reason}); err != nil {
		return "", err
	}
	return "", ErrInterrupted
}

func (l *Loop) run(ctx context.Context, t *history.Transcript, tc *turn) (answer string, err error) {
	cfg, obs, record, recordResult, interrupted, turnID := tc.cfg, tc.obs, tc.record, tc.recordResult, tc.interrupted, tc.id
	env := l.Env
	env.TurnID = turnID
	env.Record = func(ctx context.Context, ps ...schema.Payload) error {
		return l.Rec.Record(context.WithoutCancel(ctx), turnID, ps...)
	}
	if env.Values == nil {
		env.Values = tool.NewSessionValues()
	}
	env.Budget = l.Budget
	toolCtx := tool.WithEnv(ctx, &env)
	var hooked string
	if l.Hooks != nil {
		hooked = l.Hooks.TurnStarted(toolCtx, turnStart(env, cfg, t))
		defer func() {
			l.Hooks.TurnEnded(tool.WithEnv(context.WithoutCancel(ctx), &env), TurnEnd{SessionID: env.SessionID, TurnID: turnID, Model: cfg.Model,
				Completed: err == nil, Interrupted: errors.Is(err, ErrInterrupted), Err: err, Answer: answer})
		}()
	}
	recoveries, iterations := 0, 0
	warned, nudged, compressedForOverflow := false, false, false
	steered := func(ps ...schema.Payload) []schema.Payload {
		if l.Steered == nil {
			return ps
		}
		for _, s := range l.Steered() {
			ps = append(ps, schema.TurnSteered{Text: s})
		}
		return ps
	}
	for {
		if ps := steered(); len(ps) > 0 {
			if err := record(ps...); err != nil {
				return "", err
			}
		}
		if l.Compressor != nil && !compressedForOverflow {
			if err := l.Compressor.Maybe(ctx, t); err != nil {
				obs(Observation{Kind: ObserveStatus, Text: "compression failed: " + err.Error()})
			}
		}
		if l.Guard != nil {
			if err := l.Guard(); err != nil {
				if rerr := record(schema.TurnInterrupted{Reason: err.Error()}); rerr != nil {
					return "", rerr
				}
				return "", err
			}
		}
		grace := !l.Budget.Take()
		iterations++
		obs(Observation{Kind: ObserveStep, Step: iterations})
		req := model.Request{Model: cfg.Model, System: t.System, Tools: l.Tools.Specs(), MaxTokens: cfg.MaxTokens, NoTools: grace}
		req.Messages = RepairHistory(t.Messages)
		req.Blobs = l.Blobs
		if l.Sees != nil && !l.Sees(cfg.Model) {
			var err error
			if req.Messages, err = l.describeImages(ctx, cfg.Model, req.Messages, obs, record); err != nil {
				return "", err
			}
		}
		warn := cfg.BudgetWarningAt > 0 && !grace && float64(l.Budget.Used()) >= cfg.BudgetWarningAt*float64(l.Budget.Max())
		if warn && !warned {
			warned = true
			if err := record(schema.BudgetWarning{Used: l.Budget.Used(), Max: l.Budget.Max()}); err != nil {
				return "", err
			}
		}
		l.layer(&req, warn, grace, nudged, hooked)
		// The call runs with the turn's Env too: request hooks record
		// what they did in the session's stream.
		resp, err := l.call(tool.WithEnv(ctx, &env), cfg, req, obs)
		if fr, ok := l.Provider.(interface {
			TakeFallbacks() []schema.ProviderFallback
		}); ok {
			for _, fb := range fr.TakeFallbacks() {
				if rerr := record(fb); rerr != nil {
					return "", rerr
				}
			}
		}
		if ctx.Err() != nil {
			return interrupted(interruptReason(ctx))
		}
		if cal, ok := l.Compressor.(interface {
			Calibrate(model.Request, schema.Usage)
		}); ok && err == nil && !resp.Usage.Estimated {
			cal.Calibrate(req, resp.Usage)
		}
		if errors.Is(err, model.ErrContextOverflow) && l.Compressor != nil && !compressedForOverflow {
			// Too long for the model: compress, then make the same call
			// again without charging the budget twice.
			compressedForOverflow = true
			obs(Observation{Kind: ObserveStatus, Text: "context overflow: compressing the conversation"})
			if o, ok := l.Compressor.(interface{ Overflowed(error) }); ok {
				o.Overflowed(err)
			}
			if cerr := l.Compressor.Compress(ctx, t, true); cerr != nil {
				err = fmt.Errorf("%w (compression failed too: %v)", err, cerr)
			} else {
				l.Budget.Refund()
				continue
			}
		}
		if err != nil {
			if l.KeepOpenOnError {
				l.Budget.Refund() // the failed call produced nothing
				return "", err
			}
			if rerr := record(schema.TurnInterrupted{Reason: "provider error: " + err.Error()}); rerr != nil {
				return "", rerr
			}
			return "", err
		}
		content, reasoning := splitThink(resp.Content)
		reasoning = joinText(resp.Reasoning, reasoning)
		// The transcript is the fold of the recorded events, so the model
		// too reads its secrets redacted from here on, as it would after a
		// restart.
		content, reasoning = l.redact(content), l.redact(reasoning)
		msg := schema.AssistantMessageAdded{Content: content, Reasoning: reasoning, FinishReason: resp.FinishReason,
			Provider: l.Provider.Name(), Model: firstNonEmpty(resp.Model, cfg.Model), APIMode: l.Provider.APIMode(), Usage: resp.Usage}
		if resp.Calls > 1 {
			msg.Calls = resp.Calls
		}
		msg.CostUSD = cfg.Prices.Cost(msg.Model, resp.Usage)

		if grace || len(resp.ToolCalls) == 0 {
			if content == "" && reasoning != "" && !nudged && !grace {
				// Thinking is not an answer: ask once more, ephemerally.
				nudged = true
				continue
			}
			if content == "" {
				msg.Content = reasoning
			}
			if !grace {
				// Guidance sent while the model wrote this answer: the
				// answer stays in history and the turn goes on with it.
				msg.ToolCalls = nil
				if ps := steered(msg); len(ps) > 1 {
					if err := record(ps...); err != nil {
						return "", err
					}
					obs(Observation{Kind: ObserveStatus, Text: "the user's guidance arrived with the answer: going on"})
					continue
				}
			}
			if ah, ok := l.Hooks.(AnswerHooks); ok && !grace {
				// transform_llm_output: the answer recorded (and replayed)
				// is the one the hooks made.
				msg.Content = ah.TransformAnswer(toolCtx, turnStart(env, cfg, t), msg.Content)
			}
			msg.ToolCalls = nil
			outcome := OutcomeAnswer
			if grace {
				outcome = OutcomeBudget
			}
			if err := record(msg, schema.TurnCompleted{Iterations: iterations, Outcome: outcome}); err != nil {
				return "", err
			}
			return msg.Content, nil
		}

		calls, bad := l.validate(cfg, resp.ToolCalls)
		msg.ToolCalls = nil
		for i := range calls {
			calls[i].shown = redactArgs(l.Redact, calls[i].call.Function.Arguments)
			rec := calls[i].call
			rec.Function.Arguments = calls[i].shown
			msg.ToolCalls = append(msg.ToolCalls, rec)
		}
		started := []schema.Payload{msg}
		for _, c := range calls {
			var server string
			if c.tool != nil {
				server = c.tool.Flags().Server
			}
			started = append(started, schema.ToolCallStarted{CallID: c.call.ID, Name: c.call.Function.Name, Arguments: c.shown, Server: server})
		}
		if err := record(started...); err != nil {
			return "", err
		}
		// Each result is recorded as its call finishes: a kill while a
		// slow call runs keeps the results of the calls that finished.
		err = l.execute(toolCtx, cfg, calls, obs, func(c validCall, r tool.Result) error {
			content := r.Content
			if r.Err != "" {
				content = joinText(content, "Error: "+r.Err)
			}
			if r.Interrupted {
				content = InterruptedResult
			}
			// The result has no write-ahead role: the step's next
			// commit (the model's next message or the turn's end) is
			// durable and takes it to disk with it.
			return recordResult(schema.ToolResultAdded{CallID: c.call.ID, Name: c.call.Function.Name, Content: content,
				DurationMS: r.Duration.Milliseconds(), Error: r.Err, Interrupted: r.Interrupted})
		})
		if refundable(calls) {
			l.Budget.Refund()
		}
		if err != nil {
			return "", err
		}
		if ctx.Err() != nil {
			return interrupted(interruptReason(ctx))
		}
		if bad > 0 {
			recoveries += bad
			if recoveries > cfg.MaxJSONRecoveries {
				final := "I could not produce valid tool arguments after several attempts, so I stopped."
				if err := record(schema.AssistantMessageAdded{Content: final, FinishReason: "stop", Provider: l.Provider.Name(), Model: cfg.Model, APIMode: l.Provider.APIMode()},
					schema.TurnCompleted{Iterations: iterations, Outcome: OutcomeBadToolJSON}); err != nil {
					return "", err
				}
				return final, nil
			}
		}
	}
}

// refundable reports whether every call of a response runs code only.
func refundable(calls []validCall) bool {
	if len(calls) == 0 {
		return false
	}
	for _, c := range calls {
		if c.tool == nil || !c.tool.Flags().RefundsIteration {
			return false
		}
	}
	return true
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Cause is set on a context cancelled on purpose, to say why in the event.
type Cause string

func (c Cause) Error() string { return string(c) }

func interruptReason(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) && !errors.Is(c, context.DeadlineExceeded) {
		return c.Error()
	}
	return "cancelled"
}

// layer adds the ephemeral layers to a request: they are sent, never
// recorded.
func (l *Loop) layer(req *model.Request, warn, grace, nudged bool, hooked string) {
	msgs := req.Messages
	if warn && len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool" {
		last := &msgs[len(msgs)-1]
		last.Content += fmt.Sprintf("\n\n[BUDGET WARNING: %d of %d iterations used. Finish the task or wrap up soon.]", l.Budget.Used(), l.Budget.Max())
	}
	extra := hooked
	if l.Ephemeral != nil {
		extra = joinText(l.Ephemeral(), extra)
	}
	if extra != "" {
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == "user" {
				msgs[i].Content = joinText(msgs[i].Content, extra)
				break
			}
		}
	}
	if grace {
		msgs = appendUser(msgs, gracePrompt)
	} else if nudged {
		msgs = appendUser(msgs, nudgePrompt)
	}
	req.Messages = msgs
}

// appendUser adds a user message, merging it into a final user message so
// that roles still alternate.
func appendUser(msgs []schema.Message, text string) []schema.Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == "user" {
		msgs[n-1].Content = joinText(msgs[n-1].Content, text)
		return msgs
	}
	return append(msgs, schema.Message{Role: "user", Content: text})
}

// estimateUsage counts tokens as about four characters each, for servers
// that report no usage.
func estimateUsage(req model.Request, resp model.Response) schema.Usage {
	in := len(req.System)
	for _, m := range req.Messages {
		in += len(m.Content) + len(m.Reasoning)
		for _, tc := range m.ToolCalls {
			in += len(tc.Function.Name) + len(tc.Function.Arguments)
		}
	}
	if !req.NoTools {
		for _, t := range req.Tools {
			in += len(t.Name) + len(t.Description) + 200
		}
	}
	out := len(resp.Content) + len(resp.Reasoning)
	for _, tc := range resp.ToolCalls {
		out += len(tc.Function.Name) + len(tc.Function.Arguments)
	}
	return schema.Usage{PromptTokens: int64((in + 3) / 4), CompletionTokens: int64((out + 3) / 4), Estimated: true}
}

// call makes one model call, continuing after finish_reason=length up to
// MaxContinuations times and retrying a response whose tool call was cut
// off. Each extra call is a model call and takes from the budget.
func (l *Loop) call(ctx context.Context, cfg Config, req model.Request, obs Observer) (model.Response, error) {
	onDelta := func(d model.Delta) {
		switch d.Kind {
		case model.DeltaText:
			obs(Observation{Kind: ObserveDelta, Text: d.Text})
		case model.DeltaReasoning:
			obs(Observation{Kind: ObserveReasoning, Text: d.Text})
		case model.DeltaToolCall:
			obs(Observation{Kind: ObserveStatus, Text: "calling " + d.Text, Tool: d.Text})
		}
	}
	var joined strings.Builder
	var usage schema.Usage
	base := req.Messages
	rh, _ := l.Hooks.(RequestHooks)
	for attempt := 0; ; attempt++ {
		var ar APIRequest
		if rh != nil {
			ar = apiRequest(ctx, l.Provider, req, attempt)
			rh.RequestStarting(ctx, ar)
		}
		resp, err := l.Provider.Complete(ctx, req, onDelta)
		if rh != nil {
			rh.RequestEnded(ctx, ar, resp, err)
		}
		if err != nil {
			return resp, err
		}
		if resp.Usage.PromptTokens == 0 && resp.Usage.CompletionTokens == 0 && !cfg.NoEstimate {
			resp.Usage = estimateUsage(req, resp)
		}
		usage = usage.Add(resp.Usage)
		resp.Calls = attempt + 1
		if resp.FinishReason != "length" || attempt >= cfg.MaxContinuations || !l.Budget.Take() {
			if resp.FinishReason == "length" && len(resp.ToolCalls) > 0 {
				resp.ToolCalls = nil // still cut off: never run half a call
			}
			joined.WriteString(resp.Content)
			resp.Content = joined.String()
			resp.Usage = usage
			return resp, nil
		}
		if len(resp.ToolCalls) > 0 {
			// A cut-off tool call: drop the response and ask again.
			obs(Observation{Kind: ObserveStatus, Text: "tool call cut off by the output limit; retrying"})
			continue
		}
		obs(Observation{Kind: ObserveStatus, Text: "response cut off by the output limit; continuing"})
		joined.WriteString(resp.Content)
		msgs := append([]schema.Message(nil), base...)
		msgs = append(msgs, schema.Message{Role: "assistant", Content: joined.String()}, schema.Message{Role: "user", Content: continuePrompt})
		req.Messages = msgs
	}
}

type validCall struct {
	call schema.ToolCall
	tool tool.Tool
	// errResult, when set, is returned instead of running the tool.
	errResult string
	badJSON   bool
	// shown is the arguments as recorded and shown (redacted); the tool
	// runs with call's.
	shown string
}

// validate repairs names and arguments, drops identical duplicates and
// delegate_task calls over the cap, makes call ids unique, and turns what cannot be repaired into
// error results the model can act on. It returns how many calls had
// unusable JSON.
func (l *Loop) validate(cfg Config, tcs []schema.ToolCall) ([]validCall, int) {
	names := l.Tools.Names()
	seen := map[string]bool{}
	delegates, bad := 0, 0
	var out []validCall
	for _, tc := range tcs {
		if tc.ID == "" {
			tc.ID = l.newID()
		}
		tc.Type = "function"
		vc := validCall{call: tc}
		name, ok := RepairToolName(tc.Function.Name, names)
		if !ok {
			vc.errResult = fmt.Sprintf("Unknown tool %q. Valid tools: %s.", tc.Function.Name, strings.Join(names, ", "))
		} else {
			vc.call.Function.Name = name
			vc.tool, _ = l.Tools.Get(name)
			args, _, err := RepairArguments(tc.Function.Arguments)
			if err != nil {
				vc.errResult = fmt.Sprintf("The arguments of %s are not valid JSON (%v). Call it again with a valid JSON object.", name, err)
				vc.badJSON = true
				bad++
			} else {
				vc.call.Function.Arguments = args
			}
		}
		key := vc.call.Function.Name + "\x00" + vc.call.Function.Arguments
		if seen[key] {
			continue // an identical call in the same response runs once
		}
		seen[key] = true
		if vc.call.Function.Name == "delegate_task" {
			delegates++
			if delegates > cfg.MaxDelegatesPerResponse {
				continue
			}
		}
		out = append(out, vc)
	}
	uniqueIDs(out)
	return out, bad
}

// uniqueIDs renames a call whose id an earlier call of the response has
// (some models number calls per response, or repeat one id): providers
// reject a history where two calls share an id, and results are matched
// to calls by it. The second call_1 becomes call_1_2 (or the first free
// call_1_N that no call of the response has), so a replay of the recorded
// response makes the same ids.
func uniqueIDs(calls []validCall) {
	taken := make(map[string]bool, len(calls))
	for _, c := range calls {
		taken[c.call.ID] = true
	}
	used := make(map[string]bool, len(calls))
	for i := range calls {
		id := calls[i].call.ID
		if used[id] {
			for n := 2; ; n++ {
				if cand := fmt.Sprintf("%s_%d", id, n); !taken[cand] && !used[cand] {
					id = cand
					break
				}
			}
		}
		used[id] = true
		calls[i].call.ID = id
	}
}

func (l *Loop) newID() string {
	if l.NewID != nil {
		return l.NewID()
	}
	return "call_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24]
}

// execute runs the valid calls in waves and hands each result to done as
// soon as it is known: calls that cannot run first, in call order, then
// the others as they finish. done runs on the caller's goroutine; its
// first error is returned once every started call has finished.
func (l *Loop) execute(ctx context.Context, cfg Config, calls []validCall, obs Observer, done func(validCall, tool.Result) error) error {
	var first error
	finish := func(i int, r tool.Result) {
		if err := done(calls[i], r); err != nil && first == nil {
			first = err
		}
	}
	var runnable []tool.Call
	var index []int
	var shown []string
	for i, c := range calls {
		if c.errResult != "" {
			finish(i, tool.Result{Err: c.errResult})
			continue
		}
		runnable = append(runnable, tool.Call{ID: c.call.ID, Name: c.call.Function.Name, Args: json.RawMessage(c.call.Function.Arguments), Tool: c.tool})
		index = append(index, i)
		shown = append(shown, c.shown)
	}
	type finished struct {
		i int
		r tool.Result
	}
	out := make(chan finished)
	for _, wave := range tool.Waves(runnable, cfg.MaxParallelTools) {
		running := 0
		for _, k := range wave {
			c, text := runnable[k], shown[k]
			if ctx.Err() != nil {
				finish(index[k], tool.Result{Interrupted: true, Err: "cancelled"})
				continue
			}
			running++
			// Started here, in call order, not in the goroutines, which
			// the scheduler runs in any order (the newest first, often):
			// the screen shows parallel calls in the order they were made.
			obs(Observation{Kind: ObserveToolStart, Tool: c.Name, ID: c.ID, Text: text})
			call := func() finished {
				start := time.Now()
				r := l.Exec.Execute(ctx, c)
				if r.Duration == 0 {
					r.Duration = time.Since(start)
				}
				obs(Observation{Kind: ObserveToolEnd, Tool: c.Name, ID: c.ID, Duration: r.Duration, Text: clipText(r.Content, 200), Err: r.Err})
				return finished{index[k], r}
			}
			if len(wave) == 1 {
				// A call alone in its wave runs here: no goroutine to
				// hand it to and back from.
				f := call()
				finish(f.i, f.r)
				running--
				continue
			}
			go func() { out <- call() }()
		}
		for ; running > 0; running-- {
			f := <-out
			finish(f.i, f.r)
		}
	}
	return first
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
