package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/actors/toolrun"
	"github.com/hermes-go/hermes/adapters/bus"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/gateway/apiserver/dashboard"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

const testKey = "sk-dashboard-test-key"

// probeTool is a read-only tool that takes a little while, so that the
// three calls of one answer overlap and run in parallel lanes.
type probeTool struct{}

func (probeTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "probe", Description: "probe a city's weather station",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}
}
func (probeTool) Flags() tool.Flags { return tool.Flags{ReadOnly: true} }
func (probeTool) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	var v struct{ City string }
	_ = json.Unmarshal(raw, &v)
	select {
	case <-time.After(60 * time.Millisecond):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return "station " + v.City + ": 12°C", nil
}

// rig is the whole path: the API server with the dashboard mounted, served
// on the real bus by gw.Served, the real router and session manager, and
// the scripted model server standing in for the upstream LLM.
type rig struct {
	store *embedded.Store
	llm   *llmtest.Server
	api   *apiserver.Server
	read  *gatewaytest.Projections
	jobs  *cron.Jobs
	url   string
}

func newRig(t testing.TB, script ...llmtest.Reply) *rig {
	t.Helper()
	return newRigWith(t, lazySessions{}, script...)
}

// lazySessions makes the rig's gateway create a new chat's session only
// when its first turn runs (as `hermes gateway run` does), so that the
// session is named before it is written: Delay after the chat was bound
// to it, or never, failing with Err. The zero value creates sessions when
// they are bound.
type lazySessions struct {
	Delay time.Duration
	Err   error
}

// newRigWith is newRig whose gateway creates sessions as lazy says.
func newRigWith(t testing.TB, lazy lazySessions, script ...llmtest.Reply) *rig {
	t.Helper()
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	llm := llmtest.New(script...)
	log := zerolog.Nop()
	sys := actors.NewSystem(log)
	b, err := bus.Open("", log)
	if err != nil {
		t.Fatal(err)
	}
	cfg := gateway.Config{Model: "gpt-4o", NewSession: func(ctx context.Context, platform string) (string, error) {
		id := uuid.NewString()
		return id, session.Create(ctx, store, id, session.Start{Source: platform, Model: "gpt-4o", System: "You are Hermes."})
	}}
	if lazy != (lazySessions{}) {
		cfg.CreateSession = func(ctx context.Context, platform, id string) error {
			select {
			case <-time.After(lazy.Delay):
			case <-ctx.Done():
				return ctx.Err()
			}
			if lazy.Err != nil {
				return lazy.Err
			}
			return session.Create(ctx, store, id, session.Start{Source: platform, Model: "gpt-4o", System: "You are Hermes."})
		}
	}
	router := gateway.New(store, b.Transport, sys, cfg, log)
	deps := session.Deps{Store: store, Log: log, Provider: openai.NewChat(openai.Options{BaseURL: llm.URL + "/v1"}),
		Tools: tool.NewTools(probeTool{}), Exec: toolrun.NewPool(sys, 8, 30*time.Second),
		Cfg: agent.Config{Model: "gpt-4o"}, MaxTurns: 10, Asker: router.Asker()}
	mgr := session.NewManager(sys, deps)
	router.Sessions = mgr
	read := gatewaytest.OpenProjections(t, store, dir)
	jobs := cron.NewJobs(store, time.Now)
	var served *gw.Served
	var servedMu sync.Mutex
	api, err := apiserver.New(apiserver.Options{Host: "127.0.0.1", Port: 0, Key: testKey, Model: "gpt-4o", Stopper: mgr, Log: log,
		Dashboard: &dashboard.Options{Store: store, Read: read, Cron: jobs, Caps: dashboard.Caps{PerDay: 0.05, PerSession: 0.02}, Log: log,
			Platforms: func() []gw.Status {
				servedMu.Lock()
				defer servedMu.Unlock()
				if served == nil {
					return nil
				}
				return []gw.Status{served.Status()}
			}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = router.Run(ctx) }()
	<-router.Ready()
	servedMu.Lock()
	served = gw.NewServed(api, b, log)
	servedMu.Unlock()
	go func() { defer wg.Done(); _ = served.Serve(ctx) }()
	select {
	case <-api.Listening():
	case <-time.After(10 * time.Second):
		t.Fatal("the API server did not listen")
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		mgr.Shutdown()
		sys.Shutdown()
		b.Close()
		llm.Close()
		store.Close()
	})
	return &rig{store: store, llm: llm, api: api, read: read, jobs: jobs, url: "http://" + api.Addr()}
}

// threeTools is a turn whose first answer asks for three tools at once.
func threeTools(answer string) []llmtest.Reply {
	return []llmtest.Reply{
		{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "probe", Args: `{"city":"Oslo"}`}, {ID: "c2", Name: "probe", Args: `{"city":"Lima"}`},
			{ID: "c3", Name: "probe", Args: `{"city":"Pune"}`}}, Prompt: 1200, Completion: 40, CacheRead: 800},
		{Content: answer, Prompt: 1400, Completion: 90, CacheRead: 1000},
	}
}

// chat runs one turn through the API server and returns its session.
func (r *rig) chat(t testing.TB, session, text string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "hermes-agent", "messages": []map[string]string{{"role": "user", "content": text}}})
	req, _ := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	if session != "" {
		req.Header.Set(apiserver.SessionHeader, session)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d %s", resp.StatusCode, b)
	}
	return resp.Header.Get(apiserver.SessionHeader)
}

// browser is a cookie-holding HTTP client logged in through the form.
type browser struct {
	c    *http.Client
	base string
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func login(t testing.TB, base, key string) (*browser, *http.Response, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	page := get(t, c, base+"/dashboard/login", "")
	m := csrfRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF field on the login form:\n%s", page)
	}
	resp, err := c.PostForm(base+"/dashboard/login", url.Values{"csrf": {m[1]}, "key": {key}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &browser{c: c, base: base}, resp, string(b)
}

func get(t testing.TB, c *http.Client, u, bearer string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return string(b)
}

func (b *browser) csrf(t testing.TB) string {
	t.Helper()
	page := get(t, b.c, b.base+"/dashboard/", "")
	m := csrfRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token on the sessions page")
	}
	return m[1]
}

func waitFor(t testing.TB, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if f() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("waited 20 s for %s", what)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// seedBig writes a session of about n events straight to the store: turns
// of a user message, an answer asking for three tools, their starts and
// results, the final answer and the turn's end (10 events a turn).
func seedBig(t testing.TB, store events.Store, n int) string {
	t.Helper()
	ctx := context.Background()
	id := uuid.NewString()
	if err := session.Create(ctx, store, id, session.Start{Source: "cli", Model: "gpt-4o", System: "You are Hermes."}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	var batch []schema.Envelope
	add := func(turn string, p schema.Payload) {
		at = at.Add(40 * time.Millisecond)
		batch = append(batch, schema.MustEnvelope(schema.Meta{SessionID: id, TurnID: turn, Time: at}, p))
	}
	for i := 0; len(batch) < n-2; i++ {
		turn := uuid.NewString()
		add(turn, schema.UserMessageAdded{Content: fmt.Sprintf("Question %d: how are the stations doing? Use `probe`.", i)})
		var calls []schema.ToolCall
		for k := range 3 {
			calls = append(calls, schema.ToolCall{ID: fmt.Sprintf("c%d-%d", i, k), Type: "function",
				Function: schema.FunctionCall{Name: "probe", Arguments: fmt.Sprintf(`{"city":"city-%d"}`, k)}})
		}
		add(turn, schema.AssistantMessageAdded{ToolCalls: calls, Model: "gpt-4o", Provider: "openai",
			Usage: schema.Usage{PromptTokens: 1200, CompletionTokens: 40, CacheReadTokens: 800}, CostUSD: 0.002})
		for _, c := range calls {
			add(turn, schema.ToolCallStarted{CallID: c.ID, Name: "probe", Arguments: c.Function.Arguments})
		}
		for _, c := range calls {
			add(turn, schema.ToolResultAdded{CallID: c.ID, Name: "probe", Content: "station reports 12°C and light wind", DurationMS: 100})
		}
		add(turn, schema.AssistantMessageAdded{Content: fmt.Sprintf("Answer %d: all **three** stations report 12°C.\n\n```go\nfmt.Println(%d)\n```", i, i),
			Model: "gpt-4o", Provider: "openai", Usage: schema.Usage{PromptTokens: 1400, CompletionTokens: 90, CacheReadTokens: 1000}, CostUSD: 0.003})
		add(turn, schema.TurnCompleted{Iterations: 2})
	}
	for len(batch) > 0 {
		k := min(500, len(batch))
		if _, err := store.Append(ctx, events.SessionStream(id), events.Any, batch[:k]...); err != nil {
			t.Fatal(err)
		}
		batch = batch[k:]
	}
	return id
}
