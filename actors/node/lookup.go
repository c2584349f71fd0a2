package node

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/eventstream"
)

// lookup places grains by rendezvous hashing over the members of the
// latest topology, as protoactor-go's disthash does, and asks the owner's
// partition activator (disthash's, which members run) for the grain. It
// exists because disthash replaces its hash ring on a topology change
// without synchronisation while callers read it (a data race under
// -race); here the ring is swapped under a lock.
type lookup struct {
	c      *cluster.Cluster
	inner  cluster.IdentityLookup // disthash on members: it activates grains
	mu     sync.RWMutex
	rdv    *cluster.Rendezvous
	addrs  []string // members of the latest topology
	sub    *eventstream.Subscription
	client bool
}

func newLookup() *lookup { return &lookup{rdv: cluster.NewRendezvous()} }

// Setup implements cluster.IdentityLookup.
func (l *lookup) Setup(c *cluster.Cluster, kinds []string, isClient bool) {
	l.c, l.client = c, isClient
	l.sub = c.ActorSystem.EventStream.Subscribe(func(ev any) {
		if t, ok := ev.(*cluster.ClusterTopology); ok {
			r := cluster.NewRendezvous()
			r.UpdateMembers(t.Members)
			var addrs []string
			for _, m := range t.Members {
				addrs = append(addrs, m.Address())
			}
			l.mu.Lock()
			l.rdv, l.addrs = r, addrs
			l.mu.Unlock()
		}
	})
	if !isClient {
		l.inner = disthash.New()
		l.inner.Setup(c, kinds, isClient)
	}
}

// Get implements cluster.IdentityLookup.
func (l *lookup) Get(ci *cluster.ClusterIdentity) *actor.PID {
	l.mu.RLock()
	owner := l.rdv.GetByClusterIdentity(ci)
	l.mu.RUnlock()
	if owner == "" {
		return nil
	}
	res, err := l.c.ActorSystem.Root.RequestFuture(actor.NewPID(owner, disthash.PartitionActivatorActorName),
		&cluster.ActivationRequest{ClusterIdentity: ci}, 5*time.Second).Result()
	if err != nil {
		return nil
	}
	if r, ok := res.(*cluster.ActivationResponse); ok && !r.Failed {
		return r.Pid
	}
	return nil
}

// RemovePid implements cluster.IdentityLookup.
func (l *lookup) RemovePid(ci *cluster.ClusterIdentity, pid *actor.PID) {
	if l.inner != nil {
		l.inner.RemovePid(ci, pid)
	}
}

// Shutdown implements cluster.IdentityLookup.
func (l *lookup) Shutdown() {
	if l.sub != nil {
		l.c.ActorSystem.EventStream.Unsubscribe(l.sub)
		l.sub = nil
	}
	if l.inner != nil {
		l.inner.Shutdown()
		l.inner = nil
	}
}

// members returns the addresses of the latest topology's members.
func (l *lookup) members() []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]string(nil), l.addrs...)
}
