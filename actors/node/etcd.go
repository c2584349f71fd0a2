package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/protobuf/types/known/emptypb"
)

// etcdProvider is the cluster provider: it keeps the membership in etcd
// (each member's key under a lease it renews) and tells protoactor's member
// list which members are live.
//
// It replaces protoactor-go's etcd provider, which drops a member the moment
// its key goes. protoactor's member list blocks, for the life of the
// process, every member that leaves its topology (and a member's remote
// refuses a blocked peer's connections), so one etcd hiccup longer than the
// lease — every key expires at once — made every member drop and block
// every other, itself included, for good. Here etcd only adds members: a
// member whose key is gone is suspected, and leaves the topology only when
// its remote stops answering too. While etcd is unreachable the members
// keep the last membership they saw; a member whose lease lapsed registers
// again under a new one; the view is read again in full after any watch
// failure and every few seconds, so members that missed events converge.
type etcdProvider struct {
	cfg clientv3.Config
	ttl time.Duration
	log zerolog.Logger

	// mu guards everything below; publishing holds pubMu (taken first)
	// so that topologies reach the member list in order.
	pubMu sync.Mutex
	mu    sync.Mutex
	cli   *clientv3.Client
	c     *cluster.Cluster
	self  *cluster.Member // nil on a client
	key   string          // this member's key
	pre   string          // the cluster's prefix
	// rev is the etcd revision the view reflects.
	rev int64
	// view is what the member list was last told (self included).
	view map[string]*cluster.Member
	// gone are members of the view whose key etcd no longer has, with the
	// probes of their remote that failed in a row.
	gone map[string]int
	// alive: members gone from etcd whose remote answers (warned once).
	alive map[string]bool
	// unreachable and lapsed are the faults with etcd in progress (zero
	// when none): since when etcd does not answer, since when this
	// member's lease lapsed (it is registering again).
	unreachable, lapsed time.Time
	stopped             bool
	cancel              context.CancelFunc
	wg                  sync.WaitGroup
	// reregister asks the lease loop to register again (our key went
	// while our lease seemed alive).
	reregister chan struct{}
}

// memberRecord is a member's value in etcd.
type memberRecord struct {
	ID    string   `json:"id"`
	Host  string   `json:"host"`
	Port  int32    `json:"port"`
	Kinds []string `json:"kinds,omitempty"`
}

// Timing of the provider: how often suspects are probed and how long a
// probe waits, how many failed probes remove a member, and how often the
// whole membership is read again.
const (
	probeEvery   = 250 * time.Millisecond
	probeTimeout = time.Second
	probeFails   = 3
	opTimeout    = 2 * time.Second
)

func newEtcdProvider(cfg clientv3.Config, ttl time.Duration, log zerolog.Logger) *etcdProvider {
	if ttl < time.Second {
		ttl = 3 * time.Second
	}
	if cfg.Logger == nil {
		// Its retries while etcd is away would flood stderr; the
		// provider logs the fault once, and its end.
		cfg.Logger = zap.NewNop()
	}
	// gRPC's reconnection backoff grows to two minutes: after etcd was
	// away for a while the members would find it back that much later.
	bo := backoff.DefaultConfig
	bo.MaxDelay = ttl / 2
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: ttl}))
	return &etcdProvider{cfg: cfg, ttl: ttl, log: log, view: map[string]*cluster.Member{},
		gone: map[string]int{}, alive: map[string]bool{}, reregister: make(chan struct{}, 1)}
}

// StartMember implements cluster.ClusterProvider: it registers this member
// and starts following the membership.
func (p *etcdProvider) StartMember(c *cluster.Cluster) error {
	host, port, err := splitAddr(c.ActorSystem.Address())
	if err != nil {
		return err
	}
	self := &cluster.Member{Id: c.ActorSystem.ID, Host: host, Port: port, Kinds: c.GetClusterKinds()}
	return p.start(c, self)
}

// StartClient implements cluster.ClusterProvider: it follows the
// membership without registering.
func (p *etcdProvider) StartClient(c *cluster.Cluster) error { return p.start(c, nil) }

func (p *etcdProvider) start(c *cluster.Cluster, self *cluster.Member) error {
	// The client is made here, after the cluster started its remote,
	// which sets gRPC's global logger (a client made before would be
	// logging through it while it is replaced).
	cli, err := clientv3.New(p.cfg)
	if err != nil {
		return fmt.Errorf("etcd %v: %w", p.cfg.Endpoints, err)
	}
	p.mu.Lock()
	p.cli, p.c, p.self = cli, c, self
	p.pre = "/hermes/members/" + c.Config.Name + "/"
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.mu.Unlock()
	var lease clientv3.LeaseID
	if self != nil {
		p.key = p.pre + self.Id
		if lease, err = p.register(ctx); err != nil {
			cancel()
			_ = cli.Close()
			return fmt.Errorf("etcd %v: register: %w", p.cfg.Endpoints, err)
		}
	}
	if err := p.resync(ctx); err != nil {
		cancel()
		_ = cli.Close()
		return fmt.Errorf("etcd %v: read the members: %w", p.cfg.Endpoints, err)
	}
	p.pubMu.Lock()
	p.publish() // this member, alone or not
	p.pubMu.Unlock()
	p.wg.Add(2)
	go p.watch(ctx)
	go p.probe(ctx)
	if self != nil {
		p.wg.Add(1)
		go p.keep(ctx, lease)
	}
	return nil
}

// Shutdown implements cluster.ClusterProvider: it stops following the
// membership, and a member deletes its key (the others let it go once its
// remote, which its owner shuts down next, stops answering; its lease
// expires by itself).
func (p *etcdProvider) Shutdown(bool) error {
	p.mu.Lock()
	if p.stopped || p.cancel == nil {
		p.stopped = true
		p.mu.Unlock()
		return nil
	}
	p.stopped = true
	p.cancel()
	p.mu.Unlock()
	p.wg.Wait()
	var err error
	if p.self != nil {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		_, err = p.cli.Delete(ctx, p.key)
		cancel()
	}
	_ = p.cli.Close()
	return err
}

// Warning says what is wrong with the membership's coordinator ("" when
// nothing is): while etcd is unreachable or this member's lease lapsed,
// the cluster serves on the last membership it saw.
func (p *etcdProvider) Warning() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var w []string
	n := len(p.view)
	if p.self != nil {
		n++
	}
	if !p.unreachable.IsZero() {
		w = append(w, fmt.Sprintf("etcd unreachable since %s: serving on the last known membership (%d members)",
			p.unreachable.UTC().Format(time.TimeOnly), n))
	}
	if !p.lapsed.IsZero() {
		w = append(w, fmt.Sprintf("this member's etcd lease lapsed at %s: registering again", p.lapsed.UTC().Format(time.TimeOnly)))
	}
	var alive []string
	for id := range p.alive {
		if m := p.view[id]; m != nil {
			alive = append(alive, m.Address())
		}
	}
	if len(alive) > 0 {
		sort.Strings(alive)
		w = append(w, fmt.Sprintf("member(s) %s not registered in etcd but answering: kept", strings.Join(alive, ", ")))
	}
	return strings.Join(w, "; ")
}

// fault records a fault with etcd (logged when it starts): at, which is
// &p.unreachable or &p.lapsed, is set.
func (p *etcdProvider) fault(at *time.Time, what string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if at.IsZero() {
		*at = time.Now()
		p.log.Warn().Err(err).Int("members", len(p.view)).Msg(what + ": serving on the last known membership")
	}
}

// healed ends a fault (logged).
func (p *etcdProvider) healed(at *time.Time, what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !at.IsZero() {
		p.log.Info().Dur("lasted", time.Since(*at).Round(time.Millisecond)).Msg(what)
		*at = time.Time{}
	}
}

// register grants a lease and puts this member's key under it.
func (p *etcdProvider) register(ctx context.Context) (clientv3.LeaseID, error) {
	b, _ := json.Marshal(memberRecord{ID: p.self.Id, Host: p.self.Host, Port: p.self.Port, Kinds: p.self.Kinds})
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	g, err := p.cli.Grant(octx, int64((p.ttl+time.Second-1)/time.Second))
	if err != nil {
		return 0, fmt.Errorf("grant a lease: %w", err)
	}
	if _, err := p.cli.Put(octx, p.key, string(b), clientv3.WithLease(g.ID)); err != nil {
		return 0, fmt.Errorf("put %s: %w", p.key, err)
	}
	return g.ID, nil
}

// keep renews this member's lease; when it lapses (etcd paused, restarted
// or away for longer than the lease) it registers again under a new lease
// as soon as etcd answers.
func (p *etcdProvider) keep(ctx context.Context, lease clientv3.LeaseID) {
	defer p.wg.Done()
	for ctx.Err() == nil {
		kctx, kcancel := context.WithCancel(ctx)
		ch, err := p.cli.KeepAlive(kctx, lease)
		if err == nil {
			func() {
				for {
					select {
					case _, ok := <-ch:
						if !ok {
							return
						}
					case <-p.reregister:
						return
					}
				}
			}()
		}
		kcancel()
		if ctx.Err() != nil {
			return
		}
		p.fault(&p.lapsed, "etcd: this member's lease lapsed", err)
		for {
			if lease, err = p.register(ctx); err == nil {
				p.healed(&p.lapsed, "etcd: registered again under a new lease")
				select {
				case <-p.reregister: // asked before this registration
				default:
				}
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(p.ttl / 3):
			}
		}
	}
}

// watch follows the membership: it reads it in full, watches it from
// there, and reads it again after any watch failure and every few lease
// periods (etcd restarted from other data, events lost on the way).
func (p *etcdProvider) watch(ctx context.Context) {
	defer p.wg.Done()
	every := 2 * p.ttl
	for ctx.Err() == nil {
		p.mu.Lock()
		rev := p.rev
		p.mu.Unlock()
		wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := p.cli.Watch(wctx, p.pre, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
		tick := time.NewTicker(every)
	follow:
		for {
			select {
			case resp, ok := <-wch:
				if !ok || resp.Err() != nil {
					break follow
				}
				p.apply(resp)
			case <-tick.C:
				p.mu.Lock()
				before := p.rev
				p.mu.Unlock()
				if err := p.resync(ctx); err != nil {
					continue
				}
				p.mu.Lock()
				back := p.rev < before
				p.mu.Unlock()
				if back {
					// etcd's history went back (restored, or a new
					// data directory): the watch waits for a revision
					// that may never come.
					break follow
				}
			case <-ctx.Done():
				break follow
			}
		}
		tick.Stop()
		wcancel()
		for ctx.Err() == nil {
			if err := p.resync(ctx); err == nil {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(p.ttl / 3):
			}
		}
	}
}

// resync reads the whole membership and makes the view follow it.
func (p *etcdProvider) resync(ctx context.Context) error {
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	resp, err := p.cli.Get(octx, p.pre, clientv3.WithPrefix())
	if err != nil {
		if ctx.Err() == nil {
			p.fault(&p.unreachable, "etcd unreachable", err)
		}
		return err
	}
	known := map[string]*cluster.Member{}
	for _, kv := range resp.Kvs {
		if m := p.decode(kv.Key, kv.Value); m != nil {
			known[m.Id] = m
		}
	}
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	p.mu.Lock()
	p.rev = resp.Header.Revision
	changed := false
	for _, m := range known {
		changed = p.seen(m) || changed
	}
	for id := range p.view {
		if known[id] == nil {
			p.missing(id)
		}
	}
	p.mu.Unlock()
	p.healed(&p.unreachable, "etcd reachable again: membership followed")
	if changed {
		p.publish()
	}
	return nil
}

// apply applies watched changes.
func (p *etcdProvider) apply(resp clientv3.WatchResponse) {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	p.mu.Lock()
	changed := false
	for _, ev := range resp.Events {
		if ev.Kv.ModRevision <= p.rev {
			continue // already in the view (read after it happened)
		}
		switch ev.Type {
		case clientv3.EventTypePut:
			if m := p.decode(ev.Kv.Key, ev.Kv.Value); m != nil {
				changed = p.seen(m) || changed
			}
		case clientv3.EventTypeDelete:
			p.missing(strings.TrimPrefix(string(ev.Kv.Key), p.pre))
		}
	}
	if resp.Header.Revision > p.rev {
		p.rev = resp.Header.Revision
	}
	p.mu.Unlock()
	if changed {
		p.publish()
	}
}

// seen records member m registered in etcd (p.mu held): it joins the view,
// and stops being suspected. It reports whether the view changed.
func (p *etcdProvider) seen(m *cluster.Member) bool {
	delete(p.gone, m.Id)
	delete(p.alive, m.Id)
	if p.self != nil && m.Id == p.self.Id {
		return false
	}
	if old := p.view[m.Id]; old != nil && old.Address() == m.Address() {
		return false
	}
	p.view[m.Id] = m
	return true
}

// missing records that member id's key is gone (p.mu held). This
// member's own key going means registering again; another member is
// suspected, and probed.
func (p *etcdProvider) missing(id string) {
	if p.self != nil && id == p.self.Id {
		select {
		case p.reregister <- struct{}{}:
		default:
		}
		return
	}
	if p.view[id] == nil {
		return
	}
	if _, ok := p.gone[id]; !ok {
		p.gone[id] = 0
	}
}

// probe asks the remote of every suspected member whether it is there:
// one whose port refuses connections, or that does not answer probeFails
// times in a row, leaves the view (it died, or left); one that answers
// stays (its key went because etcd lost its lease, and it registers
// again).
func (p *etcdProvider) probe(ctx context.Context) {
	defer p.wg.Done()
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.mu.Lock()
		var ids []string
		addrs := map[string]string{}
		for id := range p.gone {
			ids = append(ids, id)
			addrs[id] = p.view[id].Address()
		}
		p.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		answered, refused := map[string]bool{}, map[string]bool{}
		var wg sync.WaitGroup
		var amu sync.Mutex
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, dead := p.ping(addrs[id])
				amu.Lock()
				answered[id], refused[id] = ok, dead
				amu.Unlock()
			}()
		}
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		p.pubMu.Lock()
		p.mu.Lock()
		changed := false
		for _, id := range ids {
			n, still := p.gone[id]
			if !still {
				continue // registered again meanwhile
			}
			if answered[id] {
				p.gone[id] = 0
				if !p.alive[id] {
					p.alive[id] = true
					p.log.Warn().Str("member", addrs[id]).Msg("etcd: a member's key is gone but the member answers: kept in the membership")
				}
				continue
			}
			if n+1 < probeFails && !refused[id] {
				p.gone[id] = n + 1
				continue
			}
			p.log.Info().Str("member", addrs[id]).Msg("member left: gone from etcd and not answering")
			delete(p.gone, id)
			delete(p.alive, id)
			delete(p.view, id)
			changed = true
		}
		p.mu.Unlock()
		if changed {
			p.publish()
		}
		p.pubMu.Unlock()
	}
}

// ping asks the member at addr's pinger for an answer. A refused
// connection is an answer too: no process listens there any more (a
// killed member), so it is not asked again.
func (p *etcdProvider) ping(addr string) (alive, dead bool) {
	conn, err := net.DialTimeout("tcp", addr, probeTimeout)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return false, true
	}
	if err == nil {
		_ = conn.Close()
	}
	res, err := p.c.ActorSystem.Root.RequestFuture(actor.NewPID(addr, pingName), &emptypb.Empty{}, probeTimeout).Result()
	if err != nil {
		return false, false
	}
	_, ok := res.(*emptypb.Empty)
	return ok, false
}

// publish tells the member list the view (pubMu held, p.mu not).
func (p *etcdProvider) publish() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	ms := make([]*cluster.Member, 0, len(p.view)+1)
	for _, m := range p.view {
		ms = append(ms, m)
	}
	if p.self != nil {
		ms = append(ms, p.self)
	}
	p.mu.Unlock()
	p.c.MemberList.UpdateClusterTopology(ms)
}

// decode reads a member's key and value (nil if not one).
func (p *etcdProvider) decode(key, value []byte) *cluster.Member {
	var r memberRecord
	if err := json.Unmarshal(value, &r); err != nil || r.ID == "" || r.ID != strings.TrimPrefix(string(key), p.pre) {
		p.log.Warn().Str("key", string(key)).Msg("etcd: not a member record: ignored")
		return nil
	}
	return &cluster.Member{Id: r.ID, Host: r.Host, Port: r.Port, Kinds: r.Kinds}
}

// splitAddr splits a remote address into host and port.
func splitAddr(addr string) (string, int32, error) {
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		return "", 0, fmt.Errorf("cluster: remote address %q has no port", addr)
	}
	var port int32
	if _, err := fmt.Sscan(addr[i+1:], &port); err != nil {
		return "", 0, fmt.Errorf("cluster: remote address %q: %w", addr, err)
	}
	return addr[:i], port, nil
}

var _ cluster.ClusterProvider = (*etcdProvider)(nil)
