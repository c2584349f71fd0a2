package agent

import "sync"

// SessionValues is per-session state that tools keep between calls. It
// lives as long as the session actor; what must survive a restart belongs
// in events instead.
type SessionValues struct {
	mu sync.Mutex
	m  map[string]any
}

// NewSessionValues returns an empty set.
func NewSessionValues() *SessionValues { return &SessionValues{m: map[string]any{}} }

// Get returns the value for key, creating it with mk on first use.
func (v *SessionValues) Get(key string, mk func() any) any {
	v.mu.Lock()
	defer v.mu.Unlock()
	if x, ok := v.m[key]; ok {
		return x
	}
	x := mk()
	v.m[key] = x
	return x
}
