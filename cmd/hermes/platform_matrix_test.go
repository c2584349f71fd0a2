package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/gateway/matrix/matrixtest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// `hermes gateway run` with MATRIX_* set serves the Matrix adapter: it
// joins the direct chats users allowed by MATRIX_ALLOWED_USERS and by
// GATEWAY_ALLOWED_USERS (which may name other platforms' users too) invite
// it to, answers there,
// keeps its sync token under $HERMES_HOME/gateway/matrix, and neither the
// log nor `config show` carries the access token.
func TestMatrixGatewayThroughTheCLI(t *testing.T) {
	hs := matrixtest.Start(t)
	bot, alice, bob := hs.Register(t, "hermes"), hs.Register(t, "alice"), hs.Register(t, "bob")
	srv := llmtest.New(llmtest.Reply{Content: "hello from **Hermes**"}, llmtest.Reply{Content: "hello, Bob"})
	defer srv.Close()
	home := t.TempDir()
	env := chatEnv(srv, "MATRIX_HOMESERVER="+hs.URL, "MATRIX_USER_ID="+string(bot.ID),
		"MATRIX_ACCESS_TOKEN="+bot.Token, "MATRIX_ALLOWED_USERS="+string(alice.ID), "GATEWAY_ALLOWED_USERS=111111,"+string(bob.ID))
	g := startGateway(t, home, env)

	dm := alice.DM(t, bot.ID)
	alice.WaitJoined(t, dm, bot.ID)
	alice.Text(t, dm, "hi")
	got := alice.WaitFrom(t, dm, bot.ID, 1)
	if c := got[0].Content.AsMessage(); c.Body != "hello from **Hermes**" || c.FormattedBody != "hello from <strong>Hermes</strong>" {
		t.Fatalf("answer %q / %q", c.Body, c.FormattedBody)
	}
	bdm := bob.DM(t, bot.ID)
	bob.WaitJoined(t, bdm, bot.ID)
	bob.Text(t, bdm, "and me?")
	if got := bob.WaitFrom(t, bdm, bot.ID, 1); got[0].Content.AsMessage().Body != "hello, Bob" {
		t.Fatalf("bob's answer %q", got[0].Content.AsMessage().Body)
	}
	waitUntil(t, "the sync token saved", func() bool {
		b, err := os.ReadFile(filepath.Join(home, "gateway", "matrix", "matrix-sync.json"))
		return err == nil && strings.Contains(string(b), `"since"`)
	})
	g.kill()
	if strings.Contains(g.stderr.String(), bot.Token) {
		t.Fatal("the gateway logged the access token")
	}
	out, errOut, rc := hermes(t, env, "", "--home", home, "config", "show")
	if rc != 0 || !strings.Contains(out, "platforms.matrix") || strings.Contains(out, bot.Token) {
		t.Fatalf("config show (exit %d): %s %s", rc, out, errOut)
	}
}
