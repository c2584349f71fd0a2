// Package review is the background review: after a busy turn a session
// hands its conversation to a Reviewer, which runs a child session of its
// own (Reason review, linked to the turn) on the auxiliary model, with the
// memory and skill tools alone, a step budget and a cost cap, and records
// on the "reviews" stream when it started, how it ended, what it changed
// and the one-line note the person is shown. A review runs beside the
// session, never in its way; one the process did not finish (killed,
// crashed) is closed as abandoned by the next Reviewer's Recover, from its
// events.
package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// Stream lists every background review, from its ReviewStarted to its
// ReviewFinished (and ReviewUndone).
const Stream = "reviews"

// Defaults of Config.
const (
	DefaultMaxSteps = 8
	DefaultMaxCost  = 0.25
	DefaultTimeout  = 2 * time.Minute
	// keepMessages bounds the conversation a review reads (its tail).
	keepMessages = 60
)

// Config is what a Reviewer needs.
type Config struct {
	Store events.Store
	Log   zerolog.Logger
	// Provider and Model are the review's (the auxiliary model when one
	// is configured for reviews, else the main one).
	Provider model.Provider
	Model    string
	Prices   model.Prices
	// Tools are the review's tools: memory, skill_manage, skills_list,
	// skill_view (whatever else is in it is not offered).
	Tools tool.Toolbox
	// MaxSteps bounds the review's model calls; MaxCost (USD) its
	// spending, checked before each call; Timeout its whole run.
	MaxSteps int
	MaxCost  float64
	Timeout  time.Duration
	// Leases, when set, make the process running a review the only one
	// that may close it: Recover leaves a review another live process
	// runs alone.
	Leases session.Leaser
	// Notify, when set, hears of every review's end (the one-line note
	// the chat shows).
	Notify func(Finished)
	// Redact removes secrets from what the review's model wrote.
	Redact func(string) string
}

// Finished is a review's end as Notify hears it.
type Finished struct {
	SessionID string
	schema.ReviewFinished
}

// Reviewer runs background reviews, each in its own goroutine.
type Reviewer struct {
	cfg     Config
	tools   tool.Toolbox
	wg      sync.WaitGroup
	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
	closed  bool
}

// allowed are the tools a review may use.
var allowed = []string{"memory", "skill_manage", "skills_list", "skill_view"}

// New returns a Reviewer of cfg.
func New(cfg Config) *Reviewer {
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	var ts []tool.Tool
	for _, n := range allowed {
		if t, ok := cfg.Tools.Get(n); ok {
			ts = append(ts, t)
		}
	}
	return &Reviewer{cfg: cfg, tools: tool.NewTools(ts...), running: map[string]context.CancelCauseFunc{}}
}

// Start runs the review req asks for in the background and returns at
// once; session.Deps.Review is this.
func (r *Reviewer) Start(req session.ReviewRequest) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	r.running[req.ID] = cancel
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			delete(r.running, req.ID)
			r.mu.Unlock()
			cancel(nil)
		}()
		if err := r.run(ctx, req); err != nil {
			r.cfg.Log.Warn().Err(err).Str("review", req.ID).Str("session", req.SessionID).Msg("background review failed")
		}
	}()
}

// Close lets the running reviews finish for up to wait, then stops them
// (each records that it was abandoned) and waits for that.
func (r *Reviewer) Close(wait time.Duration) {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(wait):
	}
	r.mu.Lock()
	for _, cancel := range r.running {
		cancel(agent.Cause("hermes stopped before the review ended"))
	}
	r.mu.Unlock()
	<-done
}

// Running says how many reviews run now.
func (r *Reviewer) Running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.running)
}

// systemNote is added to the reviewed session's stable prefix.
const systemNote = `

## You are a background review
You are not talking to the user: you read a conversation that just happened and decide what is worth keeping for next time. Your tools are memory and the skill tools alone, and your steps are few. Nothing you write here is shown to the user except a one-line note of what you saved.`

// prompt is the review's user message; skills and memory choose its parts.
func prompt(skills, memory bool) string {
	var b strings.Builder
	b.WriteString("The conversation above has just ended a turn. Review it.\n\n")
	if skills {
		b.WriteString(`Skills: did a procedure emerge that a future session would want to follow again (a sequence of steps that worked, a fix and how it was found, a correction the user made to how you work)? If so, save it with skill_manage: patch the skill that was in use when one covers it (skills_list and skill_view show what exists), otherwise create one skill named for the kind of task, not for today's instance. A skill is a SKILL.md with frontmatter (name, description) and short numbered steps. Do not save failures caused by the environment (missing programs, credentials), claims that a tool does not work, or one-off tasks.

`)
	}
	if memory {
		b.WriteString(`Memory: did the user say something durable about themselves, their preferences or how they want you to work? If so, save it with the memory tool (target=user for the user, target=memory for facts about the environment). Keep entries short; do not repeat what memory already holds.

`)
	}
	b.WriteString("When there is nothing worth keeping, answer \"Nothing to save.\" and stop. Otherwise make the changes, then answer with one short line saying what you saved.")
	return b.String()
}

// tail keeps the last keepMessages of msgs, starting at a user message so
// that no tool result loses its call.
func tail(msgs []schema.Message) []schema.Message {
	if len(msgs) <= keepMessages {
		return msgs
	}
	start := len(msgs) - keepMessages
	for start < len(msgs) && msgs[start].Role != "user" {
		start++
	}
	if start == len(msgs) {
		return msgs
	}
	return msgs[start:]
}

// run runs one review to its end and records it.
func (r *Reviewer) run(ctx context.Context, req session.ReviewRequest) error {
	if r.cfg.Leases != nil {
		l, err := r.cfg.Leases.Lease(req.ID)
		if err != nil {
			return err
		}
		defer l.Release()
	}
	durable := context.WithoutCancel(ctx)
	if err := appendTo(durable, r.cfg.Store, Stream, schema.Meta{SessionID: req.SessionID, TurnID: req.TurnID}, schema.ReviewStarted{ReviewID: req.ID,
		SessionID: req.SessionID, TurnID: req.TurnID, Skills: req.Skills, Memory: req.Memory, Model: r.cfg.Model}); err != nil {
		return err
	}
	rec, tr, err := r.open(durable, req)
	if err != nil {
		return r.finish(durable, req.SessionID, req.ID, nil, schema.ReviewFinished{ReviewID: req.ID, Status: schema.ReviewFailed, Error: err.Error()})
	}
	ctx, cancel := context.WithTimeoutCause(ctx, r.cfg.Timeout, agent.Cause("the review took longer than its timeout"))
	defer cancel()
	budget := tool.NewBudget(r.cfg.MaxSteps)
	capped := false
	provider := r.cfg.Provider
	if lad, ok := provider.(*model.Ladder); ok {
		provider = lad.ForTurn() // the review's own fallbacks, as a turn has
	}
	loop := &agent.Loop{Provider: provider, Tools: r.tools, Exec: tool.DirectExecutor{Timeout: r.cfg.Timeout}, Rec: rec, Budget: budget,
		Cfg: agent.Config{Model: r.cfg.Model, Prices: r.cfg.Prices, MaxParallelTools: 1}, Redact: r.cfg.Redact,
		Guard: func() error {
			if max := r.cfg.MaxCost; max > 0 && rec.spent() >= max {
				capped = true
				return fmt.Errorf("the review's cost cap is reached ($%.4f of skills.background_review_max_cost $%.2f)", rec.spent(), max)
			}
			return nil
		},
		Env: tool.Env{SessionID: req.ID, Depth: 1, ReviewOf: req.SessionID, ReviewOfTurn: req.TurnID}}
	_, err = loop.TurnMessage(ctx, tr, uuid.NewString(), schema.UserMessageAdded{Content: prompt(req.Skills, req.Memory), Source: "review"})
	fin := schema.ReviewFinished{ReviewID: req.ID, Status: schema.ReviewCompleted}
	switch {
	case capped:
		fin.Status, fin.Error = schema.ReviewBudget, err.Error()
	case errors.Is(err, agent.ErrInterrupted):
		fin.Status, fin.Error = schema.ReviewAbandoned, context.Cause(ctx).Error()
	case err != nil:
		fin.Status, fin.Error = schema.ReviewFailed, err.Error()
	case budget.Remaining() == 0:
		fin.Status = schema.ReviewBudget
	}
	return r.finish(durable, req.SessionID, req.ID, rec, fin)
}

// open creates the review's session: its start names the reviewed turn and
// carries the conversation, its prompt is the reviewed session's with the
// review's part added.
func (r *Reviewer) open(ctx context.Context, req session.ReviewRequest) (*recorder, *history.Transcript, error) {
	start := schema.SessionStarted{Source: "review", Model: r.cfg.Model, Provider: r.cfg.Provider.Name(), Reason: schema.StartReview,
		ParentSessionID: req.SessionID, ParentTurnID: req.TurnID, Goal: "background review", History: tail(req.Messages)}
	meta := schema.Meta{SessionID: req.ID}
	e1, err := schema.NewEnvelope(meta, start)
	if err != nil {
		return nil, nil, err
	}
	meta.CausationID = e1.ID
	e2, err := schema.NewEnvelope(meta, schema.SystemPromptBuilt{Content: req.System + systemNote})
	if err != nil {
		return nil, nil, err
	}
	res, err := r.cfg.Store.Append(ctx, events.SessionStream(req.ID), events.NoStream, e1, e2)
	if err != nil {
		return nil, nil, fmt.Errorf("create review session %s: %w", req.ID, err)
	}
	tr := &history.Transcript{}
	tr.Apply(start)
	tr.Apply(schema.SystemPromptBuilt{Content: req.System + systemNote})
	return &recorder{store: r.cfg.Store, session: req.ID, revision: res.NextRevision, lastID: e2.ID}, tr, nil
}

// finish closes the review: its session ends, and the "reviews" stream
// gets its ReviewFinished with what it changed (read from its session)
// and the note; Notify hears of it.
func (r *Reviewer) finish(ctx context.Context, parent, id string, rec *recorder, fin schema.ReviewFinished) error {
	rs, err := r.cfg.Store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
	if err == nil {
		fin.Changes, fin.Usage, fin.CostUSD = Changes(rs)
	}
	fin.Note = Note(fin)
	if rec != nil {
		if err := rec.Record(ctx, "", schema.SessionEnded{Reason: "review " + fin.Status}); err != nil {
			r.cfg.Log.Warn().Err(err).Str("review", id).Msg("ending the review's session failed")
		}
	}
	if err := appendTo(ctx, r.cfg.Store, Stream, schema.Meta{SessionID: parent}, fin); err != nil {
		return err
	}
	if r.cfg.Notify != nil {
		r.cfg.Notify(Finished{SessionID: parent, ReviewFinished: fin})
	}
	return nil
}

// Changes reads what a review's session changed (its memory and
// skill_manage calls that succeeded) and what its model calls cost.
func Changes(rs []events.Recorded) ([]schema.ReviewChange, schema.Usage, float64) {
	var out []schema.ReviewChange
	var u schema.Usage
	var cost float64
	calls := map[string]schema.ToolCallStarted{}
	for _, rec := range rs {
		p, err := schema.Decode(rec.Envelope)
		if err != nil {
			continue
		}
		switch e := p.(type) {
		case schema.AssistantMessageAdded:
			u, cost = u.Add(e.Usage), cost+e.CostUSD
		case schema.ToolCallStarted:
			calls[e.CallID] = e
		case schema.ToolResultAdded:
			c, ok := calls[e.CallID]
			if !ok || e.Error != "" || e.Interrupted {
				continue
			}
			var a struct {
				Action, Name, Target, Content string
				OldText                       string `json:"old_text"`
			}
			if json.Unmarshal([]byte(c.Arguments), &a) != nil {
				continue
			}
			switch c.Name {
			case "skill_manage":
				out = append(out, schema.ReviewChange{Kind: schema.ReviewChangeSkill, Action: a.Action, Name: a.Name})
			case "memory":
				ch := schema.ReviewChange{Kind: schema.ReviewChangeMemory, Action: a.Action, Target: a.Target, Content: a.Content, OldText: a.OldText}
				if _, rest, ok := strings.Cut(e.Content, "staged for the user's approval as "); ok {
					ch.Staged, _, _ = strings.Cut(rest, " ")
				}
				out = append(out, ch)
			}
		}
	}
	return out, u, cost
}

// Note is the one line the person is shown of a review's end.
func Note(f schema.ReviewFinished) string {
	var parts []string
	memories, staged := 0, 0
	for _, c := range f.Changes {
		switch c.Kind {
		case schema.ReviewChangeSkill:
			done := map[string]string{"create": "created", "patch": "patched", "edit": "edited", "write_file": "added a file to", "remove_file": "removed a file from", "delete": "archived"}[c.Action]
			if done == "" {
				done = c.Action
			}
			parts = append(parts, fmt.Sprintf("%s skill %s", done, c.Name))
		case schema.ReviewChangeMemory:
			if c.Staged != "" {
				staged++
			} else {
				memories++
			}
		}
	}
	if memories > 0 {
		parts = append(parts, plural(memories, "memory entry", "memory entries")+" updated")
	}
	if staged > 0 {
		parts = append(parts, plural(staged, "memory change", "memory changes")+" awaiting /memory approval")
	}
	short := f.ReviewID
	if len(short) > 8 {
		short = short[:8]
	}
	switch {
	case len(parts) > 0:
		s := "learned: " + strings.Join(parts, "; ") + " (undo: hermes review undo " + short + ")"
		if f.Status != schema.ReviewCompleted {
			s = f.Status + ", " + s
		}
		return s
	case f.Status == schema.ReviewCompleted:
		return "nothing new to learn from this turn"
	default:
		return "the background review ended " + f.Status + " without learning anything"
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// appendTo appends p to a shared stream (other processes append too).
func appendTo(ctx context.Context, store events.Store, stream string, meta schema.Meta, p schema.Payload) error {
	e, err := schema.NewEnvelope(meta, p)
	if err != nil {
		return err
	}
	if _, err := store.Append(ctx, stream, events.Any, e); err != nil {
		return fmt.Errorf("append to %s: %w", stream, err)
	}
	return nil
}

// recorder appends the review session's events: the review is its
// stream's only writer.
type recorder struct {
	mu       sync.Mutex
	store    events.Store
	session  string
	revision uint64
	lastID   string
	cost     float64
}

func (r *recorder) spent() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cost
}

// Record implements agent.Recorder.
func (r *recorder) Record(ctx context.Context, turnID string, ps ...schema.Payload) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	envs, err := schema.Chain(schema.Meta{SessionID: r.session, TurnID: turnID, CausationID: r.lastID}, ps...)
	if err != nil {
		return err
	}
	res, err := r.store.Append(ctx, events.SessionStream(r.session), events.Exact(r.revision), envs...)
	if err != nil {
		return fmt.Errorf("review %s: %w", r.session, err)
	}
	r.revision = res.NextRevision
	if len(envs) > 0 {
		r.lastID = envs[len(envs)-1].ID
	}
	for _, p := range ps {
		switch e := p.(type) {
		case schema.AssistantMessageAdded:
			r.cost += e.CostUSD
		case schema.AuxiliaryCallCompleted:
			r.cost += e.CostUSD
		}
	}
	return nil
}
