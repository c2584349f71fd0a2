package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/grants"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// handConfig is a config.yaml as a person writes it: comments, an order of
// their own, an entry of command_allowlist.
const handConfig = "# my settings\nmodel: m   # the test model\n\ncommand_allowlist:\n  - git push --force   # by hand\n"

// answers is a person at the keyboard: each question takes the next
// answer; a question with none left fails the test.
type answers struct {
	t     *testing.T
	mu    sync.Mutex
	left  []string
	asked int
}

func (a *answers) Ask(_ context.Context, q tool.Question) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked++
	if len(a.left) == 0 {
		a.t.Errorf("asked without an answer left: %s", q.Text)
		return "", tool.ErrNoAsker
	}
	ans := a.left[0]
	a.left = a.left[1:]
	return ans, nil
}

// approverOn is what a process of home wires: the allow-list of its store
// and config.yaml, and the terminal's approver over it.
func approverOn(t *testing.T, home string, store events.Store) (*terminal.Approver, *grants.List) {
	t.Helper()
	fileCfg, err := config.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	l := grants.New(store, fileCfg.CommandAllowlist, zerolog.Nop())
	return &terminal.Approver{Allow: l}, l
}

func sessionCtx(id string, asker tool.Asker) context.Context {
	return tool.WithEnv(context.Background(), &tool.Env{SessionID: id, Asker: asker, Values: tool.NewSessionValues()})
}

// TestAlwaysIsAGrantEvent: "always" appends a grant to the store and
// leaves config.yaml as it was, byte for byte; a new process on the same
// home allows the command without asking; a revocation asks again.
func TestAlwaysIsAGrantEvent(t *testing.T) {
	home, wd := t.TempDir(), t.TempDir()
	cfgPath := filepath.Join(home, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(handConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(home, "events.db")
	first, err := embedded.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	ap, _ := approverOn(t, home, first)
	person := &answers{t: t, left: []string{"always"}}
	if err := ap.ApproveIn(sessionCtx("s-1", person), wd, "rm -rf build"); err != nil {
		t.Fatal(err)
	}
	if person.asked != 1 {
		t.Fatalf("asked %d times", person.asked)
	}
	rs, err := first.ReadStream(context.Background(), grants.Stream, events.Forward, 0, 0)
	if err != nil || len(rs) != 1 {
		t.Fatalf("grants stream: %v %v", rs, err)
	}
	p, err := schema.Decode(rs[0].Envelope)
	if g, ok := p.(schema.ApprovalGranted); err != nil || !ok || g != (schema.ApprovalGranted{Pattern: "recursive-delete", By: "user", Session: "s-1", Command: "rm -rf build"}) {
		t.Fatalf("grant event %#v %v", p, err)
	}
	first.Close()
	if got, _ := os.ReadFile(cfgPath); !bytes.Equal(got, []byte(handConfig)) {
		t.Fatalf("config.yaml changed:\n%s", got)
	}

	// Another process: a new handle on the same store, nobody to answer.
	second, err := embedded.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	ap2, l2 := approverOn(t, home, second)
	nobody := &answers{t: t}
	for _, cmd := range []string{"rm -rf build", "rm -r -f ./other", "git push --force origin main"} {
		if err := ap2.ApproveIn(sessionCtx("s-2", nobody), wd, cmd); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
	}
	if nobody.asked != 0 {
		t.Fatal("a granted command was asked about")
	}
	if err := l2.Revoke(context.Background(), "recursive delete", grants.ByCLI, "test"); err != nil {
		t.Fatal(err)
	}
	person = &answers{t: t, left: []string{"deny"}}
	if err := ap2.ApproveIn(sessionCtx("s-3", person), wd, "rm -rf build"); err == nil || person.asked != 1 {
		t.Fatalf("after the revocation: %v, asked %d times", err, person.asked)
	}
	if got, _ := os.ReadFile(cfgPath); !bytes.Equal(got, []byte(handConfig)) {
		t.Fatalf("config.yaml changed:\n%s", got)
	}
}

// TestApprovalsCommand: hermes approvals list, add and revoke; the cron
// scheduler's script check follows the grants; grants given by processes
// at the same time all land.
func TestApprovalsCommand(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	env := chatEnv(srv)
	home := t.TempDir()
	cfgPath := filepath.Join(home, "config.yaml")
	os.WriteFile(cfgPath, []byte(handConfig), 0o600)
	run := func(args ...string) (string, string, int) {
		return hermes(t, env, "", append([]string{"--home", home}, args...)...)
	}
	job := []string{"cron", "add", "--schedule", "every 1h", "--script", "git reset --hard", "--no-agent"}
	if _, errOut, code := run(job...); code == 0 || !strings.Contains(errOut, "git reset --hard") {
		t.Fatalf("a dangerous script was accepted without a grant: %s", errOut)
	}
	for _, c := range []struct {
		pattern, want string
	}{
		{"recursive delte", "no rule is named"},
		{"recursive-delet", "hermes approvals rules lists them"},
		{"fork bomb", "never allowed"},
		{"fork-bomb", "never allowed"},
	} {
		if _, errOut, code := run("approvals", "add", c.pattern); code == 0 || !strings.Contains(errOut, c.want) {
			t.Fatalf("approvals add %q: %d %s", c.pattern, code, errOut)
		}
	}
	if out, errOut, code := run("approvals", "add", "git reset --hard"); code != 0 || !strings.Contains(out, "granted") {
		t.Fatalf("approvals add: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := run(job...); code != 0 {
		t.Fatalf("the granted script was refused: %s %s", out, errOut)
	}
	// Processes granting at once: every grant lands.
	// by description, by ID, by Python Hermes' description, an MCP tool
	pats := []string{"recursive delete", "kill-9", "chmod 777", "SQL DROP", "mcp_github_*"}
	var wg sync.WaitGroup
	for _, p := range pats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, errOut, code := run("approvals", "add", p); code != 0 {
				t.Errorf("approvals add %q: %s", p, errOut)
			}
		}()
	}
	wg.Wait()
	out, errOut, code := run("approvals", "list")
	if code != 0 {
		t.Fatal(errOut)
	}
	for _, p := range []string{"recursive-delete", "kill-9", "chmod-777", "sql-drop", "mcp_github_*", "git-reset-hard"} {
		if !grantListed(out, p, "cli") {
			t.Errorf("list misses %q by cli:\n%s", p, out)
		}
	}
	if !strings.Contains(out, "DROP TABLE / DATABASE") {
		t.Errorf("list does not describe the rules:\n%s", out)
	}
	if !grantListed(out, "git-push-force", "config.yaml") || len(strings.Split(strings.TrimSpace(out), "\n")) != 1+len(pats)+2 {
		t.Fatalf("list:\n%s", out)
	}
	if out, errOut, code := run("approvals", "rules"); code != 0 || !regexp.MustCompile(`(?m)^recursive-delete +ask +recursive delete$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^fork-bomb +refuse +fork bomb$`).MatchString(out) {
		t.Fatalf("approvals rules: %d %s\n%s", code, errOut, out)
	}
	if _, errOut, code := run("approvals", "revoke", "git push --force"); code == 0 || !strings.Contains(errOut, "config.yaml") {
		t.Fatalf("revoking a config entry: %d %s", code, errOut)
	}
	if out, errOut, code := run("approvals", "revoke", "git reset --hard", "--reason", "done with it"); code != 0 || !strings.Contains(out, "revoked: git-reset-hard") {
		t.Fatalf("revoke: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := run(job...); code == 0 {
		t.Fatalf("a revoked grant still lets the script in: %s", errOut)
	}
	if _, errOut, code := run("approvals", "revoke", "git reset --hard"); code == 0 || !strings.Contains(errOut, "no grant") {
		t.Fatalf("revoking twice: %d %s", code, errOut)
	}
	if got, _ := os.ReadFile(cfgPath); !bytes.Equal(got, []byte(handConfig)) {
		t.Fatalf("config.yaml changed:\n%s", got)
	}
}

// grantListed reports whether the output of hermes approvals list has a row of
// pattern granted by by.
func grantListed(out, pattern, by string) bool {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, pattern+" "); ok {
			if f := strings.Fields(rest); len(f) > 0 && f[0] == by {
				return true
			}
		}
	}
	return false
}
