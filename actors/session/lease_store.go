package session

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"
)

// StoreLeases are session leases held as locks in a shared store (a
// PostgreSQL store's *postgres.Locks, handed in by cmd/hermes), for
// processes on several machines (cluster nodes, a gateway, a chat) that
// run sessions against that one store: the
// server drops a lock when its holder's connection ends, kill -9 included,
// and a node that a session moves to while another still runs its turn is
// refused with an *InUseError until that turn ends and the other node
// lets the session go. The locks must carry OwnerRecord of their owner.
type StoreLeases[L StoreLock] struct {
	Locks StoreLocks[L]
	// OnLost, when set, is called with the session whose lease ended
	// without being released (the connection holding it broke: another
	// process may run the session now). The session manager's Restart
	// stops its actor, so that this process stops writing it.
	OnLost func(session string)
}

// StoreLocks are the locks of a shared store that StoreLeases takes
// (*postgres.Locks, whose locks are *postgres.Lock). A lock another process
// holds is refused with an error that errors.As finds a HeldError in.
type StoreLocks[L StoreLock] interface {
	TryLock(ctx context.Context, name string) (L, error)
}

// StoreLock is a lock held in a shared store.
type StoreLock interface {
	// Previous is the owner record of a holder that ended without
	// releasing the lock ("" when it was free and clean).
	Previous() string
	// Lost is closed when the lock is no longer held.
	Lost() <-chan struct{}
	// Release gives the lock up.
	Release(ctx context.Context) error
}

// HeldError is the refusal of a lock another process holds
// (*postgres.LockedError): HeldBy is the holder's owner record, "" when
// it could not be read.
type HeldError interface {
	error
	HeldBy() string
}

// OwnerRecord is the owner record a process's store locks carry: the JSON
// of o, which refusals and take-overs turn back into an Owner.
func OwnerRecord(o Owner) string {
	b, _ := json.Marshal(o)
	return string(b)
}

func parseOwner(s string) (Owner, bool) {
	var o Owner
	if s == "" || json.Unmarshal([]byte(s), &o) != nil {
		return Owner{}, false
	}
	return o, true
}

// Lease implements Leaser.
func (s StoreLeases[L]) Lease(session string) (Lease, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lk, err := s.Locks.TryLock(ctx, "session:"+session)
	if err != nil {
		var held HeldError
		if errors.As(err, &held) {
			o, _ := parseOwner(held.HeldBy())
			return nil, &InUseError{Session: session, Owner: o}
		}
		return nil, errors.Join(errors.New("lease session "+session), err)
	}
	l := &storeLease{lk: lk}
	if o, ok := parseOwner(lk.Previous()); ok {
		l.prev = &o
	}
	if s.OnLost != nil {
		go func() {
			<-lk.Lost()
			if !l.released.Load() {
				s.OnLost(session)
			}
		}()
	}
	return l, nil
}

type storeLease struct {
	lk       StoreLock
	prev     *Owner
	released atomic.Bool
}

func (l *storeLease) Previous() *Owner { return l.prev }

func (l *storeLease) Release() error {
	l.released.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return l.lk.Release(ctx)
}
