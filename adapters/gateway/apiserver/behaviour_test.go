package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	oa "github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

func TestApprovalAnsweredThroughTheAPI(t *testing.T) {
	r := newRig(t, []llmtest.Reply{
		{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		{Content: "Deleted the build directory."},
	})
	var httpResp *http.Response
	stream := r.client().Chat.Completions.NewStreaming(context.Background(), oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("clean the build dir")}}, option.WithResponseInto(&httpResp))
	sid := httpResp.Header.Get(apiserver.SessionHeader)
	if sid == "" {
		t.Fatal("no session header on the stream")
	}
	got := make(chan string, 1)
	go func() {
		var b strings.Builder
		for stream.Next() {
			if c := stream.Current(); len(c.Choices) > 0 {
				b.WriteString(c.Choices[0].Delta.Content)
			}
		}
		if err := stream.Err(); err != nil {
			b.WriteString("ERROR: " + err.Error())
		}
		got <- b.String()
	}()
	var q struct {
		Session  string   `json:"session_id"`
		Kind     string   `json:"kind"`
		Question string   `json:"question"`
		Choices  []string `json:"choices"`
	}
	waitFor(t, "the question at /v1/approvals", func() bool {
		resp, b := r.do(t, http.MethodGet, "/v1/approvals/"+sid, "", nil, nil)
		return resp.StatusCode == 200 && json.Unmarshal(b, &q) == nil
	})
	if q.Kind != "approval" || !strings.Contains(q.Question, "rm -rf build") || strings.Contains(q.Question, "/approve") || len(q.Choices) != 4 {
		t.Fatalf("question %+v", q)
	}
	// Listed too, for clients that do not know their session yet.
	if resp, b := r.do(t, http.MethodGet, "/v1/approvals", "", nil, nil); resp.StatusCode != 200 || !strings.Contains(string(b), `"session_id":"`+sid+`"`) {
		t.Fatalf("list: %d %s", resp.StatusCode, b)
	}
	// A wrong answer is refused and leaves the question waiting.
	if resp, b := r.postJSON(t, "/v1/approvals/"+sid, map[string]string{"answer": "sure"}, nil); resp.StatusCode != 400 {
		t.Fatalf("answer 'sure': %d %s", resp.StatusCode, b)
	}
	if resp, b := r.postJSON(t, "/v1/approvals/"+sid, map[string]string{"answer": "once"}, nil); resp.StatusCode != 200 {
		t.Fatalf("answer: %d %s", resp.StatusCode, b)
	}
	var text string
	select {
	case text = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the stream did not end after the approval")
	}
	if !strings.Contains(text, "[Hermes is waiting for an answer]") || !strings.Contains(text, "POST /v1/approvals/"+sid) ||
		!strings.HasSuffix(text, "Deleted the build directory.") {
		t.Fatalf("streamed text:\n%s", text)
	}
	all := ""
	rs, _ := r.store.ReadStream(context.Background(), events.SessionStream(sid), events.Forward, 0, 0)
	for _, e := range rs {
		all += string(e.Payload)
	}
	if !strings.Contains(all, `"decision":"once","by":"user"`) || !strings.Contains(all, "ran: rm -rf build") {
		t.Fatalf("approval not recorded as the user's, or the command did not run:\n%s", all)
	}
	// Nothing waits now.
	if resp, _ := r.postJSON(t, "/v1/approvals/"+sid, map[string]string{"answer": "once"}, nil); resp.StatusCode != 404 {
		t.Fatalf("answer with no question: %d", resp.StatusCode)
	}
}

func TestClientDisconnectStopsItsTurn(t *testing.T) {
	r := newRig(t, []llmtest.Reply{{ToolCalls: []llmtest.ToolCall{{ID: "s1", Name: "slow", Args: `{}`}}}})
	ctx, cancel := context.WithCancel(context.Background())
	var httpResp *http.Response
	stream := r.client().Chat.Completions.NewStreaming(ctx, oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("do something slow")}}, option.WithResponseInto(&httpResp))
	sid := httpResp.Header.Get(apiserver.SessionHeader)
	select {
	case <-r.slow.started:
	case <-time.After(20 * time.Second):
		t.Fatal("the slow tool did not start")
	}
	cancel()
	stream.Close()
	waitFor(t, "the turn interrupted", func() bool {
		return countTypes(t, r.store, events.SessionStream(sid), "TurnInterrupted") == 1
	})
	// The "Stopped." reply found nobody: recorded as not delivered, at once
	// (no retries for a client that is gone).
	waitFor(t, "the reply recorded as failed", func() bool { return countTypes(t, r.store, "", "GatewayDeliveryFailed") == 1 })
}

func TestQueuedRequestWhoseClientLeftIsStoppedWhenItBegins(t *testing.T) {
	r := newRig(t, []llmtest.Reply{{Content: "first"}})
	// A session exists; then one request keeps it busy with the slow tool,
	// and a second waits behind it.
	var first *http.Response
	if _, err := r.client().Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("hi")}}, option.WithResponseInto(&first)); err != nil {
		t.Fatal(err)
	}
	sid := first.Header.Get(apiserver.SessionHeader)
	r.llm.Add(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "s1", Name: "slow", Args: `{}`}}},
		llmtest.Reply{Content: "the queued turn ran to its end", Delay: 3 * time.Second})
	busyCtx, stopBusy := context.WithCancel(context.Background())
	busyDone := make(chan error, 1)
	go func() {
		_, err := r.client().Chat.Completions.New(busyCtx, oa.ChatCompletionNewParams{Model: apiserver.Alias,
			Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("slow one")}}, option.WithHeader(apiserver.SessionHeader, sid))
		busyDone <- err
	}()
	<-r.slow.started
	queuedCtx, leave := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer leave()
	_, err := r.client().Chat.Completions.New(queuedCtx, oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("queued one")}}, option.WithHeader(apiserver.SessionHeader, sid))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued request: %v", err)
	}
	// Its client is gone; the busy one leaves too: its turn stops, the
	// queued turn begins and is stopped at once.
	stopBusy()
	<-busyDone
	waitFor(t, "both turns interrupted", func() bool {
		return countTypes(t, r.store, events.SessionStream(sid), "TurnInterrupted") == 2
	})
	rs, _ := r.store.ReadAll(context.Background(), 0, 0)
	for _, e := range rs {
		if strings.Contains(string(e.Payload), "the queued turn ran to its end") {
			t.Fatalf("the abandoned queued turn ran to its end: %s %s", e.Type, e.Payload)
		}
	}
}

func TestTurnTimeout(t *testing.T) {
	r := newRig(t, []llmtest.Reply{{ToolCalls: []llmtest.ToolCall{{ID: "s1", Name: "slow", Args: `{}`}}}},
		func(o *apiserver.Options) { o.TurnTimeout = 500 * time.Millisecond })
	resp, b := r.postJSON(t, "/v1/chat/completions", map[string]any{"model": apiserver.Alias,
		"messages": []any{map[string]any{"role": "user", "content": "slow"}}}, nil)
	if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(b), `"turn_timeout"`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	waitFor(t, "the turn interrupted", func() bool { return countTypes(t, r.store, "", "TurnInterrupted") == 1 })
}

func TestFailedTurnIsAnError(t *testing.T) {
	r := newRig(t, []llmtest.Reply{{Status: 400, ErrorBody: `{"error":{"message":"model is on fire","type":"invalid_request_error"}}`}})
	_, err := r.client().Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("hi")}})
	var apiErr *oa.Error
	if !asOpenAIError(err, &apiErr) || apiErr.StatusCode != 500 || apiErr.Code != "turn_failed" || !strings.Contains(apiErr.Message, "model is on fire") {
		t.Fatalf("failed turn: %v", err)
	}
	// Streamed: an error event the client raises.
	r.llm.Add(llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"still on fire","type":"invalid_request_error"}}`})
	stream := r.client().Chat.Completions.NewStreaming(context.Background(), oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("hi")}})
	for stream.Next() {
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "still on fire") {
		t.Fatalf("streamed failure: %v", err)
	}
}

// A client that stops reading must not hold up the gateway's deliveries:
// another client is answered meanwhile.
func TestStalledClientDoesNotHoldUpOthers(t *testing.T) {
	big := strings.Repeat("All work and no play makes Jack a dull boy. ", 40000) // ~1.7 MB of deltas
	r := newRig(t, nil)
	r.llm.SetRoute(func(req llmtest.Request) *llmtest.Reply {
		if strings.Contains(string(req.Raw), "write a lot") {
			return &llmtest.Reply{Content: big}
		}
		return &llmtest.Reply{Content: "quick answer"}
	})
	conn, err := net.Dial("tcp", r.api.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"model":"hermes-agent","stream":true,"messages":[{"role":"user","content":"write a lot"}]}`
	_, _ = conn.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testKey +
		"\r\nContent-Type: application/json\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body))
	// Read the status line, then stop reading.
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(line, "200") {
		t.Fatalf("stalled client's status: %q %v", line, err)
	}
	waitFor(t, "the big answer recorded", func() bool { return countTypes(t, r.store, "", "TurnCompleted") == 1 })
	start := time.Now()
	res, err := r.client().Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("quick one")}})
	if err != nil || res.Choices[0].Message.Content != "quick answer" {
		t.Fatalf("other client: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the other client waited %s", d)
	}
}

func TestSendWithoutAWaitingClientIsPermanent(t *testing.T) {
	r := newRig(t, nil)
	start := time.Now()
	_, err := r.api.Send(context.Background(), schema.Outbound{Kind: "reply", Platform: "api", Chat: "c", InReplyTo: "gone", Text: "late"})
	var perm *gw.PermanentError
	if !errors.As(err, &perm) {
		t.Fatalf("reply for nobody: %v", err)
	}
	if _, err := r.api.Send(context.Background(), schema.Outbound{Kind: "notice", Platform: "api", Chat: "c"}); !errors.As(err, &perm) {
		t.Fatalf("notice: %v", err)
	}
	for _, k := range []string{"typing", "delta"} {
		if _, err := r.api.Send(context.Background(), schema.Outbound{Kind: k, Platform: "api", Chat: "c", InReplyTo: "gone", Text: "x"}); err != nil {
			t.Fatalf("%s for nobody: %v", k, err)
		}
	}
	if time.Since(start) > time.Second {
		t.Fatal("Send waited")
	}
	if !r.api.Connected() {
		t.Fatal("not connected while listening")
	}
}

func TestSessionRoutes(t *testing.T) {
	r := newRig(t, weatherScript())
	var httpResp *http.Response
	if _, err := r.client().Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: apiserver.Alias,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("What's the weather in Paris?")}}, option.WithResponseInto(&httpResp)); err != nil {
		t.Fatal(err)
	}
	sid := httpResp.Header.Get(apiserver.SessionHeader)

	resp, b := r.do(t, http.MethodGet, "/api/sessions?limit=10", "", nil, nil)
	var list struct {
		Object string
		Data   []struct {
			ID, Source string
			Messages   int
		}
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &list) != nil || len(list.Data) != 1 || list.Data[0].ID != sid || list.Data[0].Source != "api" {
		t.Fatalf("list: %d %s", resp.StatusCode, b)
	}
	// By unique prefix, as the CLI takes ids.
	resp, b = r.do(t, http.MethodGet, "/api/sessions/"+sid[:8], "", nil, nil)
	var show struct {
		Session  struct{ ID string }
		Messages []schema.Message
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &show) != nil || show.Session.ID != sid {
		t.Fatalf("show: %d %s", resp.StatusCode, b)
	}
	var roles []string
	for _, m := range show.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,assistant" {
		t.Fatalf("history roles %v", roles)
	}
	resp, b = r.do(t, http.MethodGet, "/api/sessions/"+sid+"/events", "", nil, nil)
	var evs struct{ Data []events.Recorded }
	if resp.StatusCode != 200 || json.Unmarshal(b, &evs) != nil || len(evs.Data) < 6 || evs.Data[0].Type != "SessionStarted" {
		t.Fatalf("events: %d %s", resp.StatusCode, b)
	}
	// Fork after the user's message.
	at := -1
	for i, e := range evs.Data {
		if e.Type == "UserMessageAdded" {
			at = i
		}
	}
	resp, b = r.postJSON(t, "/api/sessions/"+sid+"/fork", map[string]int{"at": at}, nil)
	var fork struct {
		SessionID  string `json:"session_id"`
		ForkedFrom string `json:"forked_from"`
	}
	if resp.StatusCode != 201 || json.Unmarshal(b, &fork) != nil || fork.SessionID == "" || fork.ForkedFrom != sid {
		t.Fatalf("fork: %d %s", resp.StatusCode, b)
	}
	resp, b = r.do(t, http.MethodGet, "/api/sessions/"+fork.SessionID, "", nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "What's the weather in Paris?") || strings.Contains(string(b), "sunny") {
		t.Fatalf("forked session: %d %s", resp.StatusCode, b)
	}
	for _, c := range []struct {
		body   string
		status int
	}{{`{}`, 400}, {`{"at": 9999}`, 400}, {`{"at": -1}`, 400}} {
		if resp, b := r.do(t, http.MethodPost, "/api/sessions/"+sid+"/fork", "application/json", []byte(c.body), nil); resp.StatusCode != c.status {
			t.Fatalf("fork %s: %d %s", c.body, resp.StatusCode, b)
		}
	}
	if resp, _ := r.do(t, http.MethodGet, "/api/sessions/nosuchsession", "", nil, nil); resp.StatusCode != 404 {
		t.Fatalf("unknown session: %d", resp.StatusCode)
	}
	// Search.
	resp, b = r.do(t, http.MethodGet, "/api/search?q=sunny&limit=5", "", nil, nil)
	var res struct {
		Total uint64
		Hits  []struct{ Session, Snippet string }
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &res) != nil || len(res.Hits) == 0 || !strings.Contains(res.Hits[0].Snippet, "<mark>sunny</mark>") {
		t.Fatalf("search: %d %s", resp.StatusCode, b)
	}
	if resp, _ := r.do(t, http.MethodGet, "/api/search", "", nil, nil); resp.StatusCode != 400 {
		t.Fatalf("search without q: %d", resp.StatusCode)
	}
	if resp, _ := r.do(t, http.MethodGet, "/api/search?q=x&since=yesterday", "", nil, nil); resp.StatusCode != 400 {
		t.Fatalf("search with a bad date: %d", resp.StatusCode)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestRunStopsAndReportsConnected(t *testing.T) {
	stopped := make(chan string, 1)
	api, err := apiserver.New(apiserver.Options{Host: "127.0.0.1", ShutdownGrace: 300 * time.Millisecond, Stopper: stopperFunc(func(s, _ string) { stopped <- s })})
	if err != nil {
		t.Fatal(err)
	}
	if api.Connected() || api.Name() != "api" {
		t.Fatal("connected before Run")
	}
	got := make(chan schema.Inbound, 1)
	inbox := func(_ context.Context, in schema.Inbound) error {
		got <- in
		// The turn begins and never ends.
		_, _ = api.Send(context.Background(), schema.Outbound{Kind: "typing", Platform: "api", Chat: in.Chat, InReplyTo: in.MessageID, SessionID: "s1"})
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- api.Run(ctx, inbox) }()
	<-api.Listening()
	if !api.Connected() {
		t.Fatal("not connected while listening")
	}
	reqDone := make(chan error, 1)
	go func() {
		resp, err := http.Post("http://"+api.Addr()+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`))
		if err == nil {
			resp.Body.Close()
		}
		reqDone <- err
	}()
	in := <-got
	if in.Platform != "api" || !in.Verified || in.User != "api" || in.Text != "hello" || in.Model != "" || in.Chat == "" || in.MessageID == "" || in.SessionID != "" {
		t.Fatalf("inbound %+v", in)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("stopping took %s", d)
	}
	if api.Connected() {
		t.Fatal("connected after Run returned")
	}
	if err := <-reqDone; err == nil {
		t.Fatal("the request in flight got an answer from a stopped server")
	}
	// Cut off by the shutdown, not by its client: the turn runs on (the
	// gateway drains it).
	select {
	case s := <-stopped:
		t.Fatalf("the shutdown stopped turn %s", s)
	case <-time.After(200 * time.Millisecond):
	}
}

type stopperFunc func(session, reason string)

func (f stopperFunc) Stop(session, reason string) { f(session, reason) }
