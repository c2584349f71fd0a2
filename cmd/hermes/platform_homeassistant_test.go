package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/gateway/homeassistant/hatest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// `hermes gateway run` with the Python agent's keys — HASS_URL and
// HASS_TOKEN in the environment, platforms.homeassistant.extra's filters
// in config.yaml — subscribes to a real Home Assistant: a watched entity's
// change is answered as a persistent notification, an unwatched one is
// not; neither the gateway's log nor config show print the token.
func TestHomeAssistantGatewayAnswers(t *testing.T) {
	srv := hatest.Start(t)
	llm := llmtest.New(llmtest.Reply{Content: "Someone is at the porch."})
	defer llm.Close()
	home := t.TempDir()
	cfg := "platforms:\n  homeassistant:\n    extra:\n      watch_entities: [" + hatest.PorchLight + "]\n      cooldown_seconds: 0\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := chatEnv(llm, "HASS_URL="+srv.URL, "HASS_TOKEN="+srv.Token)
	g := startGateway(t, home, env)
	if err := srv.Toggle(hatest.Door); err != nil { // not watched
		t.Fatal(err)
	}
	if err := srv.Toggle(hatest.PorchLight); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the answer as a notification", func() bool {
		ns, err := srv.Notifications()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range ns {
			if n.Title == "Hermes Agent" && n.Message == "Someone is at the porch." {
				return true
			}
		}
		return false
	})
	if reqs := llm.Requests(); len(reqs) != 1 || !strings.Contains(string(reqs[0].Raw), "input_boolean.porch_light") {
		t.Fatalf("%d model calls: %v", len(reqs), reqs)
	}
	out, _, _ := hermes(t, env, "", "--home", home, "config", "show")
	if strings.Contains(out, srv.Token) || !strings.Contains(out, "platforms.homeassistant") {
		t.Fatalf("config show:\n%s", out)
	}
	g.kill()
	if strings.Contains(g.stderr.String(), srv.Token) {
		t.Fatal("the gateway logged the token")
	}
}
