package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/gateway/irc/irctest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// `hermes gateway run` with platforms.irc in config.yaml and IRC_* in the
// environment joins a real ngIRCd (behind a server password), answers an
// allowed nick, gives a stranger a pairing code, and `gateway status`
// shows the platform connected with its counts. The password is never
// logged.
func TestIRCGateway(t *testing.T) {
	const password = "irc-s3cret-pw"
	srv := irctest.StartWith(t, "\tPassword = "+password)
	llm := llmtest.New(llmtest.Reply{Content: "hello from hermes"})
	defer llm.Close()
	home := t.TempDir()
	cfg := fmt.Sprintf("platforms:\n  irc:\n    server: 127.0.0.1\n    port: %d\n    nick: hermesbot\n    channels: ['#hermes']\n", srv.Port)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := chatEnv(llm, "IRC_ALLOWED_USERS=alice", "IRC_PASSWORD="+password)
	g := startGateway(t, home, env)

	alice := irctest.DialPassword(t, srv.Addr(), password, "alice", "#hermes")
	mallory := irctest.DialPassword(t, srv.Addr(), password, "mallory")
	if err := alice.Say("hermesbot", "hi there"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the answer", func() bool { return len(alice.Messages("hermesbot", "alice")) == 1 })
	if got := alice.Messages("hermesbot", "alice")[0].Text; got != "hello from hermes" {
		t.Fatalf("alice got %q", got)
	}
	if err := mallory.Say("hermesbot", "let me in"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the pairing code", func() bool {
		for _, l := range mallory.Messages("hermesbot", "mallory") {
			if strings.Contains(l.Text, "hermes pairing approve ") {
				return true
			}
		}
		return false
	})
	var last string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last status: %s", last)
		}
	})
	waitUntil(t, "the status to count both messages", func() bool {
		out, _, _ := hermes(t, env, "", "--home", home, "gateway", "status", "--json")
		last = out
		var st struct {
			Running bool
			Status  gatewayStatus
		}
		if json.Unmarshal([]byte(out), &st) != nil || len(st.Status.Platforms) != 1 {
			return false
		}
		p := st.Status.Platforms[0]
		return st.Running && p.Platform == "irc" && p.Connected && p.In == 2 && p.Refused == 1 && p.Out == 1 && p.Delivered == 2 // the answer and the pairing notice
	})
	out, errOut, code := hermes(t, env, "", "--home", home, "gateway", "status")
	if code != 0 || !strings.Contains(out, "irc") || !strings.Contains(out, "yes") {
		t.Fatalf("gateway status: %d\n%s%s", code, out, errOut)
	}
	g.kill()
	if strings.Contains(g.stderr.String(), password) {
		t.Fatal("the gateway logged the IRC password")
	}
}

// IRC settings that cannot work stop the gateway with the key named.
func TestIRCGatewayConfigErrors(t *testing.T) {
	llm := llmtest.New()
	defer llm.Close()
	for _, c := range []struct{ name, yaml, env, want string }{
		{"misspelt key", "platforms:\n  irc:\n    server: irc.example.org\n    nik: bot\n", "", "did you mean platforms.irc.nick?"},
		{"bad port", "platforms:\n  irc:\n    server: irc.example.org\n", "IRC_PORT=70000", "IRC_PORT"},
		{"bad channel", "platforms:\n  irc:\n    server: irc.example.org\n    channels: [hermes]\n", "", "is not a channel name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			env := chatEnv(llm)
			if c.env != "" {
				env = append(env, c.env)
			}
			_, errOut, code := hermes(t, env, "", "--home", home, "gateway", "run", "--model", "gpt-4o-mini")
			if code == 0 || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, stderr lacks %q:\n%s", code, c.want, errOut)
			}
		})
	}
}
