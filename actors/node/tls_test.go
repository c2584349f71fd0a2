package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/node"
	"github.com/hermes-go/hermes/actors/node/nodetest"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/events/postgres/pgtest"
)

// mtlsRig is a node speaking mutual TLS (certificates of the CA in certs)
// on real etcd and PostgreSQL, the scripted model, and a way to make a
// session and a client. One client per test process: protoactor-go sets
// gRPC's global logger each time a remote starts.
type mtlsRig struct {
	certs, rogue string
	llm          *llmtest.Server
	store        *postgres.Store
	etcd         string
}

func newMTLSRig(t *testing.T) *mtlsRig {
	certs, rogue := t.TempDir(), t.TempDir()
	if err := node.MakeCerts(certs, []string{"node", "client"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := node.MakeCerts(rogue, []string{"client"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(certs, "ca-key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the CA key: %v %v", fi, err)
	}
	pg := pgtest.Start(t)
	dsn := pg.Database(t)
	etcd := nodetest.StartEtcd(t)
	llm := llmtest.New()
	llm.Route = paintIt
	t.Cleanup(llm.Close)
	races := t.TempDir()
	t.Cleanup(func() { checkRaces(t, races) })
	startNode(t, []string{"HERMES_NODE_STORE=" + dsn, "HERMES_NODE_ETCD=" + etcd.Endpoint, "HERMES_NODE_LLM=" + llm.URL, "HERMES_NODE_TLS=" + certs}, races)
	store, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return &mtlsRig{certs: certs, rogue: rogue, llm: llm, store: store, etcd: etcd.Endpoint}
}

func (r *mtlsRig) session(t *testing.T) string {
	sid := uuid.NewString()
	if err := session.Create(context.Background(), r.store, sid, session.Start{Source: "cli", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
		t.Fatal(err)
	}
	return sid
}

func (r *mtlsRig) client(t *testing.T, tls *node.TLSFiles) *node.Sessions {
	log := testLog()
	sys := actors.NewSystem(log)
	c, err := node.Client(sys, node.Config{Name: "t", Etcd: []string{r.etcd}, Poll: time.Second, TLS: tls}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Leave(); sys.Shutdown() })
	gatewaytest.WaitFor(t, "the node in the client's topology", func() bool { return len(c.Members()) == 1 })
	return node.NewSessions(c)
}

// TestClusterMutualTLS: with cluster TLS, a client holding a certificate
// of the cluster's CA runs a turn on a node; a turn its caller runs with
// approvals skipped still asks its clarify question of the caller (no
// permission travels in the request).
func TestClusterMutualTLS(t *testing.T) {
	if isolate(t) {
		return
	}
	r := newMTLSRig(t)
	good := r.client(t, &node.TLSFiles{CA: filepath.Join(r.certs, "ca.pem"), Cert: filepath.Join(r.certs, "client.pem"), Key: filepath.Join(r.certs, "client-key.pem")})
	var mu sync.Mutex
	var asked []tool.Question
	good.Asker = askerFunc(func(ctx context.Context, q tool.Question) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, q)
		return "blue", nil
	})
	res := good.RunTurn(context.Background(), r.session(t), &session.Turn{ID: "t1", Text: "paint it", Yolo: true})
	if res.Err != nil || !strings.Contains(res.Answer, "blue") {
		t.Fatalf("turn with the cluster's certificate: %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0].Kind != tool.QuestionClarify {
		t.Fatalf("a yolo turn's clarify question reached the caller as %+v", asked)
	}
}

// TestClusterMutualTLSRefusesNoCertificate: a client without a certificate
// reaches nothing: the node asks no model and records nothing.
func TestClusterMutualTLSRefusesNoCertificate(t *testing.T) {
	if isolate(t) {
		return
	}
	r := newMTLSRig(t)
	r.refused(t, r.client(t, nil))
}

// TestClusterMutualTLSRefusesAnotherCA: a client whose certificate another
// CA signed reaches nothing either.
func TestClusterMutualTLSRefusesAnotherCA(t *testing.T) {
	if isolate(t) {
		return
	}
	r := newMTLSRig(t)
	r.refused(t, r.client(t, &node.TLSFiles{CA: filepath.Join(r.rogue, "ca.pem"), Cert: filepath.Join(r.rogue, "client.pem"), Key: filepath.Join(r.rogue, "client-key.pem")}))
}

// refused runs a turn through c for six seconds and checks that it never
// reached the node.
func (r *mtlsRig) refused(t *testing.T, c *node.Sessions) {
	c.Asker = askerFunc(func(context.Context, tool.Question) (string, error) { return "blue", nil })
	sid := r.session(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan session.TurnResult, 1)
	go func() { done <- c.RunTurn(ctx, sid, &session.Turn{ID: "t1", Text: "paint it", Yolo: true}) }()
	time.Sleep(6 * time.Second)
	select {
	case res := <-done:
		if res.Err == nil {
			t.Fatalf("the turn ran: %+v", res)
		}
	default:
	}
	// Stopped before any grain answered, the turn ends at once (and
	// before the client leaves).
	cancel()
	select {
	case <-done:
	case <-time.After(45 * time.Second): // its stop request times out first
		t.Fatal("a stopped turn that reached no grain did not end")
	}
	if n := len(r.llm.Requests()); n != 0 {
		t.Fatalf("the model was asked %d times", n)
	}
	rs, err := r.store.ReadStream(context.Background(), events.SessionStream(sid), events.Forward, 0, 0)
	if err != nil || len(rs) != 2 { // SessionStarted and SystemPromptBuilt only
		t.Fatalf("the session holds %d events (%v)", len(rs), err)
	}
}

// TestEtcdOverTLS: with etcd serving https and requiring client
// certificates of the cluster CA, a process holding the cluster's
// certificate joins; one without a certificate, or with another CA's, is
// refused before anything starts, saying why.
func TestEtcdOverTLS(t *testing.T) {
	if isolate(t) {
		return
	}
	certs, rogue := t.TempDir(), t.TempDir()
	if err := node.MakeCerts(certs, []string{"etcd=127.0.0.1", "gw"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := node.MakeCerts(rogue, []string{"gw"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	etcd := nodetest.StartEtcdTLS(t, certs)
	join := func(files *node.TLSFiles) error {
		log := testLog()
		sys := actors.NewSystem(log)
		// A client that joined is not left: protoactor's etcd provider
		// races its own watcher when shut down right after it started
		// (its shutdown flag is unsynchronised); this test's process
		// (isolated) ends instead.
		_, err := node.Client(sys, node.Config{Name: "t", Etcd: []string{etcd.Endpoint}, Poll: time.Second, TLS: files}, log)
		return err
	}
	if err := join(&node.TLSFiles{CA: filepath.Join(certs, "ca.pem"), Cert: filepath.Join(certs, "gw.pem"), Key: filepath.Join(certs, "gw-key.pem")}); err != nil {
		t.Fatalf("with the cluster's certificate: %v", err)
	}
	if err := join(nil); err == nil || !strings.Contains(err.Error(), "no etcd answers") {
		t.Fatalf("without a certificate: %v", err)
	}
	if err := join(&node.TLSFiles{CA: filepath.Join(rogue, "ca.pem"), Cert: filepath.Join(rogue, "gw.pem"), Key: filepath.Join(rogue, "gw-key.pem")}); err == nil || !strings.Contains(err.Error(), "no etcd answers") {
		t.Fatalf("with another CA's certificate: %v", err)
	}
	if _, err := node.Client(actors.NewSystem(testLog()), node.Config{Name: "t", Etcd: []string{etcd.Endpoint, "127.0.0.1:1"}}, testLog()); err == nil || !strings.Contains(err.Error(), "https:// or none") {
		t.Fatalf("mixed endpoints: %v", err)
	}
}

// TestPostgresVerifyFull: the store's connection string carries libpq's
// TLS parameters to PostgreSQL (pgx reads them): against a server with a
// certificate of the cluster CA, sslmode=verify-full with that CA as the
// root connects; with another CA as the root it is refused.
func TestPostgresVerifyFull(t *testing.T) {
	certs, rogue := t.TempDir(), t.TempDir()
	if err := node.MakeCerts(certs, []string{"pg=127.0.0.1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := node.MakeCerts(rogue, []string{"x"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	srv, err := pgtest.LaunchTLS(filepath.Join(certs, "pg.pem"), filepath.Join(certs, "pg-key.pem"))
	if errors.Is(err, pgtest.ErrUnavailable) {
		pgtest.Unavailable(t)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	dsn := strings.Replace(srv.Database(t), "sslmode=disable", "sslmode=verify-full&sslrootcert="+filepath.Join(certs, "ca.pem"), 1)
	store, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("verify-full with the cluster CA: %v", err)
	}
	sid := uuid.NewString()
	if err := session.Create(context.Background(), store, sid, session.Start{Source: "cli", Model: "m", System: "s"}); err != nil {
		t.Fatalf("a write over TLS: %v", err)
	}
	store.Close()
	bad := strings.Replace(dsn, filepath.Join(certs, "ca.pem"), filepath.Join(rogue, "ca.pem"), 1)
	if s, err := postgres.Open(context.Background(), bad); err == nil {
		s.Close()
		t.Fatal("verify-full against another CA connected")
	}
}
