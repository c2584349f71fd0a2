// Package llmtest is a scripted model server for tests. It stands in for
// the OpenAI chat-completions API (JSON and SSE: tool-call deltas split
// across chunks, usage in the last chunk), the OpenAI Responses API (SSE)
// and the Anthropic Messages API (SSE), speaking their real wire formats so
// that tests go through the official SDK clients over HTTP. It answers from
// a script, in order, and records every request. A reply may also play a
// broken or hostile server (see the fault fields of Reply): a stream cut
// short, an HTML page instead of a stream, endless keep-alives, a trickle,
// injected raw bytes.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// ToolCall is a scripted tool call.
type ToolCall struct {
	ID   string
	Name string
	Args string
}

// Reply is one scripted model answer.
type Reply struct {
	Content   string
	Reasoning string
	ToolCalls []ToolCall
	// Finish is stop (default), tool_calls (default when ToolCalls are
	// set), length or content_filter.
	Finish string
	// Token usage reported in the last chunk.
	Prompt, Completion, CacheRead, CacheWrite int64
	// Status, when set, answers with this HTTP status and ErrorBody.
	Status    int
	ErrorBody string
	// Header is added to the response (Retry-After, say).
	Header map[string]string
	// Delay waits before answering; StallAfter sends the first chunk and
	// then waits this long before the rest.
	Delay      time.Duration
	StallAfter time.Duration
	// Wait, when set, holds the answer until it is closed (or the request
	// ends), after Delay.
	Wait <-chan struct{}
	// Model is reported back; defaults to the requested model.
	Model string
	// Ping sends an SSE comment block mid-stream, as sse-starlette does.
	Ping bool

	// Faults.

	// CutAfter ends the stream after this many events (the first event
	// counts), before its terminator: finish_reason and [DONE],
	// message_stop, response.completed. The response closes cleanly unless
	// Reset is set, which drops the connection as a crashing server does.
	CutAfter int
	Reset    bool
	// NoTerminator sends the whole answer but not its terminator: no
	// finish_reason chunk, usage or [DONE]; no message_stop; no
	// response.completed.
	NoTerminator bool
	// Inject is written verbatim after the first event (hostile chunks).
	Inject string
	// Body answers 200 with this body and ContentType (default text/html)
	// instead of a stream, as a proxy's error page does.
	Body        string
	ContentType string
	// PingEvery, after the first event, sends only keep-alives at this
	// interval until the client leaves: an SSE comment, or Anthropic's ping
	// event.
	PingEvery time.Duration
	// TrickleEvery, after the first event, sends only empty text deltas at
	// this interval until the client leaves: real chunks that never finish
	// the answer.
	TrickleEvery time.Duration
	// ByteEvery writes the stream one byte at a time at this interval.
	ByteEvery time.Duration
	// Pieces streams Content (chat completions) in this many deltas
	// (default 3), PieceEvery apart: a long answer written slowly.
	Pieces     int
	PieceEvery time.Duration
}

// Request is a recorded request.
type Request struct {
	Path   string
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// Server is the scripted server.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	script   []Reply
	requests []Request
	// Default, when set, answers once the script is used up.
	Default *Reply
	// Cycle, when set, answers in turn once the script is used up (for
	// benchmarks that run many identical turns).
	Cycle  []Reply
	cycled int
	// NoRecord stops recording requests (benchmarks).
	NoRecord bool
	// Route, when set, answers each request by its content (concurrent
	// sessions make the order of a script meaningless); nil falls through
	// to the script.
	Route func(Request) *Reply
}

// New starts a server answering with script, in order.
func New(script ...Reply) *Server {
	s := &Server{script: script}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// Add appends replies to the script.
func (s *Server) Add(rs ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, rs...)
}

// SetRoute sets Route safely while the server runs.
func (s *Server) SetRoute(f func(Request) *Reply) {
	s.mu.Lock()
	s.Route = f
	s.mu.Unlock()
}

// SetDefault sets Default safely while the server runs.
func (s *Server) SetDefault(r Reply) {
	s.mu.Lock()
	s.Default = &r
	s.mu.Unlock()
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Remaining is how many scripted replies are left.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

func (s *Server) next(r *http.Request) (Reply, Request, bool) {
	raw, _ := io.ReadAll(r.Body)
	req := Request{Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	json.Unmarshal(raw, &req.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.NoRecord {
		s.requests = append(s.requests, req)
	}
	if s.Route != nil {
		if rep := s.Route(req); rep != nil {
			return *rep, req, true
		}
	}
	if len(s.script) == 0 {
		if len(s.Cycle) > 0 {
			rep := s.Cycle[s.cycled%len(s.Cycle)]
			s.cycled++
			return rep, req, true
		}
		if s.Default != nil {
			return *s.Default, req, true
		}
		return Reply{}, req, false
	}
	rep := s.script[0]
	s.script = s.script[1:]
	return rep, req, true
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	rep, req, ok := s.next(r)
	if !ok {
		http.Error(w, `{"error":{"message":"llmtest: script exhausted","type":"server_error"}}`, http.StatusInternalServerError)
		return
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if rep.Wait != nil {
		select {
		case <-rep.Wait:
		case <-r.Context().Done():
			return
		}
	}
	if rep.Body != "" {
		ct := rep.ContentType
		if ct == "" {
			ct = "text/html; charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		io.WriteString(w, rep.Body)
		return
	}
	if rep.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		io.WriteString(w, rep.ErrorBody)
		return
	}
	if rep.Model == "" {
		rep.Model, _ = req.Body["model"].(string)
	}
	if len(rep.ToolCalls) > 0 && rep.Finish == "" {
		rep.Finish = "tool_calls"
	}
	if rep.Finish == "" {
		rep.Finish = "stop"
	}
	for i := range rep.ToolCalls {
		if rep.ToolCalls[i].ID == "" {
			rep.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", len(s.Requests()), i)
		}
	}
	stream, _ := req.Body["stream"].(bool)
	switch {
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		if stream {
			s.chatStream(w, r, rep)
		} else {
			s.chatJSON(w, rep)
		}
	case strings.HasSuffix(r.URL.Path, "/messages"):
		s.anthropicStream(w, r, rep, stream)
	case strings.HasSuffix(r.URL.Path, "/responses"):
		s.responsesStream(w, r, rep)
	default:
		http.Error(w, `{"error":{"message":"llmtest: unknown path"}}`, http.StatusNotFound)
	}
}

// sse writes events, playing the faults of a reply.
type sse struct {
	w   http.ResponseWriter
	f   http.Flusher
	r   *http.Request
	rep Reply
	// n counts events; dead is set once the stream was cut or the client
	// left, after which writes are dropped.
	n    int
	dead bool
}

func newSSE(w http.ResponseWriter, r *http.Request, rep Reply) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f, r: r, rep: rep}
}

// write sends raw bytes, a byte at a time under ByteEvery.
func (s *sse) write(b []byte) {
	if s.dead {
		return
	}
	if s.rep.ByteEvery <= 0 {
		s.w.Write(b)
		s.flush()
		return
	}
	for i := range b {
		s.w.Write(b[i : i+1])
		s.flush()
		if !s.wait(s.rep.ByteEvery) {
			s.dead = true
			return
		}
	}
}

func (s *sse) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

// wait sleeps d unless the client leaves first.
func (s *sse) wait(d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-s.r.Context().Done():
		return false
	}
}

// emit sends one event and cuts the stream once CutAfter events went out.
func (s *sse) emit(b []byte) {
	if s.dead {
		return
	}
	s.write(b)
	s.n++
	if s.rep.CutAfter > 0 && s.n >= s.rep.CutAfter {
		if s.rep.Reset {
			panic(http.ErrAbortHandler) // the connection drops mid-response
		}
		s.dead = true
	}
}

func (s *sse) data(v any) {
	b, _ := json.Marshal(v)
	s.emit(fmt.Appendf(nil, "data: %s\n\n", b))
}

func (s *sse) event(name string, v any) {
	b, _ := json.Marshal(v)
	s.emit(fmt.Appendf(nil, "event: %s\ndata: %s\n\n", name, b))
}

// terminator sends the end of the stream unless NoTerminator is set.
func (s *sse) terminator(f func()) {
	if !s.rep.NoTerminator {
		f()
	}
}

// afterFirst plays the faults that follow the first event; true means the
// handler is done (the client left or the stream was held to the end).
func (s *sse) afterFirst(ping, trickle func()) bool {
	if s.rep.Inject != "" {
		s.write([]byte(s.rep.Inject))
	}
	for _, f := range []struct {
		every time.Duration
		send  func()
	}{{s.rep.PingEvery, ping}, {s.rep.TrickleEvery, trickle}} {
		if f.every <= 0 {
			continue
		}
		for !s.dead && s.wait(f.every) {
			f.send()
		}
		return true
	}
	return stall(s.r, s.rep) || s.dead
}

func stall(r *http.Request, rep Reply) bool {
	if rep.StallAfter <= 0 {
		return false
	}
	select {
	case <-time.After(rep.StallAfter):
		return false
	case <-r.Context().Done():
		return true
	}
}

// pieces cuts s into n roughly equal parts (at least one).
func pieces(s string, n int) []string {
	if s == "" {
		return nil
	}
	rs := []rune(s)
	if n > len(rs) {
		n = len(rs)
	}
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, string(rs[i*len(rs)/n:(i+1)*len(rs)/n]))
	}
	return out
}

func (s *Server) chatStream(w http.ResponseWriter, r *http.Request, rep Reply) {
	out := newSSE(w, r, rep)
	id := "chatcmpl-llmtest"
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": rep.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	out.data(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	// What sse-starlette sends every 15 s: a comment block, CRLF.
	ping := func() { out.write([]byte(": ping - 2026-11-22 12:00:00.000000+00:00\r\n\r\n")) }
	if rep.Ping {
		ping()
	}
	if out.afterFirst(ping, func() { out.data(chunk(map[string]any{"content": ""}, nil)) }) {
		return
	}
	for _, p := range pieces(rep.Reasoning, 2) {
		out.data(chunk(map[string]any{"reasoning_content": p}, nil))
	}
	n := 3
	if rep.Pieces > 0 {
		n = rep.Pieces
	}
	for i, p := range pieces(rep.Content, n) {
		if i > 0 && rep.PieceEvery > 0 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(rep.PieceEvery):
			}
		}
		out.data(chunk(map[string]any{"content": p}, nil))
	}
	for i, tc := range rep.ToolCalls {
		// Name and id first, then the arguments split across chunks.
		out.data(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""}}}}, nil))
		for _, p := range pieces(tc.Args, 3) {
			out.data(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil))
		}
	}
	out.terminator(func() {
		out.data(chunk(map[string]any{}, rep.Finish))
		usage := map[string]any{"prompt_tokens": rep.Prompt, "completion_tokens": rep.Completion, "total_tokens": rep.Prompt + rep.Completion,
			"prompt_tokens_details": map[string]any{"cached_tokens": rep.CacheRead}}
		out.data(map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": rep.Model, "choices": []any{}, "usage": usage})
		out.emit([]byte("data: [DONE]\n\n"))
	})
}

func (s *Server) chatJSON(w http.ResponseWriter, rep Reply) {
	msg := map[string]any{"role": "assistant", "content": rep.Content}
	if rep.Reasoning != "" {
		msg["reasoning_content"] = rep.Reasoning
	}
	var tcs []any
	for _, tc := range rep.ToolCalls {
		tcs = append(tcs, map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Args}})
	}
	if len(tcs) > 0 {
		msg["tool_calls"] = tcs
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-llmtest", "object": "chat.completion", "created": time.Now().Unix(), "model": rep.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": rep.Finish}},
		"usage": map[string]any{"prompt_tokens": rep.Prompt, "completion_tokens": rep.Completion, "total_tokens": rep.Prompt + rep.Completion,
			"prompt_tokens_details": map[string]any{"cached_tokens": rep.CacheRead}}})
}

func anthropicStop(finish string) string {
	switch finish {
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

func (s *Server) anthropicStream(w http.ResponseWriter, r *http.Request, rep Reply, stream bool) {
	if !stream {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"llmtest: only streaming is scripted"}}`, http.StatusBadRequest)
		return
	}
	out := newSSE(w, r, rep)
	// Anthropic counts input tokens without the cached ones.
	input := rep.Prompt - rep.CacheRead - rep.CacheWrite
	out.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_llmtest", "type": "message", "role": "assistant", "model": rep.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": input, "output_tokens": 1, "cache_read_input_tokens": rep.CacheRead, "cache_creation_input_tokens": rep.CacheWrite}}})
	opened := false
	trickle := func() {
		if !opened {
			opened = true
			out.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		}
		out.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": ""}})
	}
	if out.afterFirst(func() { out.event("ping", map[string]any{"type": "ping"}) }, trickle) {
		return
	}
	idx := 0
	if rep.Reasoning != "" {
		out.event("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		for _, p := range pieces(rep.Reasoning, 2) {
			out.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "thinking_delta", "thinking": p}})
		}
		out.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "signature_delta", "signature": "sig-llmtest"}})
		out.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	if rep.Content != "" {
		out.event("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, p := range pieces(rep.Content, 3) {
			out.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "text_delta", "text": p}})
		}
		out.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	for _, tc := range rep.ToolCalls {
		out.event("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}})
		for _, p := range pieces(tc.Args, 3) {
			out.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
		out.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	out.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": anthropicStop(rep.Finish), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": rep.Completion}})
	out.terminator(func() { out.event("message_stop", map[string]any{"type": "message_stop"}) })
}

func (s *Server) responsesStream(w http.ResponseWriter, r *http.Request, rep Reply) {
	out := newSSE(w, r, rep)
	seq := 0
	ev := func(typ string, v map[string]any) {
		v["type"] = typ
		v["sequence_number"] = seq
		seq++
		out.event(typ, v)
	}
	resp := func(status string, output []any) map[string]any {
		m := map[string]any{"id": "resp_llmtest", "object": "response", "created_at": time.Now().Unix(), "model": rep.Model,
			"status": status, "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}}
		if status == "completed" || status == "incomplete" {
			m["usage"] = map[string]any{"input_tokens": rep.Prompt, "output_tokens": rep.Completion, "total_tokens": rep.Prompt + rep.Completion,
				"input_tokens_details": map[string]any{"cached_tokens": rep.CacheRead}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
		}
		if status == "incomplete" {
			m["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
		}
		return m
	}
	ev("response.created", map[string]any{"response": resp("in_progress", []any{})})
	ping := func() { out.write([]byte(": keep-alive\n\n")) }
	trickle := func() {
		ev("response.output_text.delta", map[string]any{"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": ""})
	}
	if out.afterFirst(ping, trickle) {
		return
	}
	var output []any
	oi := 0
	if rep.Reasoning != "" {
		item := map[string]any{"id": "rs_1", "type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": rep.Reasoning}}}
		ev("response.output_item.added", map[string]any{"output_index": oi, "item": map[string]any{"id": "rs_1", "type": "reasoning", "summary": []any{}}})
		ev("response.reasoning_summary_text.delta", map[string]any{"item_id": "rs_1", "output_index": oi, "summary_index": 0, "delta": rep.Reasoning})
		ev("response.output_item.done", map[string]any{"output_index": oi, "item": item})
		output = append(output, item)
		oi++
	}
	if rep.Content != "" {
		ev("response.output_item.added", map[string]any{"output_index": oi, "item": map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
		for _, p := range pieces(rep.Content, 3) {
			ev("response.output_text.delta", map[string]any{"item_id": "msg_1", "output_index": oi, "content_index": 0, "delta": p})
		}
		item := map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": rep.Content, "annotations": []any{}}}}
		ev("response.output_item.done", map[string]any{"output_index": oi, "item": item})
		output = append(output, item)
		oi++
	}
	for i, tc := range rep.ToolCalls {
		id := fmt.Sprintf("fc_%d", i)
		ev("response.output_item.added", map[string]any{"output_index": oi, "item": map[string]any{"id": id, "type": "function_call", "call_id": tc.ID, "name": tc.Name, "arguments": "", "status": "in_progress"}})
		for _, p := range pieces(tc.Args, 3) {
			ev("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": oi, "delta": p})
		}
		item := map[string]any{"id": id, "type": "function_call", "call_id": tc.ID, "name": tc.Name, "arguments": tc.Args, "status": "completed"}
		ev("response.output_item.done", map[string]any{"output_index": oi, "item": item})
		output = append(output, item)
		oi++
	}
	if output == nil {
		output = []any{}
	}
	out.terminator(func() {
		if rep.Finish == "length" {
			ev("response.incomplete", map[string]any{"response": resp("incomplete", output)})
			return
		}
		ev("response.completed", map[string]any{"response": resp("completed", output)})
	})
}

// RawServer answers every request with exactly the bytes it was given,
// whatever the path: for fuzzing the decoders and for byte-exact hostile
// answers.
type RawServer struct {
	*httptest.Server
	mu          sync.Mutex
	contentType string
	body        []byte
}

// NewRaw starts a raw server answering 200 with an empty event stream.
func NewRaw() *RawServer {
	s := &RawServer{contentType: "text/event-stream"}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		ct, body := s.contentType, s.body
		s.mu.Unlock()
		if ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.Write(body)
	}))
	return s
}

// Set makes the next answers body with contentType ("" for none).
func (s *RawServer) Set(contentType string, body []byte) {
	s.mu.Lock()
	s.contentType, s.body = contentType, body
	s.mu.Unlock()
}
