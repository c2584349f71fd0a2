package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/compress"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// compression is the actor's memory of past compressions.
type compression struct {
	disabled bool    // two weak compressions in a row
	weak     int     // consecutive compressions saving under 10%
	factor   float64 // reported prompt tokens / estimated
}

// compressor implements agent.Compressor for one turn of an actor.
type compressor struct {
	a      *Actor
	turnID string
	model  string
	// squeeze lowers the protections when they leave nothing to
	// compress (/compress --force).
	squeeze bool
}

// counter is the token counter of the compressor's model, kept by the
// actor so its cache lives across turns.
func (c *compressor) counter() *compress.Counter {
	if c.a.counter == nil || c.a.counterModel != c.model {
		c.a.counter, c.a.counterModel = compress.NewCounter(c.model), c.model
	}
	return c.a.counter
}

const flushPrompt = "[The conversation is about to be compressed and older turns will be summarised. If anything here is worth remembering across sessions (the user's preferences, facts about their environment, lessons learned), save it now with the memory tool. Otherwise reply: nothing to save.]"

func (c *compressor) cfg() compress.Config { return c.a.deps.Compression.WithDefaults() }

func (c *compressor) window() int {
	if c.a.deps.Windows == nil {
		return compress.DefaultWindow
	}
	return c.a.deps.Windows.Of(c.model)
}

// Calibrate learns how far the estimate is from the provider's count.
func (c *compressor) Calibrate(req model.Request, u schema.Usage) {
	if u.PromptTokens <= 0 {
		return
	}
	cnt := c.counter()
	est := cnt.All(req.Messages) + cnt.Message(schema.Message{Content: req.System})
	if est > 0 {
		f := float64(u.PromptTokens) / float64(est)
		c.a.comp.factor = min(max(f, 0.5), 3)
	}
}

func (c *compressor) estimate(t *history.Transcript) int {
	f := c.a.comp.factor
	if f == 0 {
		f = 1
	}
	cnt := c.counter()
	return int(float64(cnt.All(t.Messages)+cnt.Message(schema.Message{Content: t.System})) * f)
}

// Maybe implements agent.Compressor.
func (c *compressor) Maybe(ctx context.Context, t *history.Transcript) error {
	cfg := c.cfg()
	if !c.a.deps.Compression.Enabled || c.a.comp.disabled {
		return nil
	}
	if float64(c.estimate(t)) < cfg.Threshold*float64(c.window()) {
		return nil
	}
	return c.Compress(ctx, t, false)
}

// Compress implements agent.Compressor: memory is flushed, the middle of
// the history is summarised, and the session continues in a child stream
// whose SessionStarted carries the compressed history; the parent records
// ContextCompressed.
func (c *compressor) Compress(ctx context.Context, t *history.Transcript, force bool) error {
	a := c.a
	if !force && a.comp.disabled {
		return nil
	}
	cfg := c.cfg()
	window := c.window()
	tailBudget := int(cfg.TargetRatio * cfg.Threshold * float64(window))
	head, tail, ok := compress.PlanWith(t.Messages, cfg, tailBudget, c.counter().Message)
	if !ok && c.squeeze {
		tight := cfg
		tight.ProtectFirstN, tight.ProtectLastN = 1, 1
		head, tail, ok = compress.PlanWith(t.Messages, tight, 0, c.counter().Message)
	}
	if !ok && c.squeeze {
		return errors.New("nothing to compress: the conversation is a single exchange")
	}
	if !ok {
		return errors.New("nothing to compress: the history is all protected (compression.protect_first_n and protect_last_n); /compress --force keeps only the first message and the last exchange")
	}
	c.flushMemory(ctx, t)
	before := c.estimate(t)
	middle := compress.Prune(t.Messages[head:tail], 2000)
	previous := ""
	for _, m := range t.Messages[:tail] {
		if s, ok := strings.CutPrefix(m.Content, compress.SummaryPrefix); ok {
			previous = s
		}
	}
	var summary string
	if a.deps.AuxCooldown.Active() {
		summary = compress.Fallback(previous, middle)
	} else {
		prov := a.deps.AuxProvider
		aux := a.deps.AuxModel
		if prov == nil {
			prov = a.deps.Provider
		}
		if aux == "" {
			aux = c.model
		}
		s, resp, err := compress.Summarizer{Provider: prov, Model: aux}.Summarize(ctx, previous, middle)
		if err == nil {
			c.recordAux(ctx, "compression", prov, aux, resp)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			a.log.Warn().Err(err).Msg("summariser failed; using the deterministic summary and cooling down")
			a.deps.AuxCooldown.Start(5 * time.Minute)
			s = compress.Fallback(previous, middle)
		}
		summary = s
	}
	if a.deps.Redact != nil {
		summary = a.deps.Redact(summary)
	}
	msgs := compress.Assemble(t.Messages[:head], summary, t.Messages[tail:])
	next := &history.Transcript{System: t.System, Messages: msgs}
	after := c.estimate(next)

	child := uuid.NewString()
	// The child is where this actor writes next: it is ours before it exists.
	if _, _, err := a.own.take(child); err != nil {
		return fmt.Errorf("lease the compressed session: %w", err)
	}
	start := a.started
	start.Reason, start.ParentSessionID, start.ParentTurnID, start.History, start.Goal = schema.StartCompression, a.rec.sessionID(), c.turnID, msgs, ""
	meta := schema.Meta{SessionID: child, TurnID: c.turnID}
	e1, err := schema.NewEnvelope(meta, start)
	if err != nil {
		return err
	}
	meta.CausationID = e1.ID
	e2, err := schema.NewEnvelope(meta, schema.SystemPromptBuilt{Content: t.System})
	if err != nil {
		return err
	}
	if _, err := a.deps.Store.Append(context.WithoutCancel(ctx), events.SessionStream(child), events.NoStream, e1, e2); err != nil {
		return fmt.Errorf("create the compressed session: %w", err)
	}
	if err := a.rec.Record(context.WithoutCancel(ctx), c.turnID, schema.ContextCompressed{ChildSessionID: child, Summary: summary,
		ReplacedFrom: head, ReplacedTo: tail, TokensBefore: int64(before), TokensAfter: int64(after)}); err != nil {
		return err
	}
	a.rec.switchTo(child, 1, e2.ID)
	*t = *next
	saved := 1 - float64(after)/float64(max(before, 1))
	if !force {
		if saved < 0.10 {
			a.comp.weak++
			if a.comp.weak >= 2 {
				a.comp.disabled = true
				a.log.Warn().Msg("two compressions in a row saved under 10%: automatic compression is off for this session (/compress still works)")
			}
		} else {
			a.comp.weak = 0
		}
	}
	a.log.Info().Str("child", child).Int("before", before).Int("after", after).Msg("compressed")
	return nil
}

// Overflowed records that the provider refused the prompt as too long:
// the model's window steps down and is remembered on disk.
func (c *compressor) Overflowed(err error) {
	if c.a.deps.Windows != nil {
		w := c.a.deps.Windows.StepDown(c.model, err.Error())
		c.a.log.Info().Str("model", c.model).Int("window", w).Msg("context overflow: window stepped down")
	}
}

// flushMemory gives the model one chance to save memories before the
// middle of the history is summarised away.
func (c *compressor) flushMemory(ctx context.Context, t *history.Transcript) {
	mem, ok := c.a.deps.Tools.Get("memory")
	if !ok || !c.a.deps.FlushMemory {
		return
	}
	msgs := agent.RepairHistory(t.Messages)
	if n := len(msgs); n > 0 && msgs[n-1].Role == "user" {
		msgs[n-1].Content += "\n\n" + flushPrompt
	} else {
		msgs = append(msgs, schema.Message{Role: "user", Content: flushPrompt})
	}
	resp, err := c.a.deps.Provider.Complete(ctx, model.Request{Model: c.model, System: t.System, Messages: msgs,
		Tools: []model.ToolSpec{mem.Spec()}}, func(model.Delta) {})
	if err != nil {
		c.a.log.Warn().Err(err).Msg("memory flush before compression failed")
		return
	}
	c.recordAux(ctx, "memory_flush", c.a.deps.Provider, c.model, resp)
	env := &tool.Env{SessionID: c.a.rec.sessionID(), TurnID: c.turnID, Values: c.a.values}
	for _, tc := range resp.ToolCalls {
		if tc.Function.Name != "memory" {
			continue
		}
		if _, err := mem.Run(tool.WithEnv(ctx, env), json.RawMessage(tc.Function.Arguments)); err != nil {
			c.a.log.Info().Err(err).Msg("a memory flush call was refused")
		}
	}
}

// recordAux records a model call made for the session outside its
// conversation, so that costs and the cost caps count it.
func (c *compressor) recordAux(ctx context.Context, purpose string, prov model.Provider, modelName string, resp model.Response) {
	ev := model.AuxCall(purpose, prov, modelName, resp, c.a.deps.Cfg.Prices)
	if err := c.a.rec.Record(context.WithoutCancel(ctx), c.turnID, ev); err != nil {
		c.a.log.Warn().Err(err).Str("purpose", purpose).Msg("could not record an auxiliary model call")
	}
}
