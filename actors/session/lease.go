package session

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"
)

// Leaser hands out the right to write a session's stream. A session actor
// takes the lease of the stream it writes before it recovers or records
// anything, and keeps it until it stops: a second process that would
// run the same session is refused instead of closing the first one's turn
// as crashed and racing it for the stream.
type Leaser interface {
	// Lease takes session's lease. It returns an *InUseError while a live
	// process holds it; a lease left by a dead owner is taken over, and
	// the returned lease says from whom.
	Lease(session string) (Lease, error)
}

// Lease is a held session lease.
type Lease interface {
	// Previous is the owner that held the lease before and ended without
	// releasing it (killed, crashed), or nil.
	Previous() *Owner
	// Release gives the lease up.
	Release() error
}

// Owner says who holds a lease, for the people reading the refusal.
type Owner struct {
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// Since is when the lease was taken.
	Since time.Time `json:"since"`
	// Nonce tells apart two owners with the same pid (a reused pid, or a
	// process that took the same lease twice).
	Nonce string `json:"nonce"`
}

func (o Owner) String() string {
	s := fmt.Sprintf("pid %d", o.PID)
	if o.Host != "" {
		s += " on " + o.Host
	}
	if !o.Since.IsZero() {
		s += " since " + o.Since.Local().Format("2006-01-02 15:04:05")
	}
	return s
}

// ThisProcess is the owner a lease taken now by this process names.
func ThisProcess() Owner {
	host, _ := os.Hostname()
	b := make([]byte, 8)
	rand.Read(b)
	return Owner{Host: host, PID: os.Getpid(), Since: time.Now().UTC().Truncate(time.Second), Nonce: hex.EncodeToString(b)}
}

// InUseError is the refusal to run a session another live process runs.
type InUseError struct {
	Session string
	// Owner is who holds it; zero when the lease could not be read.
	Owner Owner
}

func (e *InUseError) Error() string {
	who := "another hermes process"
	if e.Owner.PID != 0 {
		who = e.Owner.String()
	}
	return fmt.Sprintf("session %s is in use by %s: wait until that chat ends (or stop it), or continue in a copy: hermes sessions fork %s --at EVENT",
		e.Session, who, e.Session)
}

// ownership is what a session actor holds across its restarts by its
// supervisor: the leases of the streams it writes, and where the outcome
// of its first start goes.
type ownership struct {
	leaser Leaser
	mu     sync.Mutex
	held   map[string]Lease
	ready  chan<- error
}

func newOwnership(l Leaser, ready chan<- error) *ownership {
	return &ownership{leaser: l, held: map[string]Lease{}, ready: ready}
}

// take leases session unless it is already held (or nothing is leased):
// taken says whether it took it now, prev the dead owner it was taken
// over from.
func (o *ownership) take(session string) (taken bool, prev *Owner, err error) {
	if o == nil || o.leaser == nil {
		return false, nil, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.held[session]; ok {
		return false, nil, nil
	}
	l, err := o.leaser.Lease(session)
	if err != nil {
		return false, nil, err
	}
	o.held[session] = l
	return true, l.Previous(), nil
}

// release gives every lease up.
func (o *ownership) release() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for s, l := range o.held {
		l.Release()
		delete(o.held, s)
	}
}

// started reports the outcome of the first start to whoever waits for it
// and says whether someone did; later starts (restarts) report nothing.
func (o *ownership) started(err error) bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ready == nil {
		return false
	}
	o.ready <- err
	o.ready = nil
	return true
}
