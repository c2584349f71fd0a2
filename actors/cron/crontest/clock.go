// Package crontest holds fakes for testing the scheduler: a clock that
// tests move forward by hand. It stands in for the wall clock and the
// runtime timers the scheduler waits on.
package crontest

import (
	"sort"
	"sync"
	"time"

	"github.com/hermes-go/hermes/actors/cron"
)

// Clock is a fake cron.Clock: time stands still until Advance or Set
// moves it, and then the timers that came due fire, in order.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
	seq    int
}

type timer struct {
	c   *Clock
	at  time.Time
	seq int
	f   func()
}

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now implements cron.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc implements cron.Clock; f runs in its own goroutine when the
// clock passes now+d.
func (c *Clock) AfterFunc(d time.Duration, f func()) cron.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &timer{c: c, at: c.now.Add(d), seq: c.seq, f: f}
	if d <= 0 {
		go f()
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Stop implements cron.Timer.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, x := range t.c.timers {
		if x == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Advance moves the clock forward by d, firing the timers that come due.
func (c *Clock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to t (never back), firing the timers that come due.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	if t.After(c.now) {
		c.now = t
	}
	var due, keep []*timer
	for _, x := range c.timers {
		if !x.at.After(c.now) {
			due = append(due, x)
		} else {
			keep = append(keep, x)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool {
		if !due[i].at.Equal(due[j].at) {
			return due[i].at.Before(due[j].at)
		}
		return due[i].seq < due[j].seq
	})
	for _, x := range due {
		go x.f()
	}
}

// Waiting is the number of timers set and not yet fired.
func (c *Clock) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// NextAt is when the earliest waiting timer fires (zero: none).
func (c *Clock) NextAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	for _, x := range c.timers {
		if at.IsZero() || x.at.Before(at) {
			at = x.at
		}
	}
	return at
}
