package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/compress"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/actors/toolrun"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/events"
)

func TestFileLeases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	a := session.NewFileLeases(dir, session.Owner{Host: "host-a", PID: 101, Nonce: "a"})
	b := session.NewFileLeases(dir, session.Owner{Host: "host-b", PID: 202, Nonce: "b"})
	la, err := a.Lease("s1")
	if err != nil || la.Previous() != nil {
		t.Fatalf("first lease: %v %v", err, la)
	}
	_, err = b.Lease("s1")
	var inUse *session.InUseError
	if !errors.As(err, &inUse) || inUse.Owner.PID != 101 || !strings.Contains(err.Error(), "in use by pid 101 on host-a") {
		t.Fatalf("second lease while held: %v", err)
	}
	// Another session is another lease; an id that is no file name too.
	lo, err := b.Lease("../other/session")
	if err != nil {
		t.Fatal(err)
	}
	lo.Release()
	if err := la.Release(); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Lease("s1")
	if err != nil || lb.Previous() != nil {
		t.Fatalf("lease after a release: %v (previous %v)", err, lb.Previous())
	}
	lb.Release()
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Fatalf("released leases left files: %v", m)
	}
	// A file naming an owner whose lock is gone was left by a dead one.
	os.WriteFile(filepath.Join(dir, "session-s2.lock"), []byte(`{"host":"host-a","pid":4242,"nonce":"x"}`), 0o600)
	l, err := a.Lease("s2")
	if err != nil || l.Previous() == nil || l.Previous().PID != 4242 {
		t.Fatalf("takeover: %v %+v", err, l)
	}
	l.Release()
}

// TestManagerRefusesALeasedSession: two managers over one store (two
// processes) cannot run one session; the first lets it go when its actor
// stops, and a compressed child is leased as it is made.
func TestManagerRefusesALeasedSession(t *testing.T) {
	r := newRig(t)
	r.create(t, "s1")
	locks := filepath.Join(r.dir, "locks")
	newMgr := func(pid int) *session.Manager {
		sys := actors.NewSystem(zerolog.Nop())
		deps := session.Deps{Store: r.store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: r.srv.URL + "/v1"}),
			Tools: tool.NewTools(echoTool{}), Exec: toolrun.NewPool(sys, 8, 5*time.Second), Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 20,
			Leases: session.NewFileLeases(locks, session.Owner{Host: "here", PID: pid})}
		m := session.NewManager(sys, deps)
		t.Cleanup(func() {
			m.Shutdown()
			sys.Shutdown()
		})
		return m
	}
	one, two := newMgr(1), newMgr(2)
	ctx := context.Background()
	if _, err := one.Session(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := two.Session(ctx, "s1")
		done <- err
	}()
	var inUse *session.InUseError
	select {
	case err := <-done:
		if !errors.As(err, &inUse) || inUse.Owner.PID != 1 || inUse.Session != "s1" {
			t.Fatalf("second manager: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second manager hangs on a leased session")
	}
	res := two.Run(ctx, "s1", "hello", nil)
	if !errors.As(res.Err, &inUse) {
		t.Fatalf("a turn beside the owner: %+v", res)
	}
	if got := r.types(t, "s1"); len(got) != 2 {
		t.Fatalf("the refused manager wrote %v", got)
	}
	one.Restart("s1") // the owner lets go
	if _, err := two.Session(ctx, "s1"); err != nil {
		t.Fatalf("after the owner let go: %v", err)
	}
}

// TestCompressionLeasesTheChild: the compressed child a session goes on in
// is leased before it exists, so another process can neither resume the
// parent (which leads to the child) nor the child itself.
func TestCompressionLeasesTheChild(t *testing.T) {
	var locks string
	r := newCompRigWith(t, compress.Config{Enabled: true}, 4000, func(d *session.Deps, _ events.Store, dir string) {
		locks = filepath.Join(dir, "locks")
		d.Leases = session.NewFileLeases(locks, session.Owner{Host: "here", PID: 1})
	}, llmtest.Reply{Content: "## Goal\nsum"}, llmtest.Reply{Content: "fits now"})
	r.seedHistory(t, "auto", 20)
	res := r.mgr.Run(context.Background(), "auto", "next?", nil)
	if res.Err != nil || res.SessionID == "auto" {
		t.Fatalf("%+v", res)
	}
	other := session.NewFileLeases(locks, session.Owner{Host: "there", PID: 2})
	for _, id := range []string{"auto", res.SessionID} {
		var inUse *session.InUseError
		if _, err := other.Lease(id); !errors.As(err, &inUse) || inUse.Owner.PID != 1 {
			t.Fatalf("lease of %s beside its owner: %v", id, err)
		}
	}
	// A second manager resuming the parent follows it to the child, which
	// is taken.
	sys := actors.NewSystem(zerolog.Nop())
	mgr := session.NewManager(sys, session.Deps{Store: r.store, Log: zerolog.Nop(), Leases: other})
	defer func() { mgr.Shutdown(); sys.Shutdown() }()
	var inUse *session.InUseError
	if _, err := mgr.Session(context.Background(), "auto"); !errors.As(err, &inUse) {
		t.Fatalf("resume of the compressed parent: %v", err)
	}
}
