package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// BenchmarkScreenBesideHermesPython measures, through the same tmux and
// the same scripted model, what a person waits for in the interactive chat
// of this build and of the Python Hermes Agent (HERMES_AGENT_VENV: .ci/run
// installs it): from starting the command to a prompt that takes input, and
// from Enter to the answer on screen. Each system gets its own home, warmed
// by one run first.
//
//	HERMES_AGENT_VENV=$PWD/.ci/hermes-venv go test -run '^$' -bench ScreenBesideHermesPython -benchtime 5x ./cmd/hermes/
func BenchmarkScreenBesideHermesPython(b *testing.B) {
	venv := os.Getenv("HERMES_AGENT_VENV")
	if venv == "" {
		b.Skip("HERMES_AGENT_VENV is not set: the Python Hermes Agent is the baseline (.ci/run installs it into .ci/hermes-venv)")
	}
	srv := llmtest.New()
	srv.SetDefault(llmtest.Reply{Content: "pong"})
	defer srv.Close()
	wd := b.TempDir()
	env := screenEnv(srv)
	c := newControl(b, env, wd)

	goHome := b.TempDir()
	ours := fmt.Sprintf("env -i %s %s --home %s chat --model m", strings.Join(quoteAll(env), " "), bin, goHome)
	pyHome := b.TempDir()
	if err := os.MkdirAll(filepath.Join(pyHome, ".hermes"), 0o755); err != nil {
		b.Fatal(err)
	}
	cfg := fmt.Sprintf("model:\n  default: m\n  provider: custom\n  base_url: %s/v1\n", srv.URL)
	if err := os.WriteFile(filepath.Join(pyHome, ".hermes", "config.yaml"), []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	pyEnv := append([]string{"HOME=" + pyHome}, env...)
	for i, e := range pyEnv[1:] {
		if strings.HasPrefix(e, "HOME=") {
			pyEnv[i+1] = "HOME=" + pyHome
		}
	}
	python := fmt.Sprintf("env -i %s %s", strings.Join(quoteAll(pyEnv[1:]), " "), filepath.Join(venv, "bin", "hermes"))

	systems := []struct {
		name, command, ready string
	}{
		{"go", ours, "Hermes · m · session"},
		// The Python agent's prompt_toolkit screen draws its input line,
		// ❯, once it takes input.
		{"python", python, "❯"},
	}
	for _, s := range systems {
		// Warm: the home's files exist, caches are filled.
		pane := c.window(s.command)
		c.waitOutput(pane, s.ready)
		c.kill(pane)
	}
	for _, s := range systems {
		b.Run(s.name+"-start-to-prompt", func(b *testing.B) {
			var ds []time.Duration
			for range b.N {
				c.drain()
				start := time.Now()
				pane := c.window(s.command)
				ds = append(ds, c.waitOutput(pane, s.ready).Sub(start))
				c.kill(pane)
			}
			percentiles(b, ds)
		})
		b.Run(s.name+"-enter-to-answer", func(b *testing.B) {
			pane := c.window(s.command)
			c.waitOutput(pane, s.ready)
			time.Sleep(300 * time.Millisecond)
			var ds []time.Duration
			for range b.N {
				c.send("send-keys -t " + pane + " -l ping")
				time.Sleep(100 * time.Millisecond)
				c.drain()
				start := time.Now()
				c.send("send-keys -t " + pane + " Enter")
				ds = append(ds, c.waitOutput(pane, "pong").Sub(start))
				time.Sleep(300 * time.Millisecond)
			}
			percentiles(b, ds)
			c.kill(pane)
		})
	}
}
