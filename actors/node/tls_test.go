package node_test

import (
	"context"
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

// TestClusterMutualTLS: with cluster TLS, a client holding a certificate
// of the cluster's CA runs a turn on a node; a client without one, or with
// one another CA signed, reaches nothing — the node asks no model and
// records nothing for the sessions it asked for. Also: a turn its caller
// runs with approvals skipped still asks its clarify question of the
// caller (no permission travels in the request).
func TestClusterMutualTLS(t *testing.T) {
	if isolate(t) {
		return
	}
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

	ctx := context.Background()
	log := testLog()
	store, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	newSession := func() string {
		sid := uuid.NewString()
		if err := session.Create(ctx, store, sid, session.Start{Source: "cli", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
			t.Fatal(err)
		}
		return sid
	}
	client := func(tls *node.TLSFiles) *node.Sessions {
		sys := actors.NewSystem(log)
		c, err := node.Client(sys, node.Config{Name: "t", Etcd: []string{etcd.Endpoint}, Poll: time.Second, TLS: tls}, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Leave(); sys.Shutdown() })
		gatewaytest.WaitFor(t, "the node in the client's topology", func() bool { return len(c.Members()) == 1 })
		return node.NewSessions(c)
	}
	var mu sync.Mutex
	var asked []tool.Question
	asker := askerFunc(func(ctx context.Context, q tool.Question) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, q)
		return "blue", nil
	})

	// A member's certificate: the turn runs.
	good := client(&node.TLSFiles{CA: filepath.Join(certs, "ca.pem"), Cert: filepath.Join(certs, "client.pem"), Key: filepath.Join(certs, "client-key.pem")})
	good.Asker = asker
	sid := newSession()
	r := good.RunTurn(ctx, sid, &session.Turn{ID: "t1", Text: "paint it", Yolo: true})
	if r.Err != nil || !strings.Contains(r.Answer, "blue") {
		t.Fatalf("turn with the cluster's certificate: %+v", r)
	}
	mu.Lock()
	if len(asked) != 1 || asked[0].Kind != tool.QuestionClarify {
		t.Fatalf("a yolo turn's clarify question reached the caller as %+v", asked)
	}
	mu.Unlock()

	// No certificate, and another CA's: nothing reaches the node.
	for name, tls := range map[string]*node.TLSFiles{
		"no certificate":      nil,
		"another CA's member": {CA: filepath.Join(rogue, "ca.pem"), Cert: filepath.Join(rogue, "client.pem"), Key: filepath.Join(rogue, "client-key.pem")},
	} {
		before := len(llm.Requests())
		c := client(tls)
		c.Asker = asker
		sid := newSession()
		tctx, cancel := context.WithCancel(ctx)
		done := make(chan session.TurnResult, 1)
		go func() { done <- c.RunTurn(tctx, sid, &session.Turn{ID: "t1", Text: "paint it", Yolo: true}) }()
		time.Sleep(6 * time.Second)
		select {
		case r := <-done:
			if r.Err == nil {
				t.Fatalf("%s: the turn ran: %+v", name, r)
			}
		default:
		}
		cancel()
		if n := len(llm.Requests()); n != before {
			t.Fatalf("%s: the model was asked %d times", name, n-before)
		}
		rs, err := store.ReadStream(ctx, events.SessionStream(sid), events.Forward, 0, 0)
		if err != nil || len(rs) != 2 { // SessionStarted and SystemPromptBuilt only
			t.Fatalf("%s: the session holds %d events (%v)", name, len(rs), err)
		}
	}
}
