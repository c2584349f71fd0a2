package tool

import (
	"errors"
	"io"
	"sync"
)

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

// Close ends the session's use of its values: every value that is an
// io.Closer (a sandbox, background processes) is closed, and the set is
// empty afterwards. The session actor calls it when it stops.
func (v *SessionValues) Close() error {
	v.mu.Lock()
	m := v.m
	v.m = map[string]any{}
	v.mu.Unlock()
	var errs []error
	for _, x := range m {
		if c, ok := x.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
