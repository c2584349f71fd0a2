package app

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"time"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/projections"
)

// Locks returns the store's locks taken in the name of owner, or nil when
// the store keeps none (the embedded store: its processes share a kernel,
// and leases are flock(2) locks in the home).
func (a *App) Locks(owner string) *postgres.Locks {
	pg, ok := a.Store.(*postgres.Store)
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
func (a *App) closeLocks() error {
	a.locksMu.Lock()
	defer a.locksMu.Unlock()
	var errs []error
	for _, l := range a.lockSet {
		errs = append(errs, l.Close())
	}
	a.lockSet = nil
	return errors.Join(errs...)
}

// Leases are the session leases of processes sharing this app's store:
// locks in a PostgreSQL store, which every machine running its sessions
// sees, else flock(2) locks in $HERMES_HOME/locks.
func (a *App) Leases(self session.Owner) session.Leaser {
	l := a.Locks(session.OwnerRecord(self))
	if l == nil {
		return session.NewFileLeases(filepath.Join(a.Home, "locks"), self)
	}
	return &session.StoreLeases[*postgres.Lock]{Locks: l}
}

// StopOnLost makes a session whose store lease ends without being
// released (its connection broke) stop in mgr, once its turn in flight has
// ended (session.Manager.LeaseLost): another process may run it next.
func StopOnLost(l session.Leaser, mgr *session.Manager) {
	if sl, ok := l.(*session.StoreLeases[*postgres.Lock]); ok {
		sl.OnLost = mgr.LeaseLost
	}
}

// projectionLeaser hands out the leases of shared projections as locks in
// the PostgreSQL store.
type projectionLeaser struct {
	locks *postgres.Locks
	store *postgres.Store
}

func (p projectionLeaser) TryLease(ctx context.Context, name string) (projections.Lease, bool, error) {
	lk, err := p.locks.TryLock(ctx, name)
	var le *postgres.LockedError
	if errors.As(err, &le) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return lk, true, nil
}

func (p projectionLeaser) LeaseHolder(ctx context.Context, name string) (string, error) {
	hs, err := p.store.Holders(ctx, name)
	if err != nil {
		return "", err
	}
	for _, h := range hs {
		if h.Name == name && h.Live {
			return OwnerText(h.Owner), nil
		}
	}
	return "", nil
}

// OwnerText shows a lock's owner record for people.
func OwnerText(rec string) string {
	var o session.Owner
	if json.Unmarshal([]byte(rec), &o) == nil && o.PID != 0 {
		return o.String()
	}
	return rec
}

// leaseProjections makes the app's runner feed the projections shared in
// a PostgreSQL store only while this process holds their leases.
func (a *App) leaseProjections() {
	pg, ok := a.Store.(*postgres.Store)
	if !ok {
		return
	}
	a.Runner.WithLeases(projectionLeaser{locks: a.Locks(session.OwnerRecord(session.ThisProcess())), store: pg}, time.Second)
}
