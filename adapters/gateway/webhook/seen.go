package webhook

import (
	"sync"
	"time"
)

// seenSet remembers the deliveries accepted recently, so a replay is
// refused at the door. It forgets after ttl and past max entries (oldest
// first): a signed timestamp older than the window is refused anyway, and
// the router's own record of each chat's message ids still keeps a GitHub
// delivery replayed later, or after a restart, from starting a turn.
type seenSet struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int
	at    map[string]time.Time
	order []string // keys in the order added; may hold forgotten ones
}

func newSeenSet(ttl time.Duration, max int) *seenSet {
	return &seenSet{ttl: ttl, max: max, at: map[string]time.Time{}}
}

// add records key and reports whether it was new.
func (s *seenSet) add(key string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	if _, ok := s.at[key]; ok {
		return false
	}
	s.at[key] = now
	s.order = append(s.order, key)
	return true
}

// forget drops key: the delivery was not taken after all (the bus was
// down), so the sender's retry must be let in.
func (s *seenSet) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.at, key)
}

func (s *seenSet) expire(now time.Time) {
	drop := 0
	for _, k := range s.order {
		if t, ok := s.at[k]; ok {
			if now.Sub(t) < s.ttl && len(s.at) <= s.max {
				break
			}
			delete(s.at, k)
		}
		drop++
	}
	// The slice's head is released when append next grows it.
	s.order = s.order[drop:]
}
