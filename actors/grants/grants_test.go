package grants

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// open opens another handle on the embedded store in dir, as another
// process would.
func open(t *testing.T, dir string) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func patterns(t *testing.T, l *List) []string {
	t.Helper()
	gs, err := l.Grants(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range gs {
		out = append(out, g.Pattern)
	}
	return out
}

func TestGrantSurvivesTheProcessAndRevokes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first := New(open(t, dir), nil, zerolog.Nop())
	if first.Has("recursive delete") {
		t.Fatal("allowed before any grant")
	}
	if err := first.Grant(ctx, "recursive delete", "s-1", "rm -rf build"); err != nil {
		t.Fatal(err)
	}
	// Granting again appends nothing.
	if err := first.Add("recursive delete"); err != nil {
		t.Fatal(err)
	}
	store := open(t, dir)
	rs, err := store.ReadStream(ctx, Stream, events.Forward, 0, 0)
	if err != nil || len(rs) != 1 || rs[0].Type != "ApprovalGranted" {
		t.Fatalf("stream after two grants of one pattern: %v %v", rs, err)
	}
	second := New(store, nil, zerolog.Nop())
	if !second.Has("recursive delete") || second.Has("git push --force") {
		t.Fatal("a new list on the same store does not see the grant (or sees more)")
	}
	gs, _ := second.Grants(ctx)
	if len(gs) != 1 || gs[0].By != ByUser || gs[0].Session != "s-1" || gs[0].Command != "rm -rf build" || gs[0].At.IsZero() {
		t.Fatalf("grant as read back: %+v", gs)
	}
	// A revocation in one process counts in the other at once.
	if err := second.Revoke(ctx, "recursive delete", ByCLI, ""); err != nil {
		t.Fatal(err)
	}
	if first.Has("recursive delete") {
		t.Fatal("a revoked grant still allows in the process that holds it")
	}
	if err := second.Revoke(ctx, "recursive delete", ByCLI, ""); err == nil || !strings.Contains(err.Error(), "no grant") {
		t.Fatalf("revoking twice: %v", err)
	}
	// Granted again after a revocation.
	if err := first.Add("recursive delete"); err != nil || !second.Has("recursive delete") {
		t.Fatalf("grant after revocation: %v", err)
	}
}

func TestConfigEntriesAreReadOnly(t *testing.T) {
	ctx := context.Background()
	l := New(open(t, t.TempDir()), []string{"git reset --hard"}, zerolog.Nop())
	if !l.Has("git reset --hard") {
		t.Fatal("config entry does not allow")
	}
	err := l.Revoke(ctx, "git reset --hard", ByCLI, "")
	if err == nil || !strings.Contains(err.Error(), "config.yaml") {
		t.Fatalf("revoking a config entry: %v", err)
	}
	if got := l.Config(); len(got) != 1 || got[0] != "git reset --hard" {
		t.Fatal(got)
	}
	// Without a store: config only, and no grants.
	bare := New(nil, []string{"x"}, zerolog.Nop())
	if !bare.Has("x") || bare.Has("y") || bare.Add("y") == nil {
		t.Fatal("a list without a store")
	}
}

// TestConcurrentGrantsAllLand: processes granting at the same time (two
// store handles, several goroutines each) lose none of the grants.
func TestConcurrentGrantsAllLand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lists := []*List{New(open(t, dir), nil, zerolog.Nop()), New(open(t, dir), nil, zerolog.Nop())}
	const each = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*each+2)
	start := make(chan struct{})
	for i, l := range lists {
		for j := 0; j < each; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs <- l.Add(fmt.Sprintf("rule %d.%d", i, j))
			}()
		}
		// Both also grant the same pattern: it is recorded once.
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs <- l.Add("shared")
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	fresh := New(open(t, dir), nil, zerolog.Nop())
	got := patterns(t, fresh)
	if len(got) != 2*each+1 {
		t.Fatalf("%d grants landed, want %d: %v", len(got), 2*each+1, got)
	}
	rs, _ := open(t, dir).ReadStream(ctx, Stream, events.Forward, 0, 0)
	if len(rs) != 2*each+1 {
		t.Fatalf("%d events in %s, want %d", len(rs), Stream, 2*each+1)
	}
}

// TestUnreadableGrantsAsk: when the store cannot be read, a grant is not
// honoured (the person is asked instead).
func TestUnreadableGrantsAsk(t *testing.T) {
	dir := t.TempDir()
	s, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(context.Background(), Stream, events.NoStream,
		schema.MustEnvelope(schema.Meta{}, schema.ApprovalGranted{Pattern: "recursive delete", By: ByCLI})); err != nil {
		t.Fatal(err)
	}
	l := New(s, []string{"kill -9"}, zerolog.Nop())
	if !l.Has("recursive delete") {
		t.Fatal("grant not seen")
	}
	s.Close()
	if l.Has("recursive delete") {
		t.Fatal("a grant was honoured without reading the store")
	}
	if !l.Has("kill -9") {
		t.Fatal("config entries need no store")
	}
}

// racer lets another writer in between a list's read and its append, once.
type racer struct {
	events.Store
	between func()
}

func (r *racer) Append(ctx context.Context, stream string, expected events.Expected, evs ...schema.Envelope) (events.AppendResult, error) {
	if f := r.between; f != nil {
		r.between = nil
		f()
	}
	return r.Store.Append(ctx, stream, expected, evs...)
}

// TestLostRaceRetries: a grant whose append loses the race with another
// process's grant reads that one and lands after it.
func TestLostRaceRetries(t *testing.T) {
	dir := t.TempDir()
	other := New(open(t, dir), nil, zerolog.Nop())
	r := &racer{Store: open(t, dir)}
	r.between = func() {
		if err := other.Add("git push --force"); err != nil {
			t.Error(err)
		}
	}
	if err := New(r, nil, zerolog.Nop()).Add("recursive delete"); err != nil {
		t.Fatal(err)
	}
	if got := patterns(t, New(open(t, dir), nil, zerolog.Nop())); strings.Join(got, ",") != "git-push-force,recursive-delete" {
		t.Fatalf("grants after a lost race: %v", got)
	}
}

// A grant recorded before rules had IDs (its pattern a description) still
// allows the rule, under every name of it; a new grant records the ID,
// and a revocation by any name takes the old grant back.
func TestGrantsKeyedByRuleID(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	if _, err := s.Append(ctx, Stream, events.NoStream,
		schema.MustEnvelope(schema.Meta{}, schema.ApprovalGranted{Pattern: "recursive delete", By: ByUser})); err != nil {
		t.Fatal(err)
	}
	l := New(s, nil, zerolog.Nop())
	for _, key := range []string{"recursive-delete", "recursive delete", "recursive delete (long flag)"} {
		if !l.Has(key) {
			t.Errorf("the old grant does not allow %q", key)
		}
	}
	if l.Has("git-push-force") {
		t.Fatal("the old grant allows another rule")
	}
	// Granting the same rule by its ID appends nothing: it is granted.
	if err := l.Add("recursive-delete"); err != nil {
		t.Fatal(err)
	}
	if err := l.Add("git force push (rewrites remote history)"); err != nil { // Python Hermes' name of the rule
		t.Fatal(err)
	}
	rs, err := s.ReadStream(ctx, Stream, events.Forward, 0, 0)
	if err != nil || len(rs) != 2 {
		t.Fatalf("stream: %d events, %v", len(rs), err)
	}
	p, err := schema.Decode(rs[1].Envelope)
	if g, ok := p.(schema.ApprovalGranted); err != nil || !ok || g.Pattern != "git-push-force" {
		t.Fatalf("a new grant records %#v, want the rule ID", p)
	}
	if got := strings.Join(patterns(t, l), ","); got != "git-push-force,recursive-delete" {
		t.Fatalf("grants listed as %s", got)
	}
	if err := New(open(t, dir), nil, zerolog.Nop()).Revoke(ctx, "recursive-delete", ByCLI, ""); err != nil {
		t.Fatal(err)
	}
	if l.Has("recursive delete") || l.Has("recursive-delete") {
		t.Fatal("the old grant still allows after a revocation by ID")
	}
	// MCP tool patterns are no rules: kept as they are.
	if err := l.Add("mcp_github_*"); err != nil || !l.Has("mcp_github_*") {
		t.Fatalf("mcp grant: %v", err)
	}
}

// command_allowlist entries name rules by ID, description or alias (a
// Python Hermes config holds descriptions); each allows its rule, and
// revoking one is config.yaml's business whatever name the revocation
// gives.
func TestConfigEntriesByAnyName(t *testing.T) {
	l := New(open(t, t.TempDir()), []string{"SQL DROP", "git push --force", "kill-9", "no such rule"}, zerolog.Nop())
	for _, key := range []string{"sql-drop", "DROP TABLE / DATABASE", "git-push-force", "kill -9", "kill-9"} {
		if !l.Has(key) {
			t.Errorf("config does not allow %q", key)
		}
	}
	if l.Has("recursive-delete") {
		t.Fatal("config allows a rule it does not name")
	}
	if err := l.Revoke(context.Background(), "git-push-force", ByCLI, ""); err == nil || !strings.Contains(err.Error(), "config.yaml") {
		t.Fatalf("revoking a config entry by ID: %v", err)
	}
}
