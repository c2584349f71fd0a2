package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
)

// browserPeers finds Chromium and playwright-core: skipped without them
// outside CI, a failure in CI (.ci/run installs both).
func browserPeers(t *testing.T) (chromium, modules, node string) {
	t.Helper()
	need := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	chromium, modules = os.Getenv("HERMES_CHROMIUM"), os.Getenv("HERMES_NODE_MODULES")
	if chromium == "" || modules == "" {
		need("HERMES_CHROMIUM and HERMES_NODE_MODULES are needed: apt-get install chromium, npm ci --prefix .ci/node, and set them to /usr/bin/chromium and .ci/node/node_modules (.ci/run does)")
	}
	if _, err := os.Stat(chromium); err != nil {
		need("HERMES_CHROMIUM=%s: %v", chromium, err)
	}
	if _, err := os.Stat(filepath.Join(modules, "playwright-core", "package.json")); err != nil {
		need("HERMES_NODE_MODULES=%s has no playwright-core: %v", modules, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		need("node is not on PATH")
	}
	return chromium, modules, node
}

// TestBrowserJourney drives the dashboard in a real Chromium: log in, the
// list, a session whose turn ran three tools in parallel (its timeline
// bars on the shared time axis), fork at a tool call, the fork appearing
// live in another tab, lineage, a search narrowed by a facet click, the
// costs charts, a new chat started with the button and answered live, the
// phone-width layout, and the load of a session of 5,000 events. The
// screenshots of each page land in a directory the log names
// (HERMES_DASHBOARD_SHOTS to choose it).
func TestBrowserJourney(t *testing.T) {
	chromium, modules, node := browserPeers(t)
	r := newRig(t, append(threeTools(answer), llmtest.Reply{Content: "A new chat, answered."})...)
	sid := r.chat(t, "", hostile)
	big := seedBig(t, r.store, 5000)
	evs, err := r.store.ReadStream(context.Background(), events.SessionStream(big), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("HERMES_DASHBOARD_SHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/browser.mjs")
	cmd.Env = append(os.Environ(), "HERMES_NODE_MODULES="+modules, "HERMES_CHROMIUM="+chromium, "DASH_URL="+r.url,
		"DASH_KEY="+testKey, "DASH_SESSION="+sid, "DASH_BIG="+big, "SHOTS="+shots)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("browser journey: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var got struct {
		Forked      string
		ForkAt      uint64 `json:"forkAt"`
		Screenshots []string
		Big         struct {
			TTFB, Response, DOM, Load float64
			Bytes, Decoded            int64
		}
		BigBars int    `json:"bigBars"`
		NewChat string `json:"newChat"`
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("browser output: %v\n%s", err, stdout.String())
	}
	// The fork the browser made is a real session holding the parent's
	// events up to the bar it chose.
	s, ok, err := r.read.Get(context.Background(), got.Forked)
	if err != nil || !ok || s.Parent != sid || s.Reason != "fork" {
		t.Fatalf("forked session %q: %+v %v %v", got.Forked, s, ok, err)
	}
	// The chat the browser started is a new session of the API server's,
	// holding the question and the answer.
	if s, ok, err := r.read.Get(context.Background(), got.NewChat); err != nil || !ok || s.Source != "api" || s.Messages < 2 || got.NewChat == sid {
		t.Fatalf("the new chat's session %q: %+v %v %v", got.NewChat, s, ok, err)
	}
	if got.BigBars < 1000 {
		t.Fatalf("the 5,000-event session drew %d bars", got.BigBars)
	}
	t.Logf("screenshots (%d) in %s", len(got.Screenshots), shots)
	t.Logf("session of %d events: first byte %.0f ms, response %.0f ms, DOM ready %.0f ms, load %.0f ms; HTML %d bytes (%.1f bytes/event), %d bytes over the wire (gzip), %d timeline bars",
		len(evs), got.Big.TTFB, got.Big.Response, got.Big.DOM, got.Big.Load, got.Big.Decoded, float64(got.Big.Decoded)/float64(len(evs)), got.Big.Bytes, got.BigBars)
}
