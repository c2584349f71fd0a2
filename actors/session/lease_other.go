//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package session

// FileLeases on a system without flock(2) hold nothing: two processes may
// run one session, and the appends' expected revisions are what still
// stops the second one's stale writes.
type FileLeases struct{}

// NewFileLeases returns leases that hold nothing on this system.
func NewFileLeases(string, Owner) *FileLeases { return &FileLeases{} }

// Lease implements Leaser.
func (*FileLeases) Lease(string) (Lease, error) { return noLease{}, nil }

type noLease struct{}

func (noLease) Previous() *Owner { return nil }
func (noLease) Release() error   { return nil }
