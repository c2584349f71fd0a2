package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// rigSessions is a SessionControl on the rig's store, set once the rig
// is up: sessions of source api, titles appended as the session's actor
// would record them, deletions of the stream.
type rigSessions struct{ store events.Store }

func (x *rigSessions) Create(ctx context.Context, id, model string) error {
	return session.Create(ctx, x.store, id, session.Start{Source: apiserver.Platform, Model: "gpt-4o-mini", System: "You are Hermes."})
}

func (x *rigSessions) Retitle(ctx context.Context, id, title string) error {
	env, err := schema.NewEnvelope(schema.Meta{SessionID: id}, schema.SessionTitled{Title: title})
	if err != nil {
		return err
	}
	_, err = x.store.Append(ctx, events.SessionStream(id), events.Any, env)
	return err
}

func (x *rigSessions) Delete(ctx context.Context, id string) error {
	return x.store.DeleteStream(ctx, events.SessionStream(id), events.Any)
}

type rigChats struct{ x *rigSessions }

func (c rigChats) ChatEvents(ctx context.Context, chat string) ([]events.Recorded, error) {
	return apiserver.StoreChats{Store: c.x.store}.ChatEvents(ctx, chat)
}

func newRunsRig(t *testing.T, script []llmtest.Reply) *rig {
	ctl := &rigSessions{}
	r := newRig(t, script, func(o *apiserver.Options) { o.Sessions, o.Chats = ctl, rigChats{ctl} })
	ctl.store = r.store
	return r
}

func (r *rig) runStatus(t *testing.T, id string) map[string]any {
	t.Helper()
	resp, b := r.do(t, http.MethodGet, "/v1/runs/"+id, "", nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET run %s: %d %s", id, resp.StatusCode, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// sseData reads an SSE body to its end: the data lines, decoded.
func sseData(t *testing.T, resp *http.Response) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("not JSON: %s", d)
			}
			out = append(out, m)
		}
	}
	return out
}

// TestRunWaitsForItsApproval: a run whose command needs approval says so
// in its status and its events, takes the choice at …/approval, and ends
// with the answer.
func TestRunWaitsForItsApproval(t *testing.T) {
	r := newRunsRig(t, []llmtest.Reply{
		{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		{Content: "Deleted the build directory."},
	})
	resp, b := r.postJSON(t, "/v1/runs", map[string]any{"input": "clean the build dir"}, nil)
	if resp.StatusCode != 202 {
		t.Fatalf("start: %d %s", resp.StatusCode, b)
	}
	var started struct {
		RunID     string `json:"run_id"`
		Status    string `json:"status"`
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(b, &started); err != nil || started.Status != "started" || started.SessionID == "" {
		t.Fatalf("start: %s", b)
	}
	feed := make(chan []map[string]any, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, r.url+"/v1/runs/"+started.RunID+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+r.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			feed <- nil
			return
		}
		defer resp.Body.Close()
		feed <- sseData(t, resp)
	}()
	waitFor(t, "the run to wait for its approval", func() bool { return r.runStatus(t, started.RunID)["status"] == "waiting_for_approval" })
	if resp, b := r.postJSON(t, "/v1/runs/"+started.RunID+"/approval", map[string]string{"choice": "maybe"}, nil); resp.StatusCode != 400 || !contains(string(b), "invalid_approval_choice") {
		t.Fatalf("a wrong choice: %d %s", resp.StatusCode, b)
	}
	if resp, b := r.do(t, http.MethodPost, "/v1/runs/"+started.RunID+"/approval", "application/json", []byte(`{"choice":`), nil); resp.StatusCode != 400 {
		t.Fatalf("malformed: %d %s", resp.StatusCode, b)
	}
	if resp, b := r.postJSON(t, "/v1/runs/"+started.RunID+"/approval", map[string]string{"choice": "approve"}, nil); resp.StatusCode != 200 || !contains(string(b), `"choice":"once"`) {
		t.Fatalf("approve: %d %s", resp.StatusCode, b)
	}
	waitFor(t, "the run to complete", func() bool { return r.runStatus(t, started.RunID)["status"] == "completed" })
	st := r.runStatus(t, started.RunID)
	if out, _ := st["output"].(string); !strings.HasSuffix(out, "Deleted the build directory.") || st["session_id"] != started.SessionID {
		t.Fatalf("status: %v", st)
	}
	var evs []map[string]any
	select {
	case evs = <-feed:
	case <-time.After(20 * time.Second):
		t.Fatal("the event feed did not end with the run")
	}
	var names []string
	for _, e := range evs {
		names = append(names, e["event"].(string))
		if e["run_id"] != started.RunID {
			t.Fatalf("event of another run: %v", e)
		}
	}
	joined := strings.Join(names, " ")
	if !contains(joined, "approval.request") || !contains(joined, "approval.responded") || !strings.HasSuffix(joined, "run.completed") {
		t.Fatalf("events: %s", joined)
	}
	if resp, b := r.postJSON(t, "/v1/runs/"+started.RunID+"/approval", map[string]string{"choice": "once"}, nil); resp.StatusCode != 409 {
		t.Fatalf("an approval with none pending: %d %s", resp.StatusCode, b)
	}
	// The approval is recorded as the user's in the run's session.
	rs, _ := r.store.ReadStream(context.Background(), events.SessionStream(started.SessionID), events.Forward, 0, 0)
	all := ""
	for _, e := range rs {
		all += string(e.Payload)
	}
	if !contains(all, `"decision":"once","by":"user"`) {
		t.Fatalf("approval not recorded:\n%s", all)
	}
}

// TestSessionChatStream: a session created through the API answers a
// streamed chat with upstream's named events, and a run continues it.
func TestSessionChatStream(t *testing.T) {
	r := newRunsRig(t, []llmtest.Reply{{Content: "Hello there."}, {Content: "Still here."}})
	resp, b := r.postJSON(t, "/api/sessions", map[string]any{"id": "api-chat-1", "title": "Greeting"}, nil)
	if resp.StatusCode != 201 || !contains(string(b), `"title":"Greeting"`) {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	if resp, b := r.postJSON(t, "/api/sessions", map[string]any{"system_prompt": "Be a pirate."}, nil); resp.StatusCode != 400 {
		t.Fatalf("a client's system prompt: %d %s", resp.StatusCode, b)
	}
	if resp, b := r.postJSON(t, "/api/sessions/nope/chat/stream", map[string]any{"message": "hi"}, nil); resp.StatusCode != 404 {
		t.Fatalf("chat in no session: %d %s", resp.StatusCode, b)
	}
	req, _ := http.NewRequest(http.MethodPost, r.url+"/api/sessions/api-chat-1/chat/stream", strings.NewReader(`{"message":"hi"}`))
	req.Header.Set("Authorization", "Bearer "+r.key)
	req.Header.Set("Content-Type", "application/json")
	sresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer sresp.Body.Close()
	var names []string
	var deltas, completed string
	sc := bufio.NewScanner(sresp.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			event = n
			names = append(names, n)
			continue
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			_ = json.Unmarshal([]byte(d), &m)
			if m["session_id"] != "api-chat-1" {
				t.Fatalf("%s names session %v", event, m["session_id"])
			}
			switch event {
			case "assistant.delta":
				deltas += m["delta"].(string)
			case "assistant.completed":
				completed = m["content"].(string)
			}
		}
	}
	if got := strings.Join(names, " "); !strings.HasPrefix(got, "run.started message.started assistant.delta") || !strings.HasSuffix(got, "assistant.completed run.completed done") {
		t.Fatalf("events: %s", got)
	}
	if deltas != "Hello there." || completed != "Hello there." {
		t.Fatalf("deltas %q, completed %q", deltas, completed)
	}
	// A run continues the same session; its status names it.
	resp, b = r.postJSON(t, "/v1/runs", map[string]any{"input": "still there?", "session_id": "api-chat-1"}, nil)
	if resp.StatusCode != 202 {
		t.Fatalf("run: %d %s", resp.StatusCode, b)
	}
	var run struct {
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal(b, &run)
	waitFor(t, "the run", func() bool { return r.runStatus(t, run.RunID)["status"] == "completed" })
	if st := r.runStatus(t, run.RunID); st["output"] != "Still here." || st["session_id"] != "api-chat-1" {
		t.Fatalf("run: %v", st)
	}
	if resp, b := r.postJSON(t, "/v1/runs", map[string]any{"input": "x", "session_id": "api-chat-1", "instructions": "be brief"}, nil); resp.StatusCode != 400 {
		t.Fatalf("instructions on a session: %d %s", resp.StatusCode, b)
	}
	if resp, b := r.postJSON(t, "/v1/runs", map[string]any{"input": "x", "session_id": "no-such-session"}, nil); resp.StatusCode != 404 {
		t.Fatalf("a run in no session: %d %s", resp.StatusCode, b)
	}
	// Forged or unknown run ids are not found.
	for _, id := range []string{"run_123", "run_" + strings.Repeat("a", 24) + "bm9wZQpub3Bl", "resp_x"} {
		if resp, b := r.do(t, http.MethodGet, "/v1/runs/"+id, "", nil, nil); resp.StatusCode != 404 {
			t.Fatalf("run %s: %d %s", id, resp.StatusCode, b)
		}
	}
}

// TestDeleteRefusedWhileARunRuns: a session is not erased under its
// running turn, nor by a prefix of its id; the run, stopped, is
// cancelled, and the session can go then.
func TestDeleteRefusedWhileARunRuns(t *testing.T) {
	r := newRunsRig(t, []llmtest.Reply{{ToolCalls: []llmtest.ToolCall{{ID: "s1", Name: "slow", Args: `{}`}}}})
	if resp, b := r.postJSON(t, "/api/sessions", map[string]any{"id": "busy-session"}, nil); resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	resp, b := r.postJSON(t, "/v1/runs", map[string]any{"input": "wait a while", "session_id": "busy-session"}, nil)
	if resp.StatusCode != 202 {
		t.Fatalf("run: %d %s", resp.StatusCode, b)
	}
	var run struct {
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal(b, &run)
	select {
	case <-r.slow.started:
	case <-time.After(20 * time.Second):
		t.Fatal("the slow tool did not start")
	}
	if resp, b := r.do(t, http.MethodDelete, "/api/sessions/busy-session", "", nil, nil); resp.StatusCode != 409 || !contains(string(b), "session_busy") {
		t.Fatalf("delete while running: %d %s", resp.StatusCode, b)
	}
	if resp, b := r.do(t, http.MethodDelete, "/api/sessions/busy-sess", "", nil, nil); resp.StatusCode != 404 {
		t.Fatalf("delete by a prefix: %d %s", resp.StatusCode, b)
	}
	if resp, b := r.postJSON(t, "/v1/runs/"+run.RunID+"/stop", nil, nil); resp.StatusCode != 200 || !contains(string(b), `"stopping"`) {
		t.Fatalf("stop: %d %s", resp.StatusCode, b)
	}
	waitFor(t, "the run to be cancelled", func() bool { return r.runStatus(t, run.RunID)["status"] == "cancelled" })
	if resp, b := r.do(t, http.MethodDelete, "/api/sessions/busy-session", "", nil, nil); resp.StatusCode != 200 {
		t.Fatalf("delete after the stop: %d %s", resp.StatusCode, b)
	}
	if resp, _ := r.do(t, http.MethodGet, "/v1/runs/"+run.RunID, "", nil, nil); resp.StatusCode != 404 {
		t.Fatalf("a run of a deleted session: %d", resp.StatusCode)
	}
}

// TestSessionsPaged: limit and offset page through the sessions, newest
// first, and has_more says whether a next page exists.
func TestSessionsPaged(t *testing.T) {
	r := newRunsRig(t, nil)
	for _, id := range []string{"page-a", "page-b", "page-c"} {
		if resp, b := r.postJSON(t, "/api/sessions", map[string]any{"id": id}, nil); resp.StatusCode != 201 {
			t.Fatalf("create %s: %d %s", id, resp.StatusCode, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	page := func(q string) (ids []string, more bool) {
		t.Helper()
		resp, b := r.do(t, http.MethodGet, "/api/sessions?"+q, "", nil, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", q, resp.StatusCode, b)
		}
		var l struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
			HasMore bool `json:"has_more"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		for _, s := range l.Data {
			ids = append(ids, s.ID)
		}
		return ids, l.HasMore
	}
	if ids, more := page("limit=2"); len(ids) != 2 || !more {
		t.Fatalf("first page: %v %v", ids, more)
	}
	first, _ := page("limit=2")
	second, more := page("limit=2&offset=2")
	if len(second) != 1 || more || second[0] == first[0] || second[0] == first[1] {
		t.Fatalf("pages %v then %v (more %v)", first, second, more)
	}
	if resp, _ := r.do(t, http.MethodGet, "/api/sessions?offset=-1", "", nil, nil); resp.StatusCode != 400 {
		t.Fatalf("a negative offset: %d", resp.StatusCode)
	}
	// /v1/health needs no key, as /health.
	if resp, b := r.do(t, http.MethodGet, "/v1/health", "", nil, map[string]string{"Authorization": ""}); resp.StatusCode != 200 || !contains(string(b), `"ok"`) {
		t.Fatalf("/v1/health: %d %s", resp.StatusCode, b)
	}
}
