package cron

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Agent runs a job's prompt in a fresh session.
type Agent interface {
	// Run creates session sessionID (source cron) and runs prompt in it
	// with the job's toolsets, model and cost cap, and returns the answer
	// and what the session cost. A ctx ending interrupts the turn.
	Run(ctx context.Context, sessionID string, job *Job, prompt string) (answer string, costUSD float64, err error)
}

// Scripts runs a job's script: output is what it printed, err a non-zero
// exit, a refusal (a dangerous command nobody approved) or a timeout.
type Scripts interface {
	Run(ctx context.Context, command string) (output string, err error)
}

// Publisher hands a message to the gateway's bus (gateway_out_<platform>).
type Publisher interface {
	Publish(ctx context.Context, out schema.Outbound) error
}

// KeyPrefix starts the Key of every message the scheduler sends through
// the gateway; the router hands their delivery outcomes to Ack.
const KeyPrefix = "cron/"

// Defaults of Config.
const (
	DefaultMaxConcurrent = 4
	DefaultTimeout       = 10 * time.Minute
	DefaultAckTimeout    = 2 * time.Minute
	DefaultRecheck       = time.Minute
	// DefaultDeliveryAttempts is how many attempts a platform delivery
	// gets when the platform reports a failure that is not permanent.
	DefaultDeliveryAttempts = 3
	// DefaultHandOver is how long a finished run's platform delivery waits
	// for a process that runs that platform (a gateway) to take it, when
	// the process that ran the job cannot deliver there.
	DefaultHandOver  = 10 * time.Minute
	DefaultRetention = 50
	// MaxOutputBytes bounds the output a JobRunFinished keeps.
	MaxOutputBytes = 64 << 10
)

// Config tunes a scheduler.
type Config struct {
	Clock   Clock
	Agent   Agent
	Scripts Scripts
	// Leases hold a run's ownership while it runs, so that a run another
	// live process runs is told from one a dead process left (nil: this
	// process only).
	Leases session.Leaser
	// Owner names this process in the runs it claims.
	Owner schema.RunOwner
	// Home finds a platform's home channel, for targets that name the
	// platform alone (nil: they fail, saying so).
	Home func(ctx context.Context, platform string) (chat, thread string, ok bool, err error)
	// MaxConcurrent bounds the runs at once (cron.max_parallel_jobs).
	MaxConcurrent int
	// Timeout bounds a run whose job sets none.
	Timeout time.Duration
	// OutputDir receives local deliveries ($HERMES_HOME/cron/output);
	// Retention is how many a job keeps (negative: all).
	OutputDir string
	Retention int
	// Bus sends platform deliveries (nil: none can be sent, and they are
	// recorded failed with NoBus as the reason).
	Bus   Publisher
	NoBus string
	// Platforms, when set, names the platforms a delivery can reach now;
	// others fail at once instead of waiting for an acknowledgement.
	Platforms func() []string
	// AckTimeout bounds the wait for a platform's delivery outcome; a
	// delivery without one is recorded failed and not tried again (the
	// message may have arrived).
	AckTimeout time.Duration
	// DeliveryAttempts bounds the attempts of a platform delivery whose
	// failures the platform reports as passing (cron.delivery_attempts);
	// DeliveryBackoff spaces them.
	DeliveryAttempts int
	// HandOver is how long a platform delivery this process cannot make
	// (no bus, or not the platform's gateway) stays pending for one that
	// can before it is recorded failed.
	HandOver time.Duration
	// Recheck is how often a run another live process holds is looked at
	// again.
	Recheck time.Duration
	// Wrap puts a header naming the job above delivered output
	// (cron.wrap_response).
	Wrap bool
	Log  zerolog.Logger
}

// Scheduler fires due jobs. Create it with New, then Run it; RunNow and
// Ack work without Run too (`hermes cron run`).
type Scheduler struct {
	store  events.Store
	jobs   *Jobs
	sys    *actor.ActorSystem
	cfg    Config
	log    zerolog.Logger
	leases session.Leaser

	pid   *actor.PID
	ready chan struct{}
	runs  sync.WaitGroup

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
	running bool
	// leftAt is when this process first left a delivery (run|target) it
	// cannot make to another process.
	leftAt map[string]time.Time
}

// New returns a scheduler of jobs on store, its actor to be spawned in
// sys by Run.
func New(store events.Store, jobs *Jobs, sys *actor.ActorSystem, cfg Config) *Scheduler {
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = DefaultAckTimeout
	}
	if cfg.Recheck <= 0 {
		cfg.Recheck = DefaultRecheck
	}
	if cfg.DeliveryAttempts <= 0 {
		cfg.DeliveryAttempts = DefaultDeliveryAttempts
	}
	if cfg.HandOver <= 0 {
		cfg.HandOver = DefaultHandOver
	}
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.NoBus == "" {
		cfg.NoBus = "no gateway runs in this process, so platform targets cannot be reached: run the scheduler inside `hermes gateway run`, or deliver to local"
	}
	if cfg.Owner.PID == 0 {
		o := session.ThisProcess()
		cfg.Owner = schema.RunOwner{Host: o.Host, PID: o.PID, Nonce: o.Nonce}
	}
	l := cfg.Leases
	if l == nil {
		l = NewMemLeases()
	}
	return &Scheduler{store: store, jobs: jobs, sys: sys, cfg: cfg, leases: l, log: cfg.Log.With().Str("component", "cron").Logger(),
		ready: make(chan struct{}), waiters: map[string]map[chan struct{}]struct{}{}, leftAt: map[string]time.Time{}}
}

// Jobs is the scheduler's view of the jobs.
func (s *Scheduler) Jobs() *Jobs { return s.jobs }

// Ready is closed once the scheduler has loaded the jobs and follows the
// store.
func (s *Scheduler) Ready() <-chan struct{} { return s.ready }

// Run loads every job, settles what a crash left open (a run without an
// end is recorded interrupted and the job's on_crash policy applies; a
// finished run not delivered is delivered), then fires jobs as they come
// due and follows the store (jobs created, changed, paused or removed by
// other processes) until ctx ends. Runs in flight are then interrupted
// and recorded so.
func (s *Scheduler) Run(ctx context.Context) error {
	head, err := s.store.Head(ctx)
	if err != nil {
		return err
	}
	all, err := s.jobs.Load(ctx)
	if err != nil {
		return fmt.Errorf("load cron jobs: %w", err)
	}
	runCtx, stopRuns := context.WithCancel(context.Background())
	defer stopRuns()
	a := &schedActor{s: s, runCtx: runCtx, timers: newTimers(), running: map[string]int{}, waiting: map[string]bool{}}
	s.pid = s.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
	s.mu.Lock()
	s.running = true
	s.mu.Unlock()
	ids := make([]string, len(all))
	for i, j := range all {
		ids[i] = j.ID
	}
	s.sys.Root.Send(s.pid, &evaluate{ids: ids})

	subCtx, stopSub := context.WithCancel(ctx)
	defer stopSub()
	subErr := make(chan error, 1)
	go func() {
		// Job changes are rare and need no haste; every commit of a busy
		// gateway (each turn's) would otherwise be a read of the log.
		subErr <- s.store.SubscribeAll(events.WithSettle(subCtx, FollowSettle), head, func(r events.Recorded) error {
			id, err := s.jobs.Observe(subCtx, r)
			if err != nil {
				return err
			}
			if id != "" {
				s.sys.Root.Send(s.pid, &evaluate{ids: []string{id}})
				s.signal(id)
			}
			return nil
		})
	}()
	close(s.ready)
	s.log.Info().Int("jobs", len(all)).Msg("scheduler running")
	var runErr error
	select {
	case <-ctx.Done():
	case err := <-subErr:
		if ctx.Err() == nil {
			runErr = fmt.Errorf("cron scheduler stopped following the store: %w", err)
		}
	}
	s.sys.Root.RequestFuture(s.pid, &stopping{}, 10*time.Second).Wait()
	stopRuns()
	s.runs.Wait()
	stopSub()
	s.sys.Root.StopFuture(s.pid).Wait()
	s.mu.Lock()
	s.running = false
	s.mu.Unlock()
	return runErr
}

// FollowSettle is how long the scheduler's subscription to the log lets a
// burst of commits land before reading it: a job created, changed or
// removed by another process is seen up to this much later, and the log
// is read once per burst rather than once per commit.
const FollowSettle = 100 * time.Millisecond

// Stats are a running scheduler's counters.
type Stats struct {
	// Timed is how many jobs wait in the timer for their next slot.
	Timed int
	// Running counts jobs this process works on (runs, recoveries).
	Running int
	// Waiting counts due jobs waiting for a free run slot.
	Waiting int
	// Next is when the earliest timed job is due.
	Next time.Time
}

// Stats asks the running scheduler for its counters.
func (s *Scheduler) Stats() (Stats, error) {
	s.mu.Lock()
	on := s.running
	s.mu.Unlock()
	if !on {
		return Stats{}, errors.New("the scheduler is not running")
	}
	res, err := s.sys.Root.RequestFuture(s.pid, &statsReq{}, 10*time.Second).Result()
	if err != nil {
		return Stats{}, err
	}
	return res.(Stats), nil
}

// RunNow runs job ref (an id, a unique prefix or a name) now, outside its
// schedule, in the calling goroutine, and returns how the run ended.
func (s *Scheduler) RunNow(ctx context.Context, ref string) (*Run, error) {
	j, err := s.jobs.Find(ctx, ref)
	if err != nil {
		return nil, err
	}
	s.hold(j.ID, 1)
	defer s.hold(j.ID, -1)
	runID := newRunID()
	lease, err := s.leases.Lease(runLease(runID))
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	var claim Claim
	sessionID := uuid.NewString()
	j, err = s.jobs.Append(ctx, j.ID, func(j *Job) ([]schema.Payload, error) {
		c, err := j.Manual(s.cfg.Clock.Now().UTC(), s.template(j, runID, sessionID))
		claim = c
		return c.Payloads, err
	})
	if errors.Is(err, ErrBusy) {
		return nil, fmt.Errorf("job %s has a run in progress: wait for it (hermes cron history %s)", j.ID, j.ID)
	}
	if err != nil {
		return nil, err
	}
	return s.execute(ctx, j, claim.Run), nil
}

func (s *Scheduler) template(j *Job, runID, sessionID string) schema.JobRunStarted {
	owner := s.cfg.Owner
	st := schema.JobRunStarted{RunID: runID, Owner: &owner}
	if !j.Spec.NoAgent {
		st.SessionID = sessionID
	}
	return st
}

func runLease(runID string) string { return "cron-run-" + runID }

func newRunID() string { return "r-" + uuid.NewString()[:13] }

// hold tells the actor that this process runs job id outside it.
func (s *Scheduler) hold(id string, delta int) {
	s.mu.Lock()
	on := s.running
	s.mu.Unlock()
	if on {
		s.sys.Root.Send(s.pid, &hold{id: id, delta: delta})
	}
}

// claimAndRun claims job id's due slot and runs it. Losing the claim
// (another scheduler won, the job changed meanwhile) is not an error:
// the job is looked at again from what won.
func (s *Scheduler) claimAndRun(ctx context.Context, id string) {
	runID := newRunID()
	lease, err := s.leases.Lease(runLease(runID))
	if err != nil {
		s.log.Error().Err(err).Str("job", id).Msg("lease a run")
		return
	}
	defer lease.Release()
	var claim Claim
	sessionID := uuid.NewString()
	j, err := s.jobs.Append(ctx, id, func(j *Job) ([]schema.Payload, error) {
		c, err := j.Due(s.cfg.Clock.Now().UTC(), s.template(j, runID, sessionID))
		claim = c
		return c.Payloads, err
	})
	var notDue *NotDueError
	switch {
	case err == nil:
	case errors.Is(err, ErrBusy), errors.Is(err, ErrInactive), errors.As(err, &notDue), errors.Is(err, context.Canceled):
		return // another scheduler got there first, or the job changed
	default:
		s.log.Error().Err(err).Str("job", id).Msg("claim a run")
		return
	}
	if claim.Run == nil {
		s.log.Info().Str("job", id).Msg("missed slots skipped (catch_up skip)")
		return
	}
	s.execute(ctx, j, claim.Run)
}

// recoverOpen settles the open runs of job id that no live process holds:
// one never finished is recorded interrupted (on_crash decides what
// follows), one finished is delivered. It reports whether a live process
// holds one.
func (s *Scheduler) recoverOpen(ctx context.Context, id string) (held bool) {
	j := s.jobs.Peek(id)
	if j == nil {
		return false
	}
	ids := make([]string, 0, len(j.Open))
	for rid := range j.Open {
		ids = append(ids, rid)
	}
	slices.Sort(ids)
	for _, rid := range ids {
		lease, err := s.leases.Lease(runLease(rid))
		var inUse *session.InUseError
		if errors.As(err, &inUse) {
			held = true
			continue
		}
		if err != nil {
			s.log.Error().Err(err).Str("job", id).Str("run", rid).Msg("lease a run")
			held = true
			continue
		}
		if s.settle(ctx, id, rid) {
			held = true // looked at again after Recheck
		}
		lease.Release()
	}
	return held
}

// settle settles open run rid of job id, which this process holds: a
// finished one is delivered where its deliveries are due, an unfinished
// one recorded interrupted. later reports deliveries left pending for
// later (a retry not due yet, a platform another process delivers to).
func (s *Scheduler) settle(ctx context.Context, id, rid string) (later bool) {
	// Read again now that the run is ours: its owner may have written
	// more before it went.
	j, err := s.jobs.Get(ctx, id)
	if err != nil {
		s.log.Error().Err(err).Str("job", id).Msg("read job")
		return
	}
	r, ok := j.Open[rid]
	if !ok {
		return
	}
	if r.Finished {
		s.log.Debug().Str("job", id).Str("run", rid).Msg("delivering what is pending of a finished run")
		return s.deliverPending(ctx, j, r)
	}
	who := "a process"
	if r.Owner != nil {
		who = fmt.Sprintf("pid %d", r.Owner.PID)
		if r.Owner.Host != "" {
			who += " on " + r.Owner.Host
		}
	}
	next := "on_crash fail: not retried"
	if j.Spec.OnCrash != OnCrashFail {
		next = "on_crash retry: retried once"
		if r.Attempt >= 2 {
			next = "on_crash retry: this was the retry, not retried again"
		}
	}
	msg := fmt.Sprintf("the process running it (%s) ended before the run finished; %s", who, next)
	_, err = s.jobs.Append(ctx, id, func(j *Job) ([]schema.Payload, error) {
		if r, ok := j.Open[rid]; !ok || r.Finished {
			return nil, ErrNothing
		}
		return []schema.Payload{schema.JobRunFinished{RunID: rid, Status: schema.RunInterrupted, Error: msg}}, nil
	})
	if err != nil && !errors.Is(err, ErrNothing) {
		s.log.Error().Err(err).Str("job", id).Msg("record an interrupted run")
		return
	}
	s.log.Warn().Str("job", id).Str("run", rid).Msg("a run a crash cut short is recorded interrupted")
	if c, ok := s.cfg.Agent.(SessionCloser); ok && r.SessionID != "" {
		if err := c.Close(ctx, r.SessionID); err != nil {
			s.log.Warn().Err(err).Str("job", id).Str("session", r.SessionID).Msg("close the session of an interrupted run")
		}
	}
	return false
}

// SessionCloser is implemented by agents that can settle the session of a
// run a crash cut short (SessionAgent records its turn interrupted).
type SessionCloser interface {
	Close(ctx context.Context, sessionID string) error
}

// waitFor registers interest in job id's changes.
func (s *Scheduler) waitFor(id string) (chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	if s.waiters[id] == nil {
		s.waiters[id] = map[chan struct{}]struct{}{}
	}
	s.waiters[id][ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.waiters[id], ch)
		if len(s.waiters[id]) == 0 {
			delete(s.waiters, id)
		}
		s.mu.Unlock()
	}
}

func (s *Scheduler) signal(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.waiters[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// schedActor owns the timer: which job is due when, which run here, and
// which wait for a free slot under MaxConcurrent.
type schedActor struct {
	s      *Scheduler
	runCtx context.Context
	timers *timers
	// running counts, per job, work of this process on it (a run, a
	// recovery, a manual run): the job is not looked at meanwhile.
	running  map[string]int
	active   int
	waiting  map[string]bool
	queue    []string
	timer    Timer
	timerAt  time.Time
	stopping bool
}

func (a *schedActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *evaluate:
		for _, id := range m.ids {
			a.eval(c, id)
		}
	case *wake:
		a.timerAt = time.Time{}
		for _, id := range a.timers.popDue(a.s.cfg.Clock.Now()) {
			a.eval(c, id)
		}
	case *workDone:
		if a.running[m.id]--; a.running[m.id] <= 0 {
			delete(a.running, m.id)
		}
		if m.claimed {
			a.active--
		}
		if m.held && !a.stopping {
			a.timers.set(m.id, a.s.cfg.Clock.Now().Add(a.s.cfg.Recheck))
		} else {
			a.eval(c, m.id)
		}
		a.drain(c)
	case *hold:
		if a.running[m.id] += m.delta; a.running[m.id] <= 0 {
			delete(a.running, m.id)
			a.eval(c, m.id)
		}
	case *statsReq:
		c.Respond(Stats{Timed: a.timers.len(), Running: len(a.running), Waiting: len(a.queue), Next: a.timers.next()})
		return
	case *stopping:
		a.stopping = true
		if a.timer != nil {
			a.timer.Stop()
		}
		c.Respond(true)
		return
	case *actor.Started, *actor.Restarting, *actor.Stopping, *actor.Stopped, *actor.Terminated, *actor.ReceiveTimeout:
		// Lifecycle messages protoactor delivers that need nothing here.
	default:
		a.s.log.Warn().Str("message_type", fmt.Sprintf("%T", m)).Msg("scheduler actor: message not handled")
	}
	a.arm(c)
}

// eval looks at job id and decides: nothing yet (its timer is set), a
// claim now (or when a slot frees), or settling runs a crash left open.
func (a *schedActor) eval(c actor.Context, id string) {
	if a.stopping || a.running[id] > 0 {
		return
	}
	j := a.s.jobs.Peek(id)
	if j == nil {
		a.timers.drop(id)
		return
	}
	if len(j.Open) > 0 {
		a.timers.drop(id)
		a.running[id]++
		a.work(c, func(ctx context.Context) *workDone {
			return &workDone{id: id, held: a.s.recoverOpen(ctx, id)}
		})
		return
	}
	if !j.Active() {
		a.timers.drop(id)
		return
	}
	now := a.s.cfg.Clock.Now()
	when := j.NextSlot()
	if j.Retry != nil {
		when = now
	}
	if when.IsZero() {
		a.timers.drop(id)
		return
	}
	if when.After(now) {
		a.timers.set(id, when)
		return
	}
	a.timers.drop(id)
	if a.active >= a.s.cfg.MaxConcurrent {
		if !a.waiting[id] {
			a.waiting[id] = true
			a.queue = append(a.queue, id)
		}
		return
	}
	a.active++
	a.running[id]++
	a.work(c, func(ctx context.Context) *workDone {
		a.s.claimAndRun(ctx, id)
		return &workDone{id: id, claimed: true}
	})
}

// drain starts due jobs that waited for a free slot.
func (a *schedActor) drain(c actor.Context) {
	for len(a.queue) > 0 && a.active < a.s.cfg.MaxConcurrent && !a.stopping {
		id := a.queue[0]
		a.queue = a.queue[1:]
		delete(a.waiting, id)
		a.eval(c, id)
	}
}

func (a *schedActor) work(c actor.Context, f func(context.Context) *workDone) {
	self, root := c.Self(), c.ActorSystem().Root
	a.s.runs.Add(1)
	go func() {
		defer a.s.runs.Done()
		root.Send(self, f(a.runCtx))
	}()
}

// arm sets the one timer to the earliest due job.
func (a *schedActor) arm(c actor.Context) {
	next := a.timers.next()
	if a.stopping || next.IsZero() {
		if a.timer != nil {
			a.timer.Stop()
			a.timer, a.timerAt = nil, time.Time{}
		}
		return
	}
	if a.timer != nil && a.timerAt.Equal(next) {
		return
	}
	if a.timer != nil {
		a.timer.Stop()
	}
	self, root := c.Self(), c.ActorSystem().Root
	a.timerAt = next
	a.timer = a.s.cfg.Clock.AfterFunc(next.Sub(a.s.cfg.Clock.Now()), func() { root.Send(self, &wake{}) })
}

// NewMemLeases returns run leases kept in this process's memory: enough
// for one process (a run not held here was left by a dead process), and
// shared by the schedulers of one process in tests.
func NewMemLeases() session.Leaser { return &memLeases{held: map[string]bool{}} }

type memLeases struct {
	mu   sync.Mutex
	held map[string]bool
}

func (m *memLeases) Lease(name string) (session.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[name] {
		return nil, &session.InUseError{Session: name}
	}
	m.held[name] = true
	return &memLease{m: m, name: name}, nil
}

type memLease struct {
	m    *memLeases
	name string
	once sync.Once
}

func (l *memLease) Previous() *session.Owner { return nil }
func (l *memLease) Release() error {
	l.once.Do(func() {
		l.m.mu.Lock()
		delete(l.m.held, l.name)
		l.m.mu.Unlock()
	})
	return nil
}
