package cron

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Jobs reads and writes jobs on a store and keeps each job's fold in
// memory. Every write appends at the exact revision of the fold it was
// decided on; when another writer (another process, another scheduler)
// got there first, the new events are folded and the decision is taken
// again. The CLI, the cronjob tool and the scheduler all write through it.
type Jobs struct {
	store events.Store
	now   func() time.Time

	mu        sync.Mutex
	byID      map[string]*jobSlot
	indexNext uint64
}

type jobSlot struct {
	mu   sync.Mutex
	job  *Job
	next uint64 // events folded so far
}

// NewJobs returns the jobs of store; now is the clock events are stamped
// with (nil: time.Now).
func NewJobs(store events.Store, now func() time.Time) *Jobs {
	if now == nil {
		now = time.Now
	}
	return &Jobs{store: store, now: now, byID: map[string]*jobSlot{}}
}

// Now is the clock of the jobs.
func (s *Jobs) Now() time.Time { return s.now().UTC() }

func (s *Jobs) slot(id string) *jobSlot {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, ok := s.byID[id]
	if !ok {
		sl = &jobSlot{job: NewJob(id)}
		s.byID[id] = sl
	}
	return sl
}

// catchUp folds the events of sl's stream it has not seen. sl.mu is held.
func (s *Jobs) catchUp(ctx context.Context, sl *jobSlot) error {
	for {
		rs, err := s.store.ReadStream(ctx, JobStream(sl.job.ID), events.Forward, sl.next, 1000)
		if err != nil {
			return fmt.Errorf("read job %s: %w", sl.job.ID, err)
		}
		for _, r := range rs {
			if err := sl.job.Apply(r); err != nil {
				return err
			}
			sl.next = r.Revision + 1
		}
		if len(rs) < 1000 {
			return nil
		}
	}
}

// Load reads the index and every job's new events, and returns every job
// (removed ones too), oldest first.
func (s *Jobs) Load(ctx context.Context) ([]*Job, error) {
	if err := s.readIndex(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	slots := make([]*jobSlot, 0, len(s.byID))
	for _, sl := range s.byID {
		slots = append(slots, sl)
	}
	s.mu.Unlock()
	out := make([]*Job, 0, len(slots))
	for _, sl := range slots {
		sl.mu.Lock()
		err := s.catchUp(ctx, sl)
		var j *Job
		if sl.job.Exists() {
			j = sl.job.Clone()
		}
		sl.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if j != nil {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if !out[a].CreatedAt.Equal(out[b].CreatedAt) {
			return out[a].CreatedAt.Before(out[b].CreatedAt)
		}
		return out[a].ID < out[b].ID
	})
	return out, nil
}

func (s *Jobs) readIndex(ctx context.Context) error {
	s.mu.Lock()
	from := s.indexNext
	s.mu.Unlock()
	for {
		rs, err := s.store.ReadStream(ctx, IndexStream, events.Forward, from, 1000)
		if err != nil {
			return fmt.Errorf("read %s: %w", IndexStream, err)
		}
		for _, r := range rs {
			from = r.Revision + 1
			if r.Type != schema.TypeJobListed {
				continue
			}
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				return &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
			}
			s.slot(p.(schema.JobListed).ID)
		}
		if len(rs) < 1000 {
			break
		}
	}
	s.mu.Lock()
	s.indexNext = max(s.indexNext, from)
	s.mu.Unlock()
	return nil
}

// Get returns job id as the store has it now.
func (s *Jobs) Get(ctx context.Context, id string) (*Job, error) {
	sl := s.slot(id)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if err := s.catchUp(ctx, sl); err != nil {
		return nil, err
	}
	if !sl.job.Exists() {
		return nil, fmt.Errorf("no job %s: `hermes cron list` shows the jobs there are", id)
	}
	return sl.job.Clone(), nil
}

// Peek returns the fold of job id as this process last saw it, without
// reading the store (nil: unknown).
func (s *Jobs) Peek(id string) *Job {
	s.mu.Lock()
	sl, ok := s.byID[id]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if !sl.job.Exists() {
		return nil
	}
	return sl.job.Clone()
}

// Observe folds an event a subscription delivered. It returns the job it
// belongs to ("" for events of other streams); a gap in the revisions is
// filled from the store.
func (s *Jobs) Observe(ctx context.Context, r events.Recorded) (string, error) {
	id := JobOf(r.Stream)
	if id == "" {
		return "", nil
	}
	sl := s.slot(id)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	switch {
	case r.Revision < sl.next:
		return id, nil // folded already (this process appended it)
	case r.Revision == sl.next:
		if err := sl.job.Apply(r); err != nil {
			return id, err
		}
		sl.next++
		return id, nil
	}
	return id, s.catchUp(ctx, sl)
}

// Find resolves a job reference: an id, a unique id prefix of at least 4
// characters, or a unique name.
func (s *Jobs) Find(ctx context.Context, ref string) (*Job, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, errors.New("no job given: `hermes cron list` shows the jobs and their ids")
	}
	all, err := s.Load(ctx)
	if err != nil {
		return nil, err
	}
	var byPrefix, byName []*Job
	for _, j := range all {
		if j.ID == ref {
			return j, nil
		}
		if len(ref) >= 4 && strings.HasPrefix(j.ID, ref) {
			byPrefix = append(byPrefix, j)
		}
		if strings.EqualFold(j.Spec.Name, ref) && !j.Removed {
			byName = append(byName, j)
		}
	}
	for _, c := range [][]*Job{byPrefix, byName} {
		if len(c) == 1 {
			return c[0], nil
		}
		if len(c) > 1 {
			ids := make([]string, len(c))
			for i, j := range c {
				ids[i] = j.ID
			}
			return nil, fmt.Errorf("%q matches %d jobs (%s): give more of the id", ref, len(c), strings.Join(ids, ", "))
		}
	}
	return nil, fmt.Errorf("no job %q: `hermes cron list` shows the jobs there are", ref)
}

// ErrNothing is returned by a plan that decides not to append anything.
var ErrNothing = errors.New("nothing to append")

// Append appends what plan decides on job id's current fold, at the
// exact revision that fold is at. When another writer appended first,
// their events are folded and plan decides again. A plan returning an
// error (ErrNothing, ErrBusy, ...) appends nothing and Append returns
// that error with the fold plan saw.
func (s *Jobs) Append(ctx context.Context, id string, plan func(*Job) ([]schema.Payload, error)) (*Job, error) {
	sl := s.slot(id)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	stream := JobStream(id)
	if sl.next == 0 {
		// Not seen yet in this process: read it before deciding.
		if err := s.catchUp(ctx, sl); err != nil {
			return nil, err
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ps, err := plan(sl.job)
		if err != nil {
			return sl.job.Clone(), err
		}
		if len(ps) == 0 {
			return sl.job.Clone(), ErrNothing
		}
		envs := make([]schema.Envelope, len(ps))
		at := s.Now()
		cause := ""
		for i, p := range ps {
			if envs[i], err = schema.NewEnvelope(schema.Meta{Time: at, CausationID: cause}, p); err != nil {
				return nil, err
			}
			cause = envs[i].ID
		}
		expected := events.NoStream
		if sl.next > 0 {
			expected = events.Exact(sl.next - 1)
		}
		res, err := s.store.Append(ctx, stream, expected, envs...)
		var wrong *events.WrongExpectedVersionError
		if errors.As(err, &wrong) {
			// Someone else wrote first: read what they wrote, decide again.
			if err := s.catchUp(ctx, sl); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("append to %s: %w", stream, err)
		}
		first := res.NextRevision + 1 - uint64(len(envs))
		for i, e := range envs {
			if err := sl.job.Apply(events.Recorded{Envelope: e, Stream: stream, Revision: first + uint64(i), Position: res.Position}); err != nil {
				return nil, err
			}
		}
		sl.next = res.NextRevision + 1
		return sl.job.Clone(), nil
	}
}

// Create adds a job with a normalised spec and lists it in the index.
func (s *Jobs) Create(ctx context.Context, spec schema.JobSpec, enabled bool, createdBy string) (*Job, error) {
	for range 10 {
		id := newID()
		j, err := s.Append(ctx, id, func(j *Job) ([]schema.Payload, error) {
			if j.Exists() {
				return nil, errIDTaken
			}
			return []schema.Payload{schema.JobCreated{ID: id, JobSpec: spec, Enabled: enabled, CreatedBy: createdBy}}, nil
		})
		if errors.Is(err, errIDTaken) {
			continue
		}
		if err != nil {
			return nil, err
		}
		env, err := schema.NewEnvelope(schema.Meta{Time: s.Now()}, schema.JobListed{ID: id, Stream: JobStream(id), Name: spec.Name})
		if err != nil {
			return nil, err
		}
		if _, err := s.store.Append(ctx, IndexStream, events.Any, env); err != nil {
			return nil, fmt.Errorf("list job %s in %s: %w", id, IndexStream, err)
		}
		return j, nil
	}
	return nil, errors.New("could not find a free job id")
}

var errIDTaken = errors.New("job id taken")

func newID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Update replaces job id's definition with what change makes of it,
// normalised against rules. Nothing is appended when nothing changed.
func (s *Jobs) Update(ctx context.Context, id string, rules Rules, change func(*schema.JobSpec) error) (*Job, error) {
	return s.Append(ctx, id, func(j *Job) ([]schema.Payload, error) {
		if err := alive(j); err != nil {
			return nil, err
		}
		next := j.Spec
		next.Toolsets = append([]string(nil), j.Spec.Toolsets...)
		if err := change(&next); err != nil {
			return nil, err
		}
		next, err := NormalizeUpdate(j.Spec, next, s.Now(), rules)
		if err != nil {
			return nil, err
		}
		changed := Changed(j.Spec, next)
		if len(changed) == 0 {
			return nil, ErrNothing
		}
		return []schema.Payload{schema.JobUpdated{JobSpec: next, Changed: changed}}, nil
	})
}

// Pause stops job id from firing; pausing a paused job changes nothing.
func (s *Jobs) Pause(ctx context.Context, id, reason string) (*Job, error) {
	j, err := s.Append(ctx, id, func(j *Job) ([]schema.Payload, error) {
		if err := alive(j); err != nil {
			return nil, err
		}
		if j.Paused {
			return nil, ErrNothing
		}
		return []schema.Payload{schema.JobPaused{Reason: reason}}, nil
	})
	if errors.Is(err, ErrNothing) {
		err = nil
	}
	return j, err
}

// Resume lets job id fire again from its next slot.
func (s *Jobs) Resume(ctx context.Context, id string) (*Job, error) {
	j, err := s.Append(ctx, id, func(j *Job) ([]schema.Payload, error) {
		if err := alive(j); err != nil {
			return nil, err
		}
		if !j.Paused {
			return nil, ErrNothing
		}
		return []schema.Payload{schema.JobResumed{}}, nil
	})
	if errors.Is(err, ErrNothing) {
		err = nil
	}
	return j, err
}

// Remove ends job id; its history stays.
func (s *Jobs) Remove(ctx context.Context, id, reason string) (*Job, error) {
	return s.Append(ctx, id, func(j *Job) ([]schema.Payload, error) {
		if err := alive(j); err != nil {
			return nil, err
		}
		return []schema.Payload{schema.JobRemoved{Reason: reason}}, nil
	})
}

func alive(j *Job) error {
	if !j.Exists() {
		return fmt.Errorf("no job %s", j.ID)
	}
	if j.Removed {
		return fmt.Errorf("job %s was removed", j.ID)
	}
	return nil
}

// Events returns every event of job id's stream (for its history).
func (s *Jobs) Events(ctx context.Context, id string) ([]events.Recorded, error) {
	return s.store.ReadStream(ctx, JobStream(id), events.Forward, 0, 0)
}
