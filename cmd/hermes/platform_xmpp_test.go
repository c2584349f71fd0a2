package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/gateway/xmpp/xmpptest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// `hermes gateway run` with platforms.xmpp in config.yaml and the password
// in XMPP_PASSWORD logs in to a real Prosody, joins the room, answers an
// allowed user (named with other case in XMPP_ALLOWED_USERS) and a mention
// in the room, and never logs the password.
func TestXMPPGatewayAnswers(t *testing.T) {
	srv := xmpptest.Start(t)
	srv.Register("hermes", "bot-secret-pw")
	srv.Register("alice", "alice-pass")
	alice := srv.Connect("alice", "alice-pass")
	room := "team@" + xmpptest.MUC
	alice.Join(room, "Alice")
	llm := llmtest.New(llmtest.Reply{Content: "hello from hermes"}, llmtest.Reply{Content: "hello, room"})
	defer llm.Close()
	home := t.TempDir()
	cfg := "platforms:\n  xmpp:\n    jid: hermes@localhost\n    server: " + srv.Addr + "\n    rooms: [" + room + "]\n    nick: Hermes\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The test's certificate authority stands in for the system's.
	env := chatEnv(llm, "XMPP_PASSWORD=bot-secret-pw", "XMPP_ALLOWED_USERS=Alice@LocalHost/phone",
		"SSL_CERT_FILE="+filepath.Join(srv.Dir, "certs", xmpptest.Domain+".crt"))
	g := startGateway(t, home, env)
	alice.WaitPresence(room + "/Hermes")
	alice.Say("hermes@localhost", "hi there")
	if got := alice.Wait("hermes@localhost", 1); got[0].Body != "hello from hermes" {
		t.Fatalf("answer %q", got[0].Body)
	}
	alice.SayRoom(room, "Hermes: and here?")
	waitUntil(t, "the answer in the room", func() bool {
		for _, m := range alice.Messages(room) {
			if m.From == room+"/Hermes" && m.Body == "hello, room" {
				return true
			}
		}
		return false
	})
	out, _, _ := hermes(t, env, "", "--home", home, "config", "show")
	if strings.Contains(out, "bot-secret-pw") {
		t.Fatal("config show prints the XMPP password")
	}
	g.kill()
	if strings.Contains(g.stderr.String(), "bot-secret-pw") {
		t.Fatal("the gateway logged the XMPP password")
	}
}

// A wrong password is reported by `gateway status` and not retried.
func TestXMPPGatewayBadPassword(t *testing.T) {
	srv := xmpptest.Start(t)
	srv.Register("hermes", "bot-secret-pw")
	llm := llmtest.New()
	defer llm.Close()
	home := t.TempDir()
	env := chatEnv(llm, "XMPP_JID=hermes@localhost", "XMPP_PASSWORD=not-the-password", "XMPP_SERVER="+srv.Addr,
		"SSL_CERT_FILE="+filepath.Join(srv.Dir, "certs", xmpptest.Domain+".crt"))
	g := startGatewayOnly(t, home, env)
	waitUntil(t, "the refusal in gateway status", func() bool {
		out, _, _ := hermes(t, env, "", "--home", home, "gateway", "status")
		return strings.Contains(out, "refused hermes@localhost's password")
	})
	g.kill()
	if strings.Contains(g.stderr.String(), "not-the-password") {
		t.Fatal("the gateway logged the password")
	}
	if n := srv.AuthFailures(); n != 1 {
		t.Fatalf("the server refused %d logins, want 1 (no retry)", n)
	}
}

// startGatewayOnly runs the gateway without waiting for its platforms.
func startGatewayOnly(t *testing.T, home string, env []string) *gatewayProc {
	t.Helper()
	cmd := exec.Command(bin, "--home", home, "--log-level", "info", "gateway", "run", "--model", "gpt-4o-mini")
	cmd.Env = env
	p := &gatewayProc{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.kill)
	return p
}
