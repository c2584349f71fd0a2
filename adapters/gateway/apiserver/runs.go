package apiserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Runs (/v1/runs) are turns a client starts and does not wait for: POST
// answers 202 with the run's id at once, and the client polls GET
// /v1/runs/{id}, follows GET /v1/runs/{id}/events, answers its approvals
// or stops it. A run is a turn on a session like any other request of
// this server, so that its status is read back from the events: the
// run id carries the request's id, its session and its chat, the turn's
// id derives from the request's, and the gateway's chat stream records
// the message received (queued) and a refusal (failed). A poll after a
// gateway restart answers from the store; only the live event feed of a
// run in flight (deltas as they come) is kept in memory, a while after
// the run ends.

const runPrefix = "run_"

// runRetain is how long a finished run's live record stays in memory.
const runRetain = 10 * time.Minute

// ChatLog reads the gateway's record of one of this server's chats (its
// chat stream).
type ChatLog interface {
	ChatEvents(ctx context.Context, chat string) ([]events.Recorded, error)
}

// StoreChats is the ChatLog of a home: the router's chat streams.
type StoreChats struct{ Store events.Store }

// ChatEvents reads chat's stream.
func (l StoreChats) ChatEvents(ctx context.Context, chat string) ([]events.Recorded, error) {
	key := gateway.ChatKey(schema.Inbound{Platform: Platform, Chat: chat}, false)
	return l.Store.ReadStream(ctx, gateway.ChatStream(key), events.Forward, 0, 0)
}

func runIDFor(reqID, session, chat string) string {
	return runPrefix + reqID + base64.RawURLEncoding.EncodeToString([]byte(session+"\n"+chat))
}

// parseRunID returns what a run id carries.
func parseRunID(id string) (reqID, session, chat string, ok bool) {
	rest, ok := strings.CutPrefix(id, runPrefix)
	if !ok || len(rest) <= 24 {
		return "", "", "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest[24:])
	if err != nil {
		return "", "", "", false
	}
	session, chat, ok = strings.Cut(string(b), "\n")
	if !ok || session == "" || chat == "" {
		return "", "", "", false
	}
	return rest[:24], session, chat, true
}

// runStatus is a run as GET /v1/runs/{id} shows it (upstream's shape).
type runStatus struct {
	Object    string    `json:"object"`
	RunID     string    `json:"run_id"`
	Status    string    `json:"status"`
	CreatedAt float64   `json:"created_at"`
	UpdatedAt float64   `json:"updated_at"`
	SessionID string    `json:"session_id"`
	Model     string    `json:"model,omitempty"`
	Output    *string   `json:"output,omitempty"`
	Usage     *runUsage `json:"usage,omitempty"`
	Error     string    `json:"error,omitempty"`
	LastEvent string    `json:"last_event,omitempty"`
}

type runUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

func runUsageOf(u *schema.Usage) *runUsage {
	r := &runUsage{}
	if u != nil {
		r.InputTokens, r.OutputTokens, r.TotalTokens = u.PromptTokens, u.CompletionTokens, u.PromptTokens+u.CompletionTokens
	}
	return r
}

// terminal tells whether a run's status is final.
func terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

// liveRun is a run this process started: its status as it goes and the
// events its followers are sent.
type liveRun struct {
	mu       sync.Mutex
	st       runStatus
	evs      []map[string]any
	changed  chan struct{} // closed and replaced on each change
	stopping bool
	// stopSentAt is when the stop was last sent to the turn: it is sent
	// again every second until the turn ends (a stop that reached the
	// session before its turn began is otherwise lost).
	stopSentAt time.Time
	wt         *waiter
}

func (l *liveRun) push(ev map[string]any, status string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := unixFloat(time.Now())
	if ev != nil {
		ev["run_id"], ev["timestamp"] = l.st.RunID, now
		l.evs = append(l.evs, ev)
		l.st.LastEvent = str(ev["event"])
	}
	if status != "" && !terminal(l.st.Status) {
		l.st.Status = status
	}
	l.st.UpdatedAt = now
	close(l.changed)
	l.changed = make(chan struct{})
}

// snapshot returns the status, the events from index from on, and the
// channel closed at the next change.
func (l *liveRun) snapshot(from int) (runStatus, []map[string]any, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var evs []map[string]any
	if from < len(l.evs) {
		evs = l.evs[from:]
	}
	return l.st, evs, l.changed
}

// runBook keeps the live runs.
type runBook struct {
	mu   sync.Mutex
	byID map[string]*liveRun
}

func (b *runBook) get(id string) *liveRun {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byID[id]
}

func (b *runBook) add(l *liveRun) {
	b.mu.Lock()
	if b.byID == nil {
		b.byID = map[string]*liveRun{}
	}
	b.byID[l.st.RunID] = l
	b.mu.Unlock()
}

func (b *runBook) forgetLater(id string) {
	time.AfterFunc(runRetain, func() {
		b.mu.Lock()
		delete(b.byID, id)
		b.mu.Unlock()
	})
}

// busy tells whether a run of session is in flight.
func (b *runBook) busy(session string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.byID {
		l.mu.Lock()
		on := l.st.SessionID == session && !terminal(l.st.Status)
		l.mu.Unlock()
		if on {
			return true
		}
	}
	return false
}

// runRequest is the body of POST /v1/runs (upstream's fields).
type runRequest struct {
	Input               json.RawMessage `json:"input"`
	Instructions        *string         `json:"instructions"`
	PreviousResponseID  string          `json:"previous_response_id"`
	ConversationHistory []chatMessage   `json:"conversation_history"`
	SessionID           string          `json:"session_id"`
	Model               string          `json:"model"`
}

// runMessages turns a run request into chat messages: the history, then
// the input (a string, or a list of messages whose last is the user's).
func runMessages(req runRequest) ([]chatMessage, error) {
	var msgs []chatMessage
	if req.Instructions != nil && strings.TrimSpace(*req.Instructions) != "" {
		b, _ := json.Marshal(*req.Instructions)
		msgs = append(msgs, chatMessage{Role: "system", Content: b})
	}
	msgs = append(msgs, req.ConversationHistory...)
	in := strings.TrimSpace(string(req.Input))
	switch {
	case in == "" || in == "null" || in == `""` || in == "[]":
		return nil, badInput("input is missing: send {\"input\": \"...\"}")
	case strings.HasPrefix(in, `"`):
		msgs = append(msgs, chatMessage{Role: "user", Content: req.Input})
	case strings.HasPrefix(in, "["):
		var list []chatMessage
		if err := json.Unmarshal(req.Input, &list); err != nil {
			return nil, badInput("input: a string or a list of {role, content} messages")
		}
		msgs = append(msgs, list...)
	default:
		return nil, badInput("input: a string or a list of {role, content} messages")
	}
	return msgs, nil
}

// startRun answers POST /v1/runs.
func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	if s.archive(w) == nil {
		return
	}
	var req runRequest
	if !s.decode(w, r, &req) {
		return
	}
	session := strings.TrimSpace(req.SessionID)
	if session == "" && req.PreviousResponseID != "" {
		sid, ok := sessionOfResponse(req.PreviousResponseID)
		if !ok {
			fail(w, http.StatusNotFound, notFoundError, "response_not_found", "previous_response_id "+req.PreviousResponseID+" is not a response of this server")
			return
		}
		if s.opts.Responses != nil {
			gone, err := s.opts.Responses.ResponseDeleted(r.Context(), req.PreviousResponseID)
			if err != nil {
				fail(w, http.StatusInternalServerError, serverError, "store_error", err.Error())
				return
			}
			if gone {
				fail(w, http.StatusNotFound, notFoundError, "response_not_found", "previous_response_id "+req.PreviousResponseID+" was deleted")
				return
			}
		}
		session = sid
	}
	if session != "" && req.Instructions != nil {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_instructions", "instructions start a session: a run continuing session "+session+" keeps its system prompt")
		return
	}
	msgs, err := runMessages(req)
	if err == nil {
		var images []string
		var text string
		text, images, err = chatText(msgs, session != "")
		if err == nil && len(images) > 0 {
			err = badInput("input: runs take text only; send images through /v1/chat/completions or /v1/responses")
		}
		if err == nil && strings.TrimSpace(text) == "" {
			err = badInput("input has no text")
		}
		if err == nil {
			s.launchRun(w, r, session, text, req.Model)
			return
		}
	}
	msg, _ := asBadInput(err)
	fail(w, http.StatusBadRequest, invalidRequest, "invalid_input", msg)
}

// launchRun creates the run's session when it has none, hands the turn to
// the router and answers 202.
func (s *Server) launchRun(w http.ResponseWriter, r *http.Request, session, text, model string) {
	if len(text) > s.opts.MaxTextBytes {
		fail(w, http.StatusBadRequest, invalidRequest, "message_too_long", "the text for the agent is over the limit: continue a session with session_id instead of sending the history again")
		return
	}
	if n := s.inFlight.Add(1); n > int64(s.opts.MaxInFlight) {
		s.inFlight.Add(-1)
		after := s.retryAfter()
		w.Header().Set("Retry-After", strconv.Itoa(after))
		fail(w, http.StatusTooManyRequests, rateLimitError, "server_busy", "the agent is at its limit of requests in flight (platforms.api_server.max_in_flight): retry in "+strconv.Itoa(after)+" s")
		return
	}
	handed := false
	defer func() {
		if !handed {
			s.inFlight.Add(-1)
		}
	}()
	if session == "" {
		ctl := s.control(w)
		if ctl == nil {
			return
		}
		session = "api_" + newID()
		if err := ctl.Create(r.Context(), session, s.override(model)); err != nil {
			s.log.Error().Err(err).Msg("create a run's session")
			fail(w, http.StatusInternalServerError, serverError, "", "could not create the run's session: "+err.Error())
			return
		}
	}
	id := newID()
	chat := s.corr.chatFor(session)
	rid := runIDFor(id, session, chat)
	now := unixFloat(time.Now())
	live := &liveRun{st: runStatus{Object: "hermes.run", RunID: rid, Status: "queued", CreatedAt: now, UpdatedAt: now, SessionID: session,
		Model: s.answerModel(model)}, changed: make(chan struct{})}
	tr := turnRequest{id: id, text: text, session: session, model: model}
	wt := s.begin(w, r, tr, rid)
	if wt == nil {
		return
	}
	handed = true
	live.wt = wt
	s.runs.add(live)
	go s.driveRun(live, wt)
	w.Header().Set(SessionHeader, session)
	writeJSON(w, http.StatusAccepted, map[string]any{"run_id": rid, "status": "started", "session_id": session})
}

// driveRun follows a run's turn to its end, for its followers.
func (s *Server) driveRun(l *liveRun, wt *waiter) {
	defer s.inFlight.Add(-1)
	defer s.runs.forgetLater(l.st.RunID)
	began := time.Now()
	defer func() { s.observeTurn(time.Since(began)) }()
	timeout := time.NewTimer(s.opts.TurnTimeout)
	defer timeout.Stop()
	var said strings.Builder
	for {
		items, final, _ := wt.take()
		wt.mu.Lock()
		started := wt.started
		wt.mu.Unlock()
		l.mu.Lock()
		sendStop := l.stopping && started && time.Since(l.stopSentAt) >= time.Second
		if sendStop {
			l.stopSentAt = time.Now()
		}
		l.mu.Unlock()
		if sendStop {
			s.stop(l.st.SessionID)
		}
		if started {
			l.push(nil, "running")
		}
		for _, it := range items {
			if it.question {
				ev := map[string]any{"event": "approval.request", "question": it.text}
				if q := s.corr.question(l.st.SessionID); q != nil {
					ev["kind"] = q.Kind
					if q.Kind == tool.QuestionApproval {
						ev["choices"] = approvalChoices
					}
				}
				l.push(ev, "waiting_for_approval")
				continue
			}
			said.WriteString(it.text)
			l.push(map[string]any{"event": "message.delta", "delta": it.text}, "running")
		}
		if final != nil {
			l.mu.Lock()
			stopping := l.stopping
			l.mu.Unlock()
			switch {
			case stopping:
				l.push(map[string]any{"event": "run.cancelled"}, "cancelled")
			case final.Error != "":
				l.mu.Lock()
				l.st.Error = final.Error
				l.mu.Unlock()
				l.push(map[string]any{"event": "run.failed", "error": final.Error}, "failed")
			default:
				text := final.Text
				if said.Len() > 0 {
					text = said.String()
				}
				text = s.withMedia(text)
				u := runUsageOf(final.Usage)
				l.mu.Lock()
				l.st.Output, l.st.Usage = &text, u
				l.mu.Unlock()
				l.push(map[string]any{"event": "run.completed", "output": text, "usage": u}, "completed")
			}
			return
		}
		// While a stop is asked for, wake each second to send it again.
		var again <-chan time.Time
		l.mu.Lock()
		if l.stopping {
			again = time.After(time.Second)
		}
		l.mu.Unlock()
		select {
		case <-wt.wake:
		case <-again:
		case <-timeout.C:
			s.stop(s.corr.abandon(wt))
			s.stop(l.st.SessionID)
			l.mu.Lock()
			l.st.Error = "the agent did not answer within " + s.opts.TurnTimeout.String() + "; the turn was stopped"
			l.mu.Unlock()
			l.push(map[string]any{"event": "run.failed", "error": l.st.Error}, "failed")
			return
		}
	}
}

// recordedRun reads a run's status from the events: the gateway's chat
// stream (the message received, the reply it got) and the turn in its
// session. A turn a crash cut short is continued by the gateway's
// recovery under another turn id: the reply names it. ok is false for a
// run the events do not know.
func (s *Server) recordedRun(ctx context.Context, id string) (runStatus, bool, error) {
	reqID, sess, chat, ok := parseRunID(id)
	if !ok || s.opts.Archive == nil {
		return runStatus{}, false, nil
	}
	st := runStatus{Object: "hermes.run", RunID: id, SessionID: sess}
	var received bool
	var reply *schema.GatewayReplyRequested
	var replied time.Time
	if s.opts.Chats != nil {
		evs, err := s.opts.Chats.ChatEvents(ctx, chat)
		if err != nil {
			return st, false, err
		}
		for _, r := range evs {
			if r.Type != schema.TypeGatewayMessageReceived && r.Type != schema.TypeGatewayReplyRequested {
				continue
			}
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				continue
			}
			switch e := p.(type) {
			case schema.GatewayMessageReceived:
				if e.MessageID == reqID && !received {
					received = true
					st.CreatedAt, st.UpdatedAt = unixFloat(r.Time), unixFloat(r.Time)
				}
			case schema.GatewayReplyRequested:
				if e.InReplyTo == reqID && e.Kind != schema.ReplyApproval {
					reply, replied = &e, r.Time
				}
			}
		}
	}
	turnID := gateway.TurnIDFor(Platform, reqID)
	if reply != nil && reply.TurnID != "" {
		turnID = reply.TurnID
	}
	turn, err := session.LookupTurnIn(ctx, s.opts.Archive.Events, sess, turnID)
	if errors.Is(err, events.ErrStreamDeleted) {
		return st, false, errRunGone
	}
	if err != nil {
		return st, false, err
	}
	if st.CreatedAt == 0 && !turn.First.IsZero() {
		st.CreatedAt = unixFloat(turn.First)
	}
	if !turn.Last.IsZero() {
		st.UpdatedAt = unixFloat(turn.Last)
	}
	completed := func() {
		out := s.withMedia(strings.Join(turn.Said, "\n\n"))
		st.Status, st.Output, st.Usage, st.LastEvent = "completed", &out, runUsageOf(&turn.Usage), "run.completed"
	}
	if reply != nil {
		st.UpdatedAt = unixFloat(replied)
		switch {
		case reply.Kind == schema.ReplyAnswer || reply.Kind == schema.ReplyNotice && turn.Completed:
			completed()
		case reply.Kind == schema.ReplyNotice && turn.Interrupted != "":
			st.Status, st.Error, st.LastEvent = "cancelled", turn.Interrupted, "run.cancelled"
		default:
			// An error, or a notice that refused the message (too long,
			// too many waiting).
			st.Status, st.Error, st.LastEvent = "failed", reply.Text, "run.failed"
		}
		return st, true, nil
	}
	switch {
	case received && turn.Started:
		// Owed a reply: running, or cut short by a crash and continued
		// when the gateway recovers it.
		st.Status = "running"
	case received:
		st.Status = "queued"
	case s.opts.Chats != nil:
		return st, false, nil
	// Without the chat's record, the turn alone.
	case turn.Completed:
		completed()
	case turn.Interrupted != "":
		st.Status, st.Error, st.LastEvent = "cancelled", turn.Interrupted, "run.cancelled"
	case turn.Started:
		st.Status = "running"
	default:
		return st, false, nil
	}
	if st.Status == "running" && s.corr.question(sess) != nil {
		st.Status = "waiting_for_approval"
	}
	return st, true, nil
}

// errRunGone is a run whose session was deleted.
var errRunGone = errors.New("the run's session was deleted")

// runState is a run's status: the live record while it runs here, else
// the events'.
func (s *Server) runState(w http.ResponseWriter, r *http.Request) (runStatus, *liveRun, bool) {
	id := r.PathValue("id")
	l := s.runs.get(id)
	if l != nil {
		st, _, _ := l.snapshot(0)
		if !terminal(st.Status) {
			return st, l, true
		}
	}
	st, ok, err := s.recordedRun(r.Context(), id)
	if errors.Is(err, errRunGone) {
		fail(w, http.StatusNotFound, notFoundError, "run_not_found", "run "+id+": its session was deleted")
		return st, nil, false
	}
	if err != nil {
		s.log.Error().Err(err).Str("run", id).Msg("read a run")
		fail(w, http.StatusInternalServerError, serverError, "store_error", "could not read run "+id)
		return st, nil, false
	}
	if ok {
		if l != nil {
			live, _, _ := l.snapshot(0)
			st.Model = live.Model
		}
		return st, l, true
	}
	if l != nil {
		// Failed before the gateway recorded anything.
		st, _, _ := l.snapshot(0)
		return st, l, true
	}
	fail(w, http.StatusNotFound, notFoundError, "run_not_found", "no run "+id)
	return st, nil, false
}

// getRun answers GET /v1/runs/{id}.
func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	if s.archive(w) == nil {
		return
	}
	st, _, ok := s.runState(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// terminalEvent is the event that ends a finished run's feed.
func terminalEvent(st runStatus) map[string]any {
	ev := map[string]any{"event": st.LastEvent, "run_id": st.RunID, "timestamp": st.UpdatedAt}
	switch st.Status {
	case "completed":
		ev["event"], ev["output"], ev["usage"] = "run.completed", st.Output, st.Usage
	case "failed":
		ev["event"], ev["error"] = "run.failed", st.Error
	case "cancelled":
		ev["event"] = "run.cancelled"
	}
	return ev
}

// runEvents answers GET /v1/runs/{id}/events: an SSE feed of the run's
// events (upstream's: data lines of {"event": …}), closed with a comment
// when the run ends. A run this process follows is replayed from its
// start; another (after a restart) is followed through its status, which
// the events give.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	if s.archive(w) == nil {
		return
	}
	st, l, ok := s.runState(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.TurnTimeout)
	defer cancel()
	out := startSSE(w, st.SessionID)
	tick := time.NewTicker(s.opts.KeepAlive)
	defer tick.Stop()
	if l != nil {
		next := 0
		for {
			st, evs, changed := l.snapshot(next)
			for _, ev := range evs {
				if out.event("", ev) != nil {
					return
				}
			}
			next += len(evs)
			if terminal(st.Status) {
				_ = out.raw(": stream closed\n\n")
				return
			}
			select {
			case <-changed:
			case <-tick.C:
				if out.keepAlive() != nil {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}
	poll := time.NewTicker(250 * time.Millisecond)
	defer poll.Stop()
	for !terminal(st.Status) {
		select {
		case <-poll.C:
		case <-tick.C:
			if out.keepAlive() != nil {
				return
			}
			continue
		case <-ctx.Done():
			return
		}
		next, ok, err := s.recordedRun(ctx, st.RunID)
		if err != nil || !ok {
			return
		}
		st = next
	}
	if out.event("", terminalEvent(st)) != nil {
		return
	}
	_ = out.raw(": stream closed\n\n")
}

// stopRun answers POST /v1/runs/{id}/stop.
func (s *Server) stopRun(w http.ResponseWriter, r *http.Request) {
	if s.archive(w) == nil {
		return
	}
	st, l, ok := s.runState(w, r)
	if !ok {
		return
	}
	if terminal(st.Status) {
		fail(w, http.StatusConflict, invalidRequest, "run_not_active", "run "+st.RunID+" is "+st.Status+" already")
		return
	}
	if l == nil && st.Status == "queued" {
		// Recovered after a restart and not begun yet: nothing here holds
		// it to stop when it begins.
		fail(w, http.StatusConflict, invalidRequest, "run_not_started", "run "+st.RunID+" is queued behind another turn of its session: stop it once it runs")
		return
	}
	if l != nil {
		l.mu.Lock()
		l.stopping = true
		l.mu.Unlock()
		l.push(map[string]any{"event": "run.stopping"}, "stopping")
		if l.wt != nil {
			l.wt.notify() // driveRun stops the turn once it has begun
		}
	}
	if st.Status != "queued" {
		s.stop(st.SessionID)
	}
	writeJSON(w, http.StatusOK, map[string]any{"run_id": st.RunID, "status": "stopping"})
}

type runApprovalRequest struct {
	Choice string `json:"choice"`
	// Answer answers a clarifying question (not an approval).
	Answer string `json:"answer"`
}

// runApproval answers POST /v1/runs/{id}/approval: the choice for the
// approval the run waits on.
func (s *Server) runApproval(w http.ResponseWriter, r *http.Request) {
	if s.archive(w) == nil {
		return
	}
	var req runApprovalRequest
	if !s.decode(w, r, &req) {
		return
	}
	st, l, ok := s.runState(w, r)
	if !ok {
		return
	}
	q := s.corr.question(st.SessionID)
	if q == nil {
		fail(w, http.StatusConflict, invalidRequest, "approval_not_pending", "run "+st.RunID+" waits on no approval")
		return
	}
	ans := strings.TrimSpace(req.Answer)
	choice := strings.ToLower(strings.TrimSpace(req.Choice))
	if q.Kind == tool.QuestionApproval {
		switch choice {
		case "approve", "approved", "allow":
			choice = "once"
		}
		if !slices.Contains(approvalChoices, choice) {
			fail(w, http.StatusBadRequest, invalidRequest, "invalid_approval_choice", "choice is one of once, session, always, deny")
			return
		}
		ans = choice
	} else if ans == "" {
		fail(w, http.StatusBadRequest, invalidRequest, "empty_answer", `the run asks a question, not an approval: send {"answer": "..."}`)
		return
	}
	if q.Kind == tool.QuestionApproval {
		ans = "approval:" + ans
	}
	if !s.sendAnswer(w, r, q, ans) {
		return
	}
	if l != nil {
		l.push(map[string]any{"event": "approval.responded", "choice": choice}, "running")
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "hermes.run.approval_response", "run_id": st.RunID, "choice": first(choice, ans), "resolved": 1})
}
