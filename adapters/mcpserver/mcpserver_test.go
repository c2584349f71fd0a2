package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/search"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// memHermes is a Hermes of two sessions.
type memHermes struct {
	sent []string
}

var summaries = []sessions.Summary{
	{ID: "0b7e5c1a-6d7b-4f8e-9a43-3c2d1e0f9a8b", Title: "Deploy notes", Source: "cli", Model: "m", Messages: 2, CostUSD: 0.01},
	{ID: "5d41402a-bc4b-4a76-b971-9d911017c592", Title: "", Source: "telegram", Model: "m", Messages: 0},
}

func (m *memHermes) Sessions(_ context.Context, limit int) ([]sessions.Summary, error) {
	return summaries[:min(limit, len(summaries))], nil
}

func (m *memHermes) Session(_ context.Context, id string) (sessions.Summary, []schema.Message, error) {
	if len(id) >= 4 && strings.HasPrefix(summaries[0].ID, id) {
		return summaries[0], []schema.Message{{Role: "user", Content: "how do we deploy?"},
			{Role: "assistant", ToolCalls: []schema.ToolCall{{ID: "c1", Type: "function", Function: schema.FunctionCall{Name: "read_file", Arguments: `{"path":"DEPLOY.md"}`}}}},
			{Role: "tool", ToolCallID: "c1", Name: "read_file", Content: "make deploy"},
			{Role: "assistant", Content: "Run make deploy."}}, nil
	}
	return sessions.Summary{}, nil, errors.New("no session " + id)
}

func (m *memHermes) Search(_ context.Context, q search.Query) (search.Results, error) {
	return search.Results{Total: 1, Sessions: 1, Hits: []search.Hit{{Session: summaries[0].ID, Snippet: "run make " + search.HighlightOn + "deploy" + search.HighlightOff}}}, nil
}

func (m *memHermes) Send(_ context.Context, id, text string) (Reply, error) {
	m.sent = append(m.sent, id+"|"+text)
	if id == "" {
		id = "new-session"
	}
	return Reply{SessionID: id, Answer: "done: " + text}, nil
}

func (m *memHermes) Costs(_ context.Context, by, since string) ([]costs.Row, error) {
	return []costs.Row{{Key: by + since, Calls: 3, Cost: 0.5}}, nil
}

func connect(t *testing.T, h Hermes) *sdk.ClientSession {
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	srv := New(h, "test")
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, name string, args any) (map[string]any, string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text []string
	for _, c := range res.Content {
		text = append(text, c.(*sdk.TextContent).Text)
	}
	var structured map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &structured)
	}
	return structured, strings.Join(text, "\n"), res.IsError
}

func TestTools(t *testing.T) {
	h := &memHermes{}
	cs := connect(t, h)
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if strings.Join(names, " ") != "costs search send_message session_show sessions_list" {
		t.Fatalf("tools: %v", names)
	}
	if ir := cs.InitializeResult(); ir.ServerInfo.Name != "hermes" || !strings.Contains(ir.Instructions, "send_message") {
		t.Fatalf("initialize: %+v", ir)
	}
	out, text, _ := call(t, cs, "sessions_list", map[string]any{"limit": 1})
	if l := out["sessions"].([]any); len(l) != 1 || l[0].(map[string]any)["title"] != "Deploy notes" || !strings.Contains(text, "Deploy notes") {
		t.Fatalf("sessions_list: %v", out)
	}
	out, _, _ = call(t, cs, "session_show", map[string]any{"id": "0b7e"})
	if msgs := out["messages"].([]any); len(msgs) != 4 {
		t.Fatalf("session_show: %v", out)
	}
	if _, text, isErr := call(t, cs, "session_show", map[string]any{"id": "nope"}); !isErr || !strings.Contains(text, "no session nope") {
		t.Fatalf("unknown session: %q %v", text, isErr)
	}
	out, _, _ = call(t, cs, "search", map[string]any{"query": "deploy"})
	if hit := out["hits"].([]any)[0].(map[string]any); hit["snippet"] != "run make <mark>deploy</mark>" {
		t.Fatalf("search: %v", out)
	}
	if _, _, isErr := call(t, cs, "search", map[string]any{"query": " "}); !isErr {
		t.Fatal("an empty query searched")
	}
	out, text, _ = call(t, cs, "send_message", map[string]any{"text": "deploy it"})
	if out["session_id"] != "new-session" || !strings.HasPrefix(text, "done: deploy it\nsession: new-session") {
		t.Fatalf("send_message: %v %q", out, text)
	}
	call(t, cs, "send_message", map[string]any{"text": "again", "session_id": "0b7e"})
	if strings.Join(h.sent, ",") != "|deploy it,0b7e|again" {
		t.Fatalf("sent %v", h.sent)
	}
	if _, _, isErr := call(t, cs, "send_message", map[string]any{}); !isErr {
		t.Fatal("send_message without text was accepted")
	}
	out, _, _ = call(t, cs, "costs", map[string]any{"by": "model", "since": "2026-01-01"})
	if rows := out["rows"].([]any); rows[0].(map[string]any)["key"] != "model2026-01-01" {
		t.Fatalf("costs: %v", out)
	}
	if _, text, isErr := call(t, cs, "costs", map[string]any{"by": "colour"}); !isErr || !strings.Contains(text, "use session, lineage") {
		t.Fatalf("costs by colour: %q", text)
	}
}

func TestResources(t *testing.T) {
	cs := connect(t, &memHermes{})
	res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "hermes://sessions"})
	if err != nil || !strings.Contains(res.Contents[0].Text, "Deploy notes") {
		t.Fatalf("hermes://sessions: %v %v", res, err)
	}
	res, err = cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "hermes://sessions/0b7e5c1a-6d7b-4f8e-9a43-3c2d1e0f9a8b"})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"# Deploy notes", "## user\n\nhow do we deploy?", `→ read_file({"path":"DEPLOY.md"})`, "## tool (read_file)\n\nmake deploy", "Run make deploy."} {
		if !strings.Contains(res.Contents[0].Text, w) {
			t.Fatalf("transcript lacks %q:\n%s", w, res.Contents[0].Text)
		}
	}
	if _, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "hermes://sessions/nope"}); err == nil {
		t.Fatal("an unknown session was read")
	}
	var tpls []string
	for tpl, err := range cs.ResourceTemplates(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		tpls = append(tpls, tpl.URITemplate)
	}
	if strings.Join(tpls, " ") != "hermes://sessions/{id}" {
		t.Fatalf("templates %v", tpls)
	}
}

func TestHTTPNeedsTheKey(t *testing.T) {
	ts := httptest.NewServer(Handler(New(&memHermes{}, "test"), "k-0123456789abcdef"))
	t.Cleanup(ts.Close)
	for _, c := range []struct {
		key string
		ok  bool
	}{{"k-0123456789abcdef", true}, {"wrong", false}, {"", false}} {
		hc := &http.Client{Transport: bearer{c.key}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: hc}, nil)
		cancel()
		if c.ok != (err == nil) {
			t.Fatalf("key %q: %v", c.key, err)
		}
		if err == nil {
			if _, text, _ := call(t, cs, "sessions_list", map[string]any{}); !strings.Contains(text, "Deploy notes") {
				t.Fatalf("over HTTP: %s", text)
			}
			cs.Close()
		}
	}
	// No key configured: nobody gets in, not even with an empty bearer.
	open := httptest.NewServer(Handler(New(&memHermes{}, "t"), ""))
	t.Cleanup(open.Close)
	req, _ := http.NewRequest("POST", open.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer ")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: %s", resp.Status)
	}
}

type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}
