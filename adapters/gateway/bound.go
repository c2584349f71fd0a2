package gateway

import (
	"context"
	"net"
	"sync"
)

// Bound is the address a platform's own HTTP endpoint (a webhook, an
// events endpoint) listens on, once it does: tests bind port 0 and wait
// for it. The zero value is ready to use.
type Bound struct {
	mu    sync.Mutex
	addr  net.Addr
	ready chan struct{}
}

// readyCh is the channel closed by the first Set (with b.mu held).
func (b *Bound) readyCh() chan struct{} {
	if b.ready == nil {
		b.ready = make(chan struct{})
	}
	return b.ready
}

// Set records the address the endpoint listens on and wakes Wait.
func (b *Bound) Set(addr net.Addr) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.addr = addr
	select {
	case <-b.readyCh():
	default:
		close(b.ready)
	}
}

// Wait returns the address once Set, or nil if ctx ends first.
func (b *Bound) Wait(ctx context.Context) net.Addr {
	b.mu.Lock()
	ch := b.readyCh()
	b.mu.Unlock()
	select {
	case <-ch:
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.addr
	case <-ctx.Done():
		return nil
	}
}
