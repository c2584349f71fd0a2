package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// The session resources upstream's clients use (POST /api/sessions, PATCH
// and DELETE /api/sessions/{id}, …/messages, …/chat, …/chat/stream): a
// session is its event stream; creating one writes its opening events, a
// title is a SessionTitled its actor records, a deletion is the same
// erasure as `hermes sessions delete`, and a chat is a turn through the
// router like any other request of this server.

// SessionControl changes sessions for the session routes (the gateway's
// session manager and store). Every change is an event (or, for Delete,
// the deletion of the session's stream), so the read side rebuilds from
// the store.
type SessionControl interface {
	// Create starts session id bound to the API (source "api") on model
	// ("": the configured one). A session that exists already is a
	// *events.WrongExpectedVersionError.
	Create(ctx context.Context, id, model string) error
	// Retitle records title as the session's title.
	Retitle(ctx context.Context, id, title string) error
	// Delete erases the session's events, as `hermes sessions delete`
	// does.
	Delete(ctx context.Context, id string) error
}

// MaxTitleBytes bounds a session title set through the API.
const MaxTitleBytes = 200

// sessionIDPattern is what a client-chosen session id may look like: a
// stream name part, never a path.
var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// sessionView is a session as the session routes show it: this server's
// summary, plus the names upstream's clients read.
type sessionView struct {
	sessions.Summary
	StartedAt        float64 `json:"started_at"`
	LastActiveAt     float64 `json:"last_active_at"`
	MessageCount     int     `json:"message_count"`
	ParentSessionID  *string `json:"parent_session_id"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
}

func unixFloat(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

func viewOf(s sessions.Summary) sessionView {
	return sessionView{Summary: s, StartedAt: unixFloat(s.Started), LastActiveAt: unixFloat(s.LastActive), MessageCount: s.Messages,
		ParentSessionID: ptr(s.Parent), InputTokens: s.Usage.PromptTokens, OutputTokens: s.Usage.CompletionTokens,
		CacheReadTokens: s.Usage.CacheReadTokens, CacheWriteTokens: s.Usage.CacheWriteTokens, EstimatedCostUSD: s.CostUSD}
}

func (s *Server) control(w http.ResponseWriter) SessionControl {
	if s.opts.Sessions == nil || s.opts.Archive == nil {
		fail(w, http.StatusNotImplemented, serverError, "not_available", "changing sessions is not available on this server")
		return nil
	}
	return s.opts.Sessions
}

// sessionsRoot serves /api/sessions: GET lists, POST creates.
func (s *Server) sessionsRoot(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.listSessions(w, r)
	case http.MethodPost:
		s.createSession(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		fail(w, http.StatusMethodNotAllowed, invalidRequest, "method_not_allowed", r.Method+" "+r.URL.Path+": use GET or POST")
	}
}

// sessionByID serves /api/sessions/{id}: GET shows, PATCH changes the
// title, DELETE erases.
func (s *Server) sessionByID(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.showSession(w, r)
	case http.MethodPatch:
		s.patchSession(w, r)
	case http.MethodDelete:
		s.deleteSession(w, r)
	default:
		w.Header().Set("Allow", "GET, PATCH, DELETE")
		fail(w, http.StatusMethodNotAllowed, invalidRequest, "method_not_allowed", r.Method+" "+r.URL.Path+": use GET, PATCH or DELETE")
	}
}

type createSessionRequest struct {
	ID        string  `json:"id"`
	SessionID string  `json:"session_id"`
	Title     *string `json:"title"`
	Model     string  `json:"model"`
	// SystemPrompt is refused: a session's stable prefix is built by the
	// agent (its tools, memory, skills), not taken from a client.
	SystemPrompt *string `json:"system_prompt"`
}

// checkTitle trims title and says what is wrong with it ("" when fine).
func checkTitle(title string) (string, string) {
	t := strings.TrimSpace(title)
	switch {
	case t == "":
		return "", "title is empty: send a title of 1 to 200 bytes"
	case len(t) > MaxTitleBytes:
		return "", fmt.Sprintf("title is %d bytes; the limit is %d", len(t), MaxTitleBytes)
	case strings.ContainsAny(t, "\r\n\x00"):
		return "", "title must be one line"
	}
	return t, ""
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	ctl := s.control(w)
	if ctl == nil {
		return
	}
	var req createSessionRequest
	if !s.decode(w, r, &req) {
		return
	}
	id := strings.TrimSpace(req.ID)
	if id == "" {
		id = strings.TrimSpace(req.SessionID)
	}
	if id == "" {
		id = "api_" + newID()
	} else if !sessionIDPattern.MatchString(id) {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_session_id", "id "+strconv.Quote(id)+": use 1 to 128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit")
		return
	}
	if req.SystemPrompt != nil {
		fail(w, http.StatusBadRequest, invalidRequest, "unsupported_session_field", "system_prompt is not taken: the agent builds a session's system prompt (its tools, memory and skills)")
		return
	}
	title := ""
	if req.Title != nil {
		t, bad := checkTitle(*req.Title)
		if bad != "" {
			fail(w, http.StatusBadRequest, invalidRequest, "invalid_title", bad)
			return
		}
		title = t
	}
	err := ctl.Create(r.Context(), id, s.override(req.Model))
	var wrong *events.WrongExpectedVersionError
	switch {
	case errors.As(err, &wrong), errors.Is(err, events.ErrStreamDeleted):
		fail(w, http.StatusConflict, invalidRequest, "session_exists", "session "+id+" exists already (or was deleted): choose another id, or omit it")
		return
	case err != nil:
		s.log.Error().Err(err).Str("session", id).Msg("create a session")
		fail(w, http.StatusInternalServerError, serverError, "", "could not create session "+id)
		return
	}
	if title != "" {
		if err := ctl.Retitle(r.Context(), id, title); err != nil {
			s.log.Error().Err(err).Str("session", id).Msg("title a new session")
			fail(w, http.StatusInternalServerError, serverError, "", "session "+id+" was created, but its title was not recorded: "+err.Error())
			return
		}
	}
	s.writeSession(w, r, id, http.StatusCreated)
}

// writeSession answers with session id as the archive has it now.
func (s *Server) writeSession(w http.ResponseWriter, r *http.Request, id string, status int) {
	sum, ok, err := s.opts.Archive.Get(r.Context(), id)
	if err != nil {
		s.readFailed(w, "session "+id, err)
		return
	}
	if !ok {
		fail(w, http.StatusNotFound, notFoundError, "session_not_found", "no session "+id)
		return
	}
	writeJSON(w, status, map[string]any{"object": "hermes.session", "session": viewOf(sum)})
}

func (s *Server) patchSession(w http.ResponseWriter, r *http.Request) {
	ctl := s.control(w)
	if ctl == nil {
		return
	}
	var body map[string]json.RawMessage
	if !s.decode(w, r, &body) {
		return
	}
	if body == nil {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_json", "the request body must be a JSON object")
		return
	}
	for k := range body {
		if k != "title" {
			fail(w, http.StatusBadRequest, invalidRequest, "unsupported_session_field", "unsupported session field "+strconv.Quote(k)+": only title can be changed")
			return
		}
	}
	raw, ok := body["title"]
	if !ok {
		fail(w, http.StatusBadRequest, invalidRequest, "missing_title", `nothing to change: send {"title": "..."}`)
		return
	}
	var title string
	if err := json.Unmarshal(raw, &title); err != nil {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_title", "title must be a string")
		return
	}
	title, bad := checkTitle(title)
	if bad != "" {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_title", bad)
		return
	}
	sum, found := s.exactSession(w, r)
	if !found {
		return
	}
	if err := ctl.Retitle(r.Context(), sum.ID, title); err != nil {
		s.changeFailed(w, "title session "+sum.ID, err)
		return
	}
	s.writeSession(w, r, sum.ID, http.StatusOK)
}

// exactSession resolves the {id} of a route that changes a session: the
// whole id, never a prefix (a prefix names a session to read only).
func (s *Server) exactSession(w http.ResponseWriter, r *http.Request) (sessions.Summary, bool) {
	sum, ok := s.session(w, r, s.opts.Archive)
	if ok && sum.ID != r.PathValue("id") {
		fail(w, http.StatusNotFound, notFoundError, "session_not_found", "no session "+r.PathValue("id")+": changes name a session by its whole id")
		return sum, false
	}
	return sum, ok
}

// changeFailed answers a SessionControl error: a session another process
// runs is a conflict.
func (s *Server) changeFailed(w http.ResponseWriter, what string, err error) {
	var inUse *session.InUseError
	if errors.As(err, &inUse) {
		fail(w, http.StatusConflict, invalidRequest, "session_in_use", what+": "+err.Error())
		return
	}
	s.readFailed(w, what, err)
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	ctl := s.control(w)
	if ctl == nil {
		return
	}
	sum, ok := s.exactSession(w, r)
	if !ok {
		return
	}
	if s.corr.busy(sum.ID) || s.runs.busy(sum.ID) {
		fail(w, http.StatusConflict, invalidRequest, "session_busy", "session "+sum.ID+" has a turn in flight: wait for its answer (or stop it) before deleting it")
		return
	}
	if err := ctl.Delete(r.Context(), sum.ID); err != nil {
		s.changeFailed(w, "delete session "+sum.ID, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "hermes.session.deleted", "id": sum.ID, "deleted": true})
}

// messageView is one message of a session's history as upstream's
// clients read it.
type messageView struct {
	SessionID  string            `json:"session_id"`
	Role       string            `json:"role"`
	Content    string            `json:"content"`
	Reasoning  string            `json:"reasoning,omitempty"`
	ToolCalls  []schema.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
	ToolName   string            `json:"tool_name,omitempty"`
	Images     []schema.ImageRef `json:"images,omitempty"`
}

// sessionMessages answers GET /api/sessions/{id}/messages from the
// history projection (what the next model call starts from, system
// message aside).
func (s *Server) sessionMessages(w http.ResponseWriter, r *http.Request) {
	a := s.archive(w)
	if a == nil {
		return
	}
	sum, ok := s.session(w, r, a)
	if !ok {
		return
	}
	msgs, err := a.History(r.Context(), sum.ID)
	if err != nil {
		s.readFailed(w, "history of "+sum.ID, err)
		return
	}
	out := make([]messageView, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == "system" {
			continue
		}
		out = append(out, messageView{SessionID: sum.ID, Role: m.Role, Content: m.Content, Reasoning: m.Reasoning, ToolCalls: m.ToolCalls,
			ToolCallID: m.ToolCallID, ToolName: m.Name, Images: m.Images})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "session_id": sum.ID, "data": out})
}

// sessionChatRequest is the body of …/chat and …/chat/stream.
type sessionChatRequest struct {
	Message json.RawMessage `json:"message"`
	Input   json.RawMessage `json:"input"`
	Model   string          `json:"model"`
	// SystemMessage and Instructions are refused (see createSession).
	SystemMessage *string `json:"system_message"`
	Instructions  *string `json:"instructions"`
}

// sessionTurn reads a session chat request and hands its turn to the
// router; nil means the client was answered already.
func (s *Server) sessionTurn(w http.ResponseWriter, r *http.Request) (*waiter, turnRequest) {
	var tr turnRequest
	a := s.archive(w)
	if a == nil {
		return nil, tr
	}
	var req sessionChatRequest
	if !s.decode(w, r, &req) {
		return nil, tr
	}
	if req.SystemMessage != nil || req.Instructions != nil {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_system_message", "system_message and instructions are not taken: the agent keeps the session's system prompt")
		return nil, tr
	}
	raw := req.Message
	if len(raw) == 0 || string(raw) == "null" || string(raw) == `""` {
		raw = req.Input
	}
	if len(raw) == 0 || string(raw) == "null" {
		fail(w, http.StatusBadRequest, invalidRequest, "missing_message", `the message is missing: send {"message": "..."}`)
		return nil, tr
	}
	text, images, err := chatText([]chatMessage{{Role: "user", Content: raw}}, true)
	if err != nil {
		msg, _ := asBadInput(err)
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_message", strings.Replace(msg, "messages[0].", "message.", 1))
		return nil, tr
	}
	sum, ok := s.session(w, r, a)
	if !ok {
		return nil, tr
	}
	atts, ok := s.images(w, r, images, "invalid_message")
	if !ok {
		return nil, tr
	}
	id := newID()
	tr = turnRequest{id: id, text: text, atts: atts, session: sum.ID, model: req.Model}
	return s.begin(w, r, tr, "chat-"+id), tr
}

// sessionChat answers POST /api/sessions/{id}/chat: one turn, answered
// when it ends.
func (s *Server) sessionChat(w http.ResponseWriter, r *http.Request) {
	wt, tr := s.sessionTurn(w, r)
	if wt == nil {
		return
	}
	final, ok := s.awaitFinal(w, r, wt)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "hermes.session.chat.completion", "session_id": first(final.SessionID, tr.session),
		"message": map[string]string{"role": "assistant", "content": s.withMedia(final.Text)}, "usage": chatUsageOf(final.Usage)})
}

// sessionChatStream answers POST /api/sessions/{id}/chat/stream with
// upstream's named events: run.started, message.started, assistant.delta
// …, assistant.completed, run.completed (or error), done.
func (s *Server) sessionChatStream(w http.ResponseWriter, r *http.Request) {
	wt, tr := s.sessionTurn(w, r)
	if wt == nil {
		return
	}
	f := s.follow(r, wt, true)
	defer f.close()
	runID, msgID := "run_"+tr.id, "msg_"+tr.id
	seq := 0
	out := startSSE(w, tr.session)
	emit := func(name string, payload map[string]any) error {
		seq++
		payload["session_id"], payload["run_id"], payload["seq"], payload["ts"] = first(str(payload["session_id"]), tr.session), runID, seq, unixFloat(time.Now())
		return out.event(name, payload)
	}
	if emit("run.started", map[string]any{"user_message": map[string]string{"role": "user", "content": tr.text}}) != nil ||
		emit("message.started", map[string]any{"message": map[string]string{"id": msgID, "role": "assistant"}}) != nil {
		return
	}
	var said strings.Builder
	for {
		n, err := f.next()
		if err != nil {
			if errors.Is(err, errTurnTimeout) {
				_ = emit("error", map[string]any{"message": "the agent did not answer in time; the turn was stopped"})
				_ = emit("done", map[string]any{})
			}
			return
		}
		if n.tick {
			if out.keepAlive() != nil {
				return
			}
			continue
		}
		for _, it := range n.items {
			if it.question {
				q := s.corr.question(tr.session)
				ev := map[string]any{"message_id": msgID, "question": it.text}
				if q != nil {
					ev["kind"], ev["choices"] = q.Kind, q.Choices
				}
				if emit("approval.request", ev) != nil {
					return
				}
				continue
			}
			said.WriteString(it.text)
			if emit("assistant.delta", map[string]any{"message_id": msgID, "delta": it.text}) != nil {
				return
			}
		}
		if n.final == nil {
			continue
		}
		final := n.final
		if final.Error != "" {
			_ = emit("error", map[string]any{"message": final.Error})
			_ = emit("done", map[string]any{})
			return
		}
		text := final.Text
		if said.Len() > 0 {
			text = said.String()
		}
		sid := first(final.SessionID, tr.session)
		if emit("assistant.completed", map[string]any{"session_id": sid, "message_id": msgID, "content": s.withMedia(text),
			"completed": true, "partial": false, "interrupted": false}) != nil {
			return
		}
		_ = emit("run.completed", map[string]any{"session_id": sid, "message_id": msgID, "completed": true, "usage": chatUsageOf(final.Usage)})
		_ = emit("done", map[string]any{})
		return
	}
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
