// Package session is the SessionActor: one actor per session, named by its
// id, that owns the session's stream, serialises its turns, and recovers
// its state on start by folding its events. A turn runs beside the actor's
// mailbox so that /stop and new messages are handled while it is in flight.
package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/compress"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// Start describes a new session.
type Start struct {
	Source     string
	Model      string
	Provider   string
	WorkingDir string
	// System is the stable prefix, built once and stored.
	System string
}

// Create appends the opening events of a new session.
func Create(ctx context.Context, store events.Store, id string, s Start) error {
	meta := schema.Meta{SessionID: id}
	started, err := schema.NewEnvelope(meta, schema.SessionStarted{Source: s.Source, Model: s.Model, Provider: s.Provider,
		WorkingDir: s.WorkingDir, Reason: schema.StartNew})
	if err != nil {
		return err
	}
	meta.CausationID = started.ID
	prompt, err := schema.NewEnvelope(meta, schema.SystemPromptBuilt{Content: s.System})
	if err != nil {
		return err
	}
	if _, err := store.Append(ctx, events.SessionStream(id), events.NoStream, started, prompt); err != nil {
		return fmt.Errorf("create session %s: %w", id, err)
	}
	return nil
}

// Deps are what a session actor needs; Loop parts are shared by sessions.
type Deps struct {
	Store    events.Store
	Log      zerolog.Logger
	Provider model.Provider
	Tools    tool.Toolbox
	Exec     tool.Executor
	Cfg      agent.Config
	// MaxTurns is the iteration budget of each turn.
	MaxTurns int
	// Ephemeral adds call-time context (memory prefetch and the like).
	Ephemeral func() string
	// Hooks hear of every turn's start and end (shell hooks).
	Hooks agent.TurnHooks
	// Asker reaches the person for clarify and approvals (nil: nobody).
	Asker tool.Asker
	// Yolo approves dangerous commands that are not hard-line.
	Yolo bool
	// Compression keeps the history within the context window (Enabled
	// switches automatic compression on); Windows knows context windows.
	Compression compress.Config
	Windows     *compress.Windows
	// AuxProvider and AuxModel summarise (default: the main ones).
	AuxProvider model.Provider
	AuxModel    string
	// FlushMemory lets the model save memories before compression.
	FlushMemory bool
	// AuxCooldown is shared by the sessions of a manager (set by it).
	AuxCooldown *compress.Cooldown
	// MaxDepth bounds subagent nesting (delegation.max_depth, default 2);
	// MaxConcurrent the subagents running at once per session (default 3).
	MaxDepth      int
	MaxConcurrent int
	// Restrict returns the toolbox of a subagent asking for toolsets (nil:
	// the parent's); delegate says whether it may delegate further.
	Restrict func(toolsets []string, delegate bool) tool.Toolbox
	// ChildRestarts within ChildWindow bound a subagent's restarts.
	ChildRestarts int
	ChildWindow   time.Duration
	// MaxCostPerSession and MaxCostPerDay (USD, 0: none) are checked
	// before each model call; DayCost reports today's spending so far.
	MaxCostPerSession float64
	MaxCostPerDay     float64
	DayCost           func() float64
	// SkillNudgeAfter: after a turn with at least this many tool calls,
	// the next call carries a reminder to save what was learned as a
	// skill (when skill_manage is enabled). 0 turns it off.
	SkillNudgeAfter int
	// Leases, when set, make each session actor the only writer of its
	// stream among processes (nil: this process is trusted to be alone).
	Leases Leaser
	// Title, when set, names a new session after its first exchange that
	// answered (Hermes asks the auxiliary model): the session records the
	// call's AuxiliaryCallCompleted and a SessionTitled, unless a title
	// was set meanwhile (Retitle wins). An error leaves it untitled.
	Title func(ctx context.Context, session, user, answer string) (string, schema.AuxiliaryCallCompleted, error)
	// Redact, when set, removes secrets from what a model wrote before it
	// is recorded (answers, reasoning, tool-call arguments, compression
	// summaries): the events are what search, export, the dashboard and
	// the API serve. Hermes passes its secrets.Set's Redact.
	Redact func(string) string
	// IdleAfter is how long a session managed by a Manager stays idle
	// (no turn running or queued, no subagent, no compression or title
	// in flight, no message) before its actor passivates: it stops,
	// releasing its lease, lock file, sandbox and memory, and its next
	// message starts it again from its events. Zero is
	// DefaultIdleAfter; negative never passivates.
	IdleAfter time.Duration
	// Blobs reads the images user messages name, for the provider to
	// send (nil: they go as text). Sees and Describe are the loop's: which
	// models take images, and the auxiliary vision model that describes
	// one for a model that does not (see agent.Loop).
	Blobs    model.Blobs
	Sees     func(model string) bool
	Describe func(ctx context.Context, ref schema.ImageRef) (string, *schema.AuxiliaryCallCompleted, error)
	// Review, when set, starts background reviews (see ReviewRequest); it
	// must return at once: the review runs on its own, and the session's
	// next turn does not wait for it. ReviewSkillsAfter is the
	// tool-calling steps since the last skill review (or skill_manage
	// call) that make a skill review due (upstream's
	// skills.creation_nudge_interval), ReviewMemoryAfter the user turns
	// since the last memory review (or memory call) that make a memory
	// review due (memory.nudge_interval); 0 turns that kind off.
	Review            func(ReviewRequest)
	ReviewSkillsAfter int
	ReviewMemoryAfter int
}

// stopWait bounds how long a stopping session waits for its cancelled
// turn to record how it ended before it gives its lease up.
const stopWait = 10 * time.Second

const skillNudge = "[Your last task took many tool calls. If you learned a procedure worth reusing, save it with skill_manage (action=create) after answering.]"

// Actor is the session actor.
type Actor struct {
	id   string
	deps Deps
	log  zerolog.Logger

	rec     *recorder
	tr      *history.Transcript
	wd      string
	values  *tool.SessionValues
	started schema.SessionStarted
	comp    compression

	counter      *compress.Counter
	counterModel string

	// Subagents: the task of a child actor (nil for a top-level session),
	// its depth, the strategy supervising its own children, and slots
	// bounding how many run at once.
	task     *childTask
	depth    int
	strategy *childStrategy
	slots    chan struct{}
	children map[string]*actor.PID
	openTurn string
	// hasTurn: the session's stream (as recovered, or since) holds a
	// turn's events; a Turn marked New is refused then.
	hasTurn bool

	cancel context.CancelCauseFunc // of the turn in flight
	// steer holds the guidance sent to the turn in flight (nil between
	// turns, and for a compression).
	steer *steerBox
	// running is closed when the last turn or compression started has
	// ended (written its last event).
	running chan struct{}
	queue   []*Turn

	// hasTitle: the session has a title (recorded, or asked for);
	// userTitle: the person set it, so a generated one arriving late
	// is not recorded over it.
	hasTitle  bool
	userTitle bool

	// own outlives restarts: the leases held and the first start's report.
	own *ownership

	// titling: a generated title is being asked for.
	titling bool
	// skillMark and memoryMark are where in the transcript the last
	// skill and memory reviews were spawned: the thresholds count from
	// there.
	skillMark, memoryMark int
	// passivate asks the manager whether this idle actor may stop (nil:
	// not managed, it never passivates); idleGen tells the idle check
	// of the current idle spell from stale ones, idleTimer sends it;
	// leaving: the actor passivates.
	passivate func(id string, self *actor.PID) bool
	idleGen   uint64
	idleTimer *time.Timer
	leaving   bool
	// lostLease: the store lease ended under the actor (leaseLost); it
	// stops when its turn in flight ends.
	lostLease bool
}

// Props returns the props of the actor for session id.
func Props(id string, deps Deps) *actor.Props {
	return props(id, deps, nil, nil)
}

// props are Props whose first start reports its outcome on ready: nil
// when the session was recovered, else why not (then the actor waits to
// be stopped instead of failing to its supervisor). An idle actor asks
// passivate whether it may stop (nil: it never does).
func props(id string, deps Deps, ready chan<- error, passivate func(string, *actor.PID) bool) *actor.Props {
	strategy := newChildStrategy(deps.ChildRestarts, deps.ChildWindow)
	own := newOwnership(deps.Leases, ready)
	return actor.PropsFromProducer(func() actor.Actor {
		return &Actor{id: id, deps: deps, log: deps.Log.With().Str("session", id).Logger(), strategy: strategy, own: own, passivate: passivate}
	}, actor.WithSupervisor(strategy))
}

// Receive implements actor.Actor.
func (a *Actor) Receive(c actor.Context) {
	a.receive(c)
	switch c.Message().(type) {
	case *idleCheck, *actor.Stopping, *actor.Stopped, *actor.Restarting:
	default:
		// Any other message is activity: the idle clock starts again.
		a.idleClock(c)
	}
}

// idle says whether the session could stop now without cutting anything
// short or losing a message it sent itself: no turn or compression runs or
// waits (a pending question is asked from a running turn), no subagent
// lives, no title is being generated. A subagent is never idle: it stops
// when its task ends.
func (a *Actor) idle() bool {
	return a.task == nil && a.rec != nil && a.cancel == nil && len(a.queue) == 0 && len(a.children) == 0 && !a.titling
}

// idleClock restarts the idle clock: when the session is idle, an
// idleCheck comes back after Deps.IdleAfter unless something happens
// meanwhile.
func (a *Actor) idleClock(c actor.Context) {
	a.stopIdleClock()
	if a.passivate == nil || a.deps.IdleAfter <= 0 || a.leaving || !a.idle() {
		return
	}
	gen, self, root := a.idleGen, c.Self(), c.ActorSystem().Root
	a.idleTimer = time.AfterFunc(a.deps.IdleAfter, func() { root.Send(self, &idleCheck{gen: gen}) })
}

func (a *Actor) stopIdleClock() {
	a.idleGen++
	if a.idleTimer != nil {
		a.idleTimer.Stop()
		a.idleTimer = nil
	}
}

func (a *Actor) receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		n := a.deps.MaxConcurrent
		if n <= 0 {
			n = DefaultMaxConcurrent
		}
		a.slots, a.children = make(chan struct{}, n), map[string]*actor.PID{}
		if err := a.recover(context.Background()); err != nil {
			if a.own.started(err) {
				return // the manager stops this actor and reports err
			}
			// Failing here hands the problem to the supervisor.
			panic(fmt.Errorf("session %s: recover: %w", a.id, err))
		}
		a.own.started(nil)
		if a.task != nil {
			a.start(c, &Turn{Text: a.task.goal, Observe: a.task.observe, Yolo: a.task.yolo})
		}
	case *spawnChild:
		deps := a.deps
		deps.Tools = m.task.tools
		pid, err := c.SpawnNamed(childProps(m.id, deps, m.task), m.id)
		if err == nil {
			a.strategy.register(pid.Id, m.task)
			a.children[m.id] = pid
		}
		m.reply <- err
	case *stopChild:
		if pid, ok := a.children[m.id]; ok {
			c.Send(pid, &Stop{Reason: "the parent's turn was interrupted"})
		}
	case *childFailed:
		panic(m.err)
	case *leaseLost:
		// The turn in flight, if any, finishes first: its appends name
		// the stream's exact revision, so they land only if no other
		// process wrote the session meanwhile, and the model is not
		// asked again for a step it already answered (stopping here cut
		// turns whose answer was in hand when a PostgreSQL restart broke
		// the lease's connection, and their retry asked the model again).
		a.lostLease, a.leaving = true, true
		a.stopIdleClock()
		if a.cancel == nil {
			c.Stop(c.Self())
		}
	case *idleCheck:
		if m.gen != a.idleGen || a.leaving || !a.idle() {
			return // stale: something happened since
		}
		a.idleTimer = nil
		if !a.passivate(a.id, c.Self()) {
			a.idleClock(c) // a caller is about to send something
			return
		}
		a.leaving = true
		a.log.Debug().Dur("idle", a.deps.IdleAfter).Msg("session idle: passivating")
		c.Stop(c.Self())
	case *actor.Terminated:
		// A subagent stopped (its task ended, or it was given up).
		for id, pid := range a.children {
			if pid.Id == m.Who.Id {
				delete(a.children, id)
				a.strategy.unregister(pid.Id)
			}
		}
	case *Turn:
		if m.New && (a.hasTurn || a.cancel != nil || len(a.queue) > 0) {
			m.Reply <- TurnResult{SessionID: a.rec.sessionID(), TurnID: m.ID, Err: ErrNotNew}
			return
		}
		if a.cancel != nil {
			a.queue = append(a.queue, m)
			a.cancel(agent.Cause("a new user message arrived"))
			return
		}
		a.start(c, m)
	case *Steer:
		if a.cancel == nil || a.steer == nil || a.task != nil {
			m.Reply <- ErrNotRunning
			return
		}
		a.steer.add(m.Text)
		m.Reply <- nil
	case *Stop:
		for _, q := range a.queue {
			q.Reply <- TurnResult{Err: agent.ErrInterrupted}
		}
		a.queue = nil
		if a.cancel != nil {
			reason := m.Reason
			if reason == "" {
				reason = "stopped"
			}
			a.cancel(agent.Cause(reason))
		}
	case *CompressNow:
		if a.cancel != nil {
			m.Reply <- TurnResult{Err: errors.New("a turn is running: /stop it before compressing")}
			return
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		a.cancel = cancel
		running := make(chan struct{})
		a.running = running
		model := m.Model
		if model == "" {
			model = a.deps.Cfg.Model
		}
		comp := &compressor{a: a, turnID: uuid.NewString(), model: model, squeeze: m.Force}
		self, root, tr := c.Self(), c.ActorSystem().Root, a.tr
		go func() {
			err := comp.Compress(ctx, tr, true)
			cancel(nil)
			close(running)
			root.Send(self, &turnDone{turn: &Turn{Reply: m.Reply}, result: TurnResult{SessionID: a.rec.sessionID(), Err: err}})
		}()
	case *turnDone:
		a.cancel, a.steer = nil, nil
		if a.task != nil {
			a.finishTask(c, m.result)
			return
		}
		// The review is handed over before the answer: a caller that
		// stops once answered (chat -q) finds it running, and waits.
		a.maybeReview(m.result)
		if m.turn.Reply != nil {
			m.turn.Reply <- m.result
		}
		a.maybeTitle(c, m.result)
		if a.lostLease {
			for _, q := range a.queue {
				q.Reply <- TurnResult{Err: agent.ErrInterrupted}
			}
			a.queue = nil
			c.Stop(c.Self())
			return
		}
		if len(a.queue) > 0 {
			next := a.queue[0]
			a.queue = a.queue[1:]
			a.start(c, next)
		}
	case *Retitle:
		a.hasTitle, a.userTitle = true, true
		m.Reply <- a.rec.Record(context.Background(), "", schema.SessionTitled{Title: m.Title})
	case *titled:
		a.titling = false
		if m.title == "" {
			return // none generated
		}
		ps := []schema.Payload{m.call}
		if !a.userTitle {
			ps = append(ps, schema.SessionTitled{Title: m.title})
		}
		if err := a.rec.Record(context.Background(), m.turnID, ps...); err != nil {
			a.log.Warn().Err(err).Msg("recording the generated title failed")
		}
	case *actor.Stopping:
		a.stopIdleClock()
		if a.cancel != nil {
			a.cancel(agent.Cause("session stopped"))
		}
	case *actor.Stopped:
		ended := true
		if a.running != nil {
			// The turn cancelled on Stopping records how it ended: the
			// lease is given up after that, not while it still writes.
			select {
			case <-a.running:
			case <-time.After(stopWait):
				ended = false
				a.log.Warn().Dur("waited", stopWait).Msg("the stopped session's turn did not end: releasing its lease anyway")
			}
		}
		if a.values != nil {
			a.values.Close()
		}
		a.own.release()
		if ended {
			// Nothing reads them any more.
			a.tr, a.started, a.queue = nil, schema.SessionStarted{}, nil
		}
		// The supervisor keeps a stale reference to this actor's PID
		// (protoactor's PIDSet leaves removed children in its slice's
		// spare capacity), and the PID caches the process, so the whole
		// actor, until a send to the PID notices the process is dead
		// and drops the cache: this is that send (a dead letter, not
		// logged).
		c.Send(c.Self(), forgotten{})
	case *actor.Restarting:
		a.stopIdleClock()
	case *actor.ReceiveTimeout:
		// Lifecycle messages protoactor delivers that need nothing here.
	default:
		a.log.Warn().Str("message_type", fmt.Sprintf("%T", m)).Msg("session actor: message not handled")
	}
}

// steerBox is the guidance sent to one turn, taken by its loop.
type steerBox struct {
	mu    sync.Mutex
	texts []string
}

func (b *steerBox) add(s string) {
	b.mu.Lock()
	b.texts = append(b.texts, s)
	b.mu.Unlock()
}

func (b *steerBox) take() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.texts
	b.texts = nil
	return out
}

func (a *Actor) start(c actor.Context, t *Turn) {
	ctx, cancel := context.WithCancelCause(context.Background())
	a.cancel = cancel
	a.steer = &steerBox{}
	running := make(chan struct{})
	a.running = running
	a.hasTurn = true
	turnID := t.ID
	if turnID == "" {
		turnID = uuid.NewString()
	}
	continuing := (a.task != nil && a.openTurn != "") || t.Continue
	if a.task != nil && a.openTurn != "" {
		turnID = a.openTurn
	}
	cfg := a.deps.Cfg
	if t.Model != "" {
		cfg.Model = t.Model
	}
	ephemeral := a.deps.Ephemeral
	if a.nudgeDue() {
		base := ephemeral
		ephemeral = func() string {
			if base == nil {
				return skillNudge
			}
			return base() + "\n\n" + skillNudge
		}
	}
	if t.Persona != "" {
		base, persona := ephemeral, personaNote(t.Persona)
		ephemeral = func() string {
			if base == nil {
				return persona
			}
			return base() + "\n\n" + persona
		}
	}
	provider := a.deps.Provider
	if lad, ok := provider.(*model.Ladder); ok {
		turn := lad.ForTurn()
		if t.Observe != nil {
			observe := t.Observe
			turn.Status = func(s string) { observe(agent.Observation{Kind: agent.ObserveStatus, Text: s}) }
		}
		provider = turn
	}
	comp := &compressor{a: a, turnID: turnID, model: cfg.Model}
	budget := tool.NewBudget(a.deps.MaxTurns)
	if a.task != nil {
		budget = a.task.budget // one budget for the whole tree
	}
	self, root := c.Self(), c.ActorSystem().Root
	loop := &agent.Loop{Provider: provider, Tools: a.deps.Tools, Compressor: comp, Guard: a.guard, Exec: a.deps.Exec, Rec: a.rec, Observe: t.Observe, Steered: a.steer.take,
		Budget: budget, Cfg: cfg, Ephemeral: ephemeral, Hooks: a.deps.Hooks, KeepOpenOnError: a.task != nil, Redact: a.deps.Redact,
		Blobs: a.deps.Blobs, Sees: a.deps.Sees, Describe: a.deps.Describe,
		Env: tool.Env{SessionID: a.id, WorkingDir: a.wd, Asker: a.deps.Asker, Yolo: a.deps.Yolo || t.Yolo, Values: a.values, Depth: a.depth,
			Delegate: &delegator{a: a, self: self, root: root, turnID: turnID, observe: t.Observe}}}
	tr := a.tr
	ctx, span := a.startTurnSpan(ctx, t, turnID)
	go func() {
		var answer string
		var err error
		if continuing {
			answer, err = loop.Continue(ctx, tr, turnID)
		} else {
			answer, err = loop.TurnMessage(ctx, tr, turnID, schema.UserMessageAdded{Content: t.Text, Images: t.Images, Skills: t.Skills})
		}
		if ferr := a.rec.flush(); ferr != nil && err == nil {
			err = ferr
		}
		endTurnSpan(ctx, span, err)
		cancel(nil)
		close(running)
		res := TurnResult{SessionID: a.rec.sessionID(), TurnID: turnID, Answer: answer, Err: err}
		if u, ok := a.rec.usageOf(turnID); ok && !continuing {
			res.Usage = &u
		}
		root.Send(self, &turnDone{turn: t, result: res})
	}()
}

// finishTask ends a subagent's turn: a provider failure fails the actor
// so that its supervisor restarts it (it recovers from its stream and
// continues); anything else answers the delegating tool and stops.
func (a *Actor) finishTask(c actor.Context, r TurnResult) {
	if r.Err != nil && !errors.Is(r.Err, agent.ErrInterrupted) {
		a.log.Warn().Err(r.Err).Msg("subagent turn failed; letting its supervisor decide")
		c.Send(c.Self(), &childFailed{err: r.Err})
		return
	}
	status := "completed"
	switch {
	case errors.Is(r.Err, agent.ErrInterrupted):
		status = "interrupted"
	case a.task.budget.Remaining() == 0:
		status = "budget_exhausted"
	}
	u, cost := a.usageSoFar(context.Background())
	a.task.finish(tool.DelegateResult{Status: status, Answer: r.Answer, Usage: u, Cost: cost})
	c.Stop(c.Self())
}

// maybeTitle asks Deps.Title for a title after the first exchange of a new
// top-level session that answered; the answer comes back as a titled
// message, so that it is recorded by the actor, after any title the
// person set meanwhile.
func (a *Actor) maybeTitle(c actor.Context, r TurnResult) {
	if a.deps.Title == nil || a.hasTitle || a.task != nil || r.Err != nil {
		return
	}
	if a.started.Reason != "" && a.started.Reason != schema.StartNew {
		return // forks, compressions and subagents are named otherwise
	}
	var user, answer string
	for _, m := range a.tr.Messages {
		if m.Role == "user" && user == "" {
			user = m.Content
		}
		if m.Role == "assistant" && user != "" && m.Content != "" {
			answer = m.Content
			break
		}
	}
	if user == "" || answer == "" {
		return
	}
	a.hasTitle = true // one try per actor
	a.titling = true  // the actor does not passivate before the answer
	self, root, title, log, id := c.Self(), c.ActorSystem().Root, a.deps.Title, a.log, a.rec.sessionID()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		t, call, err := title(ctx, id, user, answer)
		if err != nil || t == "" {
			log.Debug().Err(err).Msg("no title generated")
			root.Send(self, &titled{turnID: r.TurnID})
			return
		}
		root.Send(self, &titled{turnID: r.TurnID, title: t, call: call})
	}()
}

// guard enforces the cost caps before each model call.
func (a *Actor) guard() error {
	if max := a.deps.MaxCostPerSession; max > 0 {
		if spent := a.rec.cost(); spent >= max {
			return fmt.Errorf("cost cap reached: this session has spent $%.4f of budget.max_cost_per_session $%.2f; raise it in config.yaml or start a new session", spent, max)
		}
	}
	if max := a.deps.MaxCostPerDay; max > 0 && a.deps.DayCost != nil {
		if spent := a.deps.DayCost(); spent >= max {
			return fmt.Errorf("cost cap reached: $%.4f spent today of budget.max_cost_per_day $%.2f; raise it in config.yaml or wait until tomorrow (UTC)", spent, max)
		}
	}
	return nil
}

// nudgeDue reports whether the previous turn made enough tool calls to
// deserve the skill reminder.
func (a *Actor) nudgeDue() bool {
	if a.deps.SkillNudgeAfter <= 0 {
		return false
	}
	if _, ok := a.deps.Tools.Get("skill_manage"); !ok {
		return false
	}
	calls := 0
	for i := len(a.tr.Messages) - 1; i >= 0; i-- {
		m := a.tr.Messages[i]
		if m.Role == "user" {
			break
		}
		calls += len(m.ToolCalls)
	}
	return calls >= a.deps.SkillNudgeAfter
}

// recover folds the session's stream into its transcript and closes what a
// crash left open: tool calls without results get interrupted results, and
// a turn without an end gets a TurnInterrupted, so the history stays valid
// for the provider.
func (a *Actor) recover(ctx context.Context) error {
	current, rs, err := a.chainEnd(ctx)
	if err != nil {
		return err
	}
	a.tr = &history.Transcript{}
	a.skillMark, a.memoryMark = 0, 0
	if a.values != nil {
		a.values.Close()
	}
	a.values = tool.NewSessionValues()
	open := ""
	spent := 0.0
	a.hasTurn = false
	for _, r := range rs {
		a.hasTurn = a.hasTurn || r.TurnID != ""
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
		}
		a.tr.Apply(p)
		switch e := p.(type) {
		case schema.SessionStarted:
			a.wd = e.WorkingDir
			a.started = e
		case schema.AssistantMessageAdded:
			spent += e.CostUSD
		case schema.AuxiliaryCallCompleted:
			spent += e.CostUSD
		case schema.UserMessageAdded:
			open = r.TurnID
		case schema.SessionTitled:
			a.hasTitle = true
		case schema.ReviewSpawned:
			a.markReview(e)
		case schema.TurnCompleted, schema.TurnInterrupted:
			open = ""
		}
	}
	last := rs[len(rs)-1]
	a.openTurn = open
	a.rec = &recorder{store: a.deps.Store, stream: events.SessionStream(current), session: current, revision: last.Revision, lastID: last.ID, spent: spent}
	if open == "" {
		return nil
	}
	var closing []schema.Payload
	if a.task != nil {
		// A restarted subagent continues its turn: only calls cut off by
		// the failure are closed; recorded results are not redone.
		for _, tc := range agent.DanglingCalls(a.tr.Messages) {
			closing = append(closing, schema.ToolResultAdded{CallID: tc.ID, Name: tc.Function.Name, Content: agent.InterruptedResult,
				Error: "interrupted", Interrupted: true})
		}
		if len(closing) == 0 {
			return nil
		}
		if err := a.rec.Record(ctx, open, closing...); err != nil {
			return err
		}
		for _, p := range closing {
			a.tr.Apply(p)
		}
		return nil
	}
	for _, tc := range agent.DanglingCalls(a.tr.Messages) {
		closing = append(closing, schema.ToolResultAdded{CallID: tc.ID, Name: tc.Function.Name, Content: agent.InterruptedResult,
			Error: "interrupted", Interrupted: true})
	}
	closing = append(closing, schema.TurnInterrupted{Reason: "the process ended during the turn"})
	a.log.Info().Int("closed_calls", len(closing)-1).Msg("closing a turn left open by a crash")
	if err := a.rec.Record(ctx, open, closing...); err != nil {
		return err
	}
	for _, p := range closing {
		a.tr.Apply(p)
	}
	return nil
}

// chainEnd follows a.id through its compressions to the session the
// conversation goes on in, and returns that session's events. Each session
// of the chain is leased before its stream is read: the one read then sees
// every event appended before (an owner until then wrote them before it let
// the lease go, and cannot write or move on to a compressed child after),
// where a read before the lease needed a read on after it.
func (a *Actor) chainEnd(ctx context.Context) (string, []events.Recorded, error) {
	current := a.id
	for {
		taken, prev, err := a.own.take(current)
		if err != nil {
			return "", nil, err
		}
		if taken && prev != nil {
			a.log.Warn().Msgf("session %s was left open by %s, which ended without releasing it: taking it over", current, prev)
		}
		rs, err := a.deps.Store.ReadStream(ctx, events.SessionStream(current), events.Forward, 0, 0)
		if err != nil {
			return "", nil, err
		}
		if len(rs) == 0 {
			return "", nil, fmt.Errorf("no session %s", current)
		}
		// A compressed session goes on in its child: follow the chain.
		last := rs[len(rs)-1]
		if last.Type != schema.TypeContextCompressed {
			return current, rs, nil
		}
		p, err := schema.Decode(last.Envelope)
		if err != nil {
			return "", nil, &events.CorruptEventError{Stream: last.Stream, Revision: last.Revision, Position: last.Position, Err: err}
		}
		current = p.(schema.ContextCompressed).ChildSessionID
	}
}

// recorder appends a session's events with the exact expected revision:
// the actor is the stream's only writer, so a conflict means another
// process wrote to the same session, and is reported, never overwritten.
//
// An append whose sync may be deferred (events.DeferSync: a tool's
// result, which the step's next commit takes to disk) is not waited for:
// it is written while the agent goes on (to its next model call), and the
// next append or flush waits for it first and reports its error. Appends
// stay in order and each names the revision the previous one made.
type recorder struct {
	mu       sync.Mutex
	store    events.Store
	stream   string
	session  string
	revision uint64
	lastID   string
	spent    float64 // cost of the session's model calls so far
	// turn and used: the last turn recorded here and its model calls'
	// usage.
	turn string
	used schema.Usage
	// pending is the outcome of the deferred append in flight, if any.
	pending chan error
}

// settle waits for the deferred append in flight (r.mu held).
func (r *recorder) settle() error {
	if r.pending == nil {
		return nil
	}
	err := <-r.pending
	r.pending = nil
	return err
}

// flush waits for the deferred append in flight and reports its error.
func (r *recorder) flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.settle()
}

func (r *recorder) cost() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spent
}

// switchTo moves the recorder to a child stream created by compression.
func (r *recorder) switchTo(session string, revision uint64, lastID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settle() // its error was reported by the append that moved here
	r.session, r.stream, r.revision, r.lastID = session, events.SessionStream(session), revision, lastID
}

// sessionID is the session the recorder writes to now.
func (r *recorder) sessionID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.session
}

func (r *recorder) Record(ctx context.Context, turnID string, ps ...schema.Payload) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.settle(); err != nil {
		return err
	}
	envs, err := schema.Chain(schema.Meta{SessionID: r.session, TurnID: turnID, CausationID: r.lastID}, ps...)
	if err != nil {
		return err
	}
	if len(envs) == 0 {
		return nil
	}
	expected, session, stream := r.revision, r.session, r.stream
	appendOnce := func() (events.AppendResult, error) {
		res, err := r.store.Append(ctx, stream, events.Exact(expected), envs...)
		var wev *events.WrongExpectedVersionError
		if errors.As(err, &wev) {
			return res, fmt.Errorf("session %s was changed by another process (at revision %d, expected %d): %w", session, wev.Actual, expected, err)
		}
		return res, err
	}
	if events.SyncDeferred(ctx) {
		// A stream's revisions count its events from 0, so the next
		// append expects this one's last.
		r.revision += uint64(len(envs))
		done := make(chan error, 1)
		r.pending = done
		go func() {
			_, err := appendOnce()
			done <- err
		}()
	} else {
		res, err := appendOnce()
		if err != nil {
			return err
		}
		r.revision = res.NextRevision
	}
	r.lastID = envs[len(envs)-1].ID
	if turnID != "" && turnID != r.turn {
		r.turn, r.used = turnID, schema.Usage{}
	}
	for _, p := range ps {
		switch a := p.(type) {
		case schema.AssistantMessageAdded:
			r.spent += a.CostUSD
			r.used = r.used.Add(a.Usage)
		case schema.AuxiliaryCallCompleted:
			r.spent += a.CostUSD
			r.used = r.used.Add(a.Usage)
		}
	}
	return nil
}

// usageOf is the usage of turn's model calls recorded here, when turn is
// the last turn recorded.
func (r *recorder) usageOf(turn string) (schema.Usage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.used, turn != "" && turn == r.turn
}
