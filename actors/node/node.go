// Package node runs sessions on a protoactor-go cluster: an agent node hosts
// session grains (virtual actors keyed by session id, placed by consistent
// hashing over the live members), and a gateway reaches them through
// Sessions, which implements the gateway's session port over the cluster.
//
// Members find each other through etcd (the cluster provider): a member
// registers under a lease that etcd drops a few seconds after the member
// stops renewing it, so a killed node leaves the topology by itself and its
// sessions move to the members left. A member whose key is gone leaves
// only once its remote stops answering too, so an etcd pause, restart or
// outage leaves the cluster serving on its last membership (see
// etcdProvider). A turn request is idempotent (it
// carries the turn's id, and a grain looks the turn up in the session's
// events before running it), so the gateway repeats it until a grain
// answers: after a failover the new owner answers a completed turn from
// the record, continues one cut short, and runs one that never started.
package node

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Kind is the cluster kind of session grains.
const Kind = "session"

// stopperName is the name of each member's actor that stops a session's
// turn running there.
const stopperName = "hermes-session-stopper"

// pingName is the name of each member's actor that answers probes (see
// etcdProvider.probe).
const pingName = "hermes-ping"

// Config places a process in a cluster.
type Config struct {
	// Name is the cluster's name (members of other names are ignored).
	Name string
	// Etcd lists the etcd client endpoints (host:port).
	Etcd []string
	// Host and Port are where this member's remote listens (Port 0: any).
	Host string
	Port int
	// Poll bounds one turn request: a turn running longer is answered
	// "pending" and asked again (default 2 s). It is also how long a dead
	// owner can hold a caller up before the request is retried.
	Poll time.Duration
	// TTL is the etcd lease of the membership (whole seconds, default 3;
	// etcd raises it to its minimum, 2 s by default): how long after a
	// kill the node leaves the topology (its port then refuses
	// connections; a frozen node is let go after three unanswered pings,
	// about 4 s more).
	TTL time.Duration
	// TLS, when set, makes the remote speak mutual TLS: every member and
	// client presents a certificate the cluster CA signed and refuses a
	// peer that does not. Without it the remote is plain gRPC, for a
	// network nobody else reaches.
	TLS *TLSFiles
	// Asker, on a member, is the asker its session manager was given:
	// its grains register each turn's caller in it, so that questions to
	// the person go to the gateway that asked for the turn.
	Asker *Asker
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = "hermes"
	}
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.Poll <= 0 {
		c.Poll = 2 * time.Second
	}
	return c
}

// Cluster is this process's membership.
type Cluster struct {
	c      *cluster.Cluster
	lookup *lookup
	cfg    Config
	member bool
	log    zerolog.Logger
	// hosted is a member's sessions (nil on a client).
	hosted   *hosted
	provider *etcdProvider
}

// Warning says what is wrong with the cluster's coordinator, etcd ("" when
// nothing is): while etcd does not answer, or this member's lease lapsed,
// the cluster serves on the last membership it saw and follows etcd again
// when it answers.
func (c *Cluster) Warning() string { return c.provider.Warning() }

// Drain prepares a member's graceful leave: it starts no new turn (their
// callers hear "pending" and ask again, reaching the session's next owner
// once this member has left) and waits up to timeout for the turns running
// here to end, so that none is cut short and run again elsewhere — the
// model is not asked twice for one step because a member left. It returns
// how many turns still run when it gives up; Leave then hands them over
// (their new owner continues them from their events). A client has none.
func (c *Cluster) Drain(timeout time.Duration) int {
	if c.hosted == nil {
		return 0
	}
	left := c.hosted.drain(timeout)
	c.log.Info().Int("still_running", left).Msg("drained: leaving the cluster")
	return left
}

// Address is this member's remote address (host:port).
func (c *Cluster) Address() string { return c.c.ActorSystem.Address() }

// Members returns the addresses of the live members hosting session grains
// (as of the latest topology this process heard of; protoactor's own member
// list is read without synchronisation while its provider writes it).
func (c *Cluster) Members() []string { return c.lookup.members() }

// Leave leaves the cluster: a member tells the others it left and
// deregisters from etcd (its sessions move to the members left); both
// close their connections. The actor system stays up for its owner to
// shut down (protoactor's Cluster.Shutdown would shut it down too).
func (c *Cluster) Leave() {
	if c.hosted != nil {
		// Replies the grains still owe (a draining member's "pending")
		// are dropped from here on: a send racing the remote's shutdown
		// is a data race inside protoactor-go.
		c.hosted.leave()
	}
	if c.member {
		c.c.Gossip.SetState(cluster.GracefullyLeftKey, &emptypb.Empty{})
	}
	_ = c.c.Config.ClusterProvider.Shutdown(true)
	c.c.IdentityLookup.Shutdown()
	if c.member {
		c.c.Gossip.Shutdown()
	}
	// A member's remote stops gracefully: each member connected to it is
	// told it is leaving. A client hosts nothing, so it just stops: the
	// graceful stop of protoactor-go's remote sends on a channel of each
	// connection it serves that the connection's own handler closes when
	// its stream ends, and a member's stream ending as a client leaves
	// (a node's replies) raced that send (the race detector caught it in
	// TestClusterJoinMidTurn; unsynchronised, it can panic).
	c.c.Remote.Shutdown(c.member)
}

// Host joins the cluster on sys as a member hosting session grains that run
// turns with mgr against store.
func Host(sys *actor.ActorSystem, cfg Config, store events.Store, mgr *session.Manager, log zerolog.Logger) (*Cluster, error) {
	cfg = cfg.withDefaults()
	log = log.With().Str("component", "node").Logger()
	h := &hosted{mgr: mgr, active: map[string]int{}, letting: map[string]chan struct{}{}, refused: map[string]time.Time{}}
	props := actor.PropsFromProducer(func() actor.Actor {
		return &grain{store: store, mgr: mgr, log: log, poll: cfg.Poll, turns: map[string]*turnRun{}, hosted: h, asker: cfg.Asker}
	})
	// The stopper stops a session's turn running here whichever member
	// owns the session now (see Sessions.Stop).
	if _, err := sys.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		switch b := c.Message().(type) {
		case *wrapperspb.BytesValue:
			var req request
			if json.Unmarshal(b.Value, &req) == nil && req.ID != "" {
				h.stopAsked(req.ID)
				mgr.Stop(req.ID, req.Reason)
			}
		case *actor.Started, *actor.Restarting, *actor.Stopping, *actor.Stopped, *actor.Terminated, *actor.ReceiveTimeout:
			// Lifecycle messages protoactor delivers that need nothing here.
		default:
			log.Warn().Str("message_type", fmt.Sprintf("%T", b)).Msg("session stopper: message not handled")
		}
	}), stopperName); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	// The pinger answers the other processes' probes: a member whose key
	// went from etcd stays in their membership while it answers.
	if _, err := sys.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*emptypb.Empty); ok {
			c.Respond(&emptypb.Empty{})
		}
	}), pingName); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c, err := join(sys, cfg, log, cluster.NewKind(Kind, props))
	if err != nil {
		return nil, err
	}
	c.hosted = h
	return c, nil
}

// Client joins the cluster on sys as a client: it reaches session grains
// and hosts none.
func Client(sys *actor.ActorSystem, cfg Config, log zerolog.Logger) (*Cluster, error) {
	return join(sys, cfg.withDefaults(), log.With().Str("component", "cluster-client").Logger(), nil)
}

func join(sys *actor.ActorSystem, cfg Config, log zerolog.Logger, kind *cluster.Kind) (c *Cluster, err error) {
	if len(cfg.Etcd) == 0 {
		return nil, errors.New("cluster: no etcd endpoint: set cluster.etcd in config.yaml or pass --etcd")
	}
	etls, err := etcdTLS(cfg)
	if err != nil {
		return nil, err
	}
	if err := probeEtcd(cfg.Etcd, etls); err != nil {
		return nil, err
	}
	provider := newEtcdProvider(clientv3.Config{Endpoints: cfg.Etcd, DialTimeout: 5 * time.Second, TLS: etls}, cfg.TTL, log)
	opts := []cluster.ConfigOption{cluster.WithRequestTimeout(cfg.Poll + 3*time.Second)}
	if kind != nil {
		opts = append(opts, cluster.WithKinds(kind))
	}
	var ropts []remote.ConfigOption
	if cfg.TLS != nil {
		if ropts, err = cfg.TLS.remoteOptions(); err != nil {
			return nil, err
		}
	}
	lk := newLookup()
	ccfg := cluster.Configure(cfg.Name, provider, lk, remote.Configure(cfg.Host, cfg.Port, ropts...), opts...)
	cl := cluster.New(sys, ccfg)
	// The provider panics when etcd refuses it; a start is an error here.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cluster: join %v: %v", cfg.Etcd, r)
		}
	}()
	if kind != nil {
		cl.StartMember()
	} else {
		cl.StartClient()
	}
	c = &Cluster{c: cl, lookup: lk, cfg: cfg, log: log, member: kind != nil, provider: provider}
	log.Info().Str("address", c.Address()).Bool("member", kind != nil).Msg("joined the cluster")
	return c, nil
}

// request is a call to a session grain; it travels as JSON in a
// wrapperspb.BytesValue (a registered protobuf type the remote serializes)
// so that no generated code is needed.
type request struct {
	Op   string `json:"op"` // turn, stop, compress
	ID   string `json:"id,omitempty"`
	Text string `json:"text,omitempty"`
	// Images name blobs in the home's blob store, which the members must
	// share (the bytes do not travel with the request).
	Images   []schema.ImageRef `json:"images,omitempty"`
	Model    string            `json:"model,omitempty"`
	Continue bool              `json:"continue,omitempty"`
	// New: the caller created the session for this turn (session.Turn's
	// New): the member does not look the turn up first.
	New bool `json:"new,omitempty"`
	// No permission travels in a request: a turn the caller runs with
	// approvals skipped (/yolo) still asks its questions of the caller,
	// whose asker approves them (see Sessions.RunTurn). A "yolo" field
	// sent by anyone is ignored.
	Reason string `json:"reason,omitempty"`
	// Caller is the caller's actor: it hears the turn's observations
	// (when Observe is set) and answers its questions to the person.
	Caller  *pidRef `json:"caller,omitempty"`
	Observe bool    `json:"observe,omitempty"`
	// Stopped: the caller stopped the turn; a grain that is not running
	// it answers how it ended instead of starting it.
	Stopped bool `json:"stopped,omitempty"`
	// Trace carries the caller's span (W3C trace context: traceparent,
	// tracestate), so that the turn on the member joins the caller's
	// trace.
	Trace map[string]string `json:"trace,omitempty"`
}

// callerMsg is what a grain sends a turn's caller: an observation, or a
// question (asked as a request: the caller answers the sender).
type callerMsg struct {
	Obs *agent.Observation `json:"obs,omitempty"`
	Ask *question          `json:"ask,omitempty"`
}

// pidRef names an actor of another member.
type pidRef struct {
	Address string `json:"address"`
	ID      string `json:"id"`
}

// reply is a grain's answer.
type reply struct {
	Pending bool   `json:"pending,omitempty"`
	Session string `json:"session,omitempty"`
	Turn    string `json:"turn,omitempty"`
	Answer  string `json:"answer,omitempty"`
	Err     string `json:"err,omitempty"`
	// Interrupted: the turn was stopped (Err wraps agent.ErrInterrupted).
	Interrupted bool `json:"interrupted,omitempty"`
	// Node is the member that answered.
	Node string `json:"node"`
	// Usage is the turn's model calls' usage when the member ran all of
	// them (session.TurnResult.Usage): the caller need not read it from
	// the store.
	Usage *schema.Usage `json:"usage,omitempty"`
}

func encode(v any) *wrapperspb.BytesValue {
	b, _ := json.Marshal(v)
	return wrapperspb.Bytes(b)
}

// probeEtcd checks that one of the endpoints answers etcd's /health, so
// that a process joining with no etcd to reach is refused saying where it
// looked (the provider's own first request would only time out).
func probeEtcd(endpoints []string, tc *tls.Config) error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	var errs []error
	for _, e := range endpoints {
		u := e
		if !strings.Contains(u, "://") {
			u = "http://" + u
		}
		resp, err := client.Get(strings.TrimSuffix(u, "/") + "/health")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s/health answered %s", u, resp.Status))
	}
	return fmt.Errorf("cluster: no etcd answers at %s (is etcd running there? its client URL, host:port): %w", strings.Join(endpoints, ", "), errors.Join(errs...))
}
