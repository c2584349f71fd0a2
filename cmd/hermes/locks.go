package main

import (
	"errors"
	"path/filepath"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events/postgres"
)

// locks returns the store's locks taken in the name of owner, or nil when
// the store keeps none (the embedded store: its processes share a kernel,
// and leases are flock(2) locks in the home).
func (a *app) locks(owner string) *postgres.Locks {
	pg, ok := a.store.(*postgres.Store)
	if !ok {
		return nil
	}
	a.locksMu.Lock()
	defer a.locksMu.Unlock()
	if a.lockSet == nil {
		a.lockSet = map[string]*postgres.Locks{}
	}
	l, ok := a.lockSet[owner]
	if !ok {
		l = pg.Locks(owner)
		a.lockSet[owner] = l
	}
	return l
}

// closeLocks releases every lock the app holds in the store.
func (a *app) closeLocks() error {
	a.locksMu.Lock()
	defer a.locksMu.Unlock()
	var errs []error
	for _, l := range a.lockSet {
		errs = append(errs, l.Close())
	}
	a.lockSet = nil
	return errors.Join(errs...)
}

// leases are the session leases of processes sharing this app's store:
// locks in a PostgreSQL store, which every machine running its sessions
// sees, else flock(2) locks in $HERMES_HOME/locks.
func (a *app) leases(self session.Owner) session.Leaser {
	l := a.locks(session.OwnerRecord(self))
	if l == nil {
		return session.NewFileLeases(filepath.Join(a.home, "locks"), self)
	}
	return session.StoreLeases{Locks: l}
}
