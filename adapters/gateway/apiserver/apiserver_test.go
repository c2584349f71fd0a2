package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/actors/toolrun"
	"github.com/hermes-go/hermes/adapters/bus"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/events/embedded"
)

const testKey = "sk-hermes-test-key"

// rig is the whole path a request takes: the API server, served on the
// real bus by gw.Served, the real gateway router and session manager, and
// the scripted model server standing in for the upstream LLM.
type rig struct {
	store *embedded.Store
	llm   *llmtest.Server
	api   *apiserver.Server
	url   string
	key   string
	tools *weatherTool
	slow  *slowTool
	blobs *blobs.Store
	stop  func()
}

// weatherTool is a tool that runs on our side: the client never sees it.
type weatherTool struct{ calls atomic.Int64 }

func (*weatherTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "weather", Description: "current weather in a city",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}
}
func (*weatherTool) Flags() tool.Flags { return tool.Flags{ReadOnly: true} }
func (w *weatherTool) Run(_ context.Context, raw json.RawMessage) (string, error) {
	w.calls.Add(1)
	var v struct{ City string }
	_ = json.Unmarshal(raw, &v)
	return "12°C and sunny in " + v.City, nil
}

// slowTool waits until its context ends (a turn stopped) or 20 s.
type slowTool struct{ started chan struct{} }

func (*slowTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "slow", Description: "waits", Parameters: map[string]any{"type": "object"}}
}
func (*slowTool) Flags() tool.Flags { return tool.Flags{} }
func (s *slowTool) Run(ctx context.Context, _ json.RawMessage) (string, error) {
	select {
	case s.started <- struct{}{}:
	default:
	}
	select {
	case <-time.After(20 * time.Second):
		return "done", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

type rigOpt func(*apiserver.Options)

func newRig(t testing.TB, script []llmtest.Reply, opts ...rigOpt) *rig {
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
	cfg := gateway.Config{Model: "gpt-4o-mini", NewSession: func(ctx context.Context, platform string) (string, error) {
		id := uuid.NewString()
		return id, session.Create(ctx, store, id, session.Start{Source: platform, Model: "gpt-4o-mini", System: "You are Hermes."})
	}, Images: blobImages}
	bs := blobs.Open(dir)
	router := gateway.New(store, b.Transport, sys, cfg, log)
	weather := &weatherTool{}
	slow := &slowTool{started: make(chan struct{}, 1)}
	deps := session.Deps{Store: store, Log: log, Provider: openai.NewChat(openai.Options{BaseURL: llm.URL + "/v1"}),
		Tools: tool.NewTools(weather, slow, gatewaytest.ApprovalTool(&terminal.Approver{Timeout: 10 * time.Second})),
		Exec:  toolrun.NewPool(sys, 8, 30*time.Second), Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 10, Asker: router.Asker(), Blobs: bs}
	mgr := session.NewManager(sys, deps)
	router.Sessions = mgr
	arch := gatewaytest.OpenProjections(t, store, dir)
	o := apiserver.Options{Host: "127.0.0.1", Port: 0, Key: testKey, Model: "gpt-4o-mini", Archive: arch, Search: arch, Stopper: mgr, Log: log,
		Responses: apiserver.StoreResponses{Store: store}}
	for _, f := range opts {
		f(&o)
	}
	if _, ok := o.Images.(wantImages); ok {
		o.Images = bs
	}
	api, err := apiserver.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = router.Run(ctx) }()
	<-router.Ready()
	served := gw.NewServed(api, b, log)
	go func() { defer wg.Done(); _ = served.Serve(ctx) }()
	select {
	case <-api.Listening():
	case <-time.After(10 * time.Second):
		t.Fatal("the API server did not listen")
	}
	r := &rig{store: store, llm: llm, api: api, url: "http://" + api.Addr(), key: o.Key, tools: weather, slow: slow, blobs: bs}
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			mgr.Shutdown()
			sys.Shutdown()
			b.Close()
			llm.Close()
			store.Close()
		})
	}
	t.Cleanup(r.stop)
	return r
}

// do sends a raw request; body may be nil.
func (r *rig) do(t testing.TB, method, path, contentType string, body []byte, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, r.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if r.key != "" {
		req.Header.Set("Authorization", "Bearer "+r.key)
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	// Generous: a 28 MB body decoded under -race on a loaded machine.
	c := &http.Client{Timeout: 2 * time.Minute}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func (r *rig) postJSON(t testing.TB, path string, v any, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return r.do(t, http.MethodPost, path, "application/json", b, header)
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

func countTypes(t testing.TB, store events.Store, stream, typ string) int {
	t.Helper()
	var rs []events.Recorded
	var err error
	if stream == "" {
		rs, err = store.ReadAll(context.Background(), 0, 0)
	} else {
		rs, err = store.ReadStream(context.Background(), stream, events.Forward, 0, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rs {
		if r.Type == typ {
			n++
		}
	}
	return n
}

// lastUserText is the last user message of a model request.
func lastUserText(t testing.TB, req llmtest.Request) string {
	t.Helper()
	msgs, _ := req.Body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] == "user" {
			s, _ := m["content"].(string)
			return s
		}
	}
	t.Fatalf("no user message in %s", req.Raw)
	return ""
}

func toolNames(req llmtest.Request) []string {
	var out []string
	tools, _ := req.Body["tools"].([]any)
	for _, x := range tools {
		m, _ := x.(map[string]any)
		f, _ := m["function"].(map[string]any)
		if n, ok := f["name"].(string); ok {
			out = append(out, n)
		}
	}
	return out
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
