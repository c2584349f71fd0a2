package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// turnRequest is what one HTTP request asks of the agent.
type turnRequest struct {
	id      string // message id, unique per request
	text    string
	atts    []schema.Attachment // images, stored already
	session string              // the session to continue; "" starts one
	model   string              // the model the client named
}

// override is the model to run the turn with: a route's model when the
// client named one, else none (the configured model). A client's model
// name is not passed on: it would choose the provider's model, and so the
// cost, for whoever holds the key.
func (s *Server) override(m string) string {
	if to, ok := s.opts.ModelRoutes[m]; ok && to != s.opts.Model {
		return to
	}
	return ""
}

// answerModel is the model named in answers: the one the client asked for.
func (s *Server) answerModel(m string) string {
	if m != "" {
		return m
	}
	return Alias
}

// begin checks tr, registers its waiter and hands the message to the
// router. It answers the client itself and returns nil when it cannot.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, tr turnRequest, public string) *waiter {
	inbox := s.inbox.Load()
	if inbox == nil || s.closing.Load() {
		fail(w, http.StatusServiceUnavailable, serverError, "unavailable", "the gateway is not running")
		return nil
	}
	if strings.TrimSpace(tr.text) == "" && len(tr.atts) == 0 {
		fail(w, http.StatusBadRequest, invalidRequest, "empty_message", "the last user message has no text")
		return nil
	}
	if len(tr.text) > s.opts.MaxTextBytes {
		fail(w, http.StatusBadRequest, invalidRequest, "message_too_long", fmt.Sprintf(
			"the text for the agent is %d KiB (history included); the limit is %d KiB: continue a session with %s instead of sending the history again",
			len(tr.text)>>10, s.opts.MaxTextBytes>>10, SessionHeader))
		return nil
	}
	chat := tr.id // a new conversation gets a chat of its own
	if tr.session != "" {
		if s.opts.Archive != nil {
			ok, err := s.opts.Archive.Exists(r.Context(), tr.session)
			if errors.Is(err, events.ErrStreamDeleted) {
				fail(w, http.StatusNotFound, notFoundError, "session_not_found", "session "+tr.session+" was deleted: omit "+SessionHeader+" to start one")
				return nil
			}
			if err != nil {
				s.log.Error().Err(err).Str("session", tr.session).Msg("look up a session")
				fail(w, http.StatusInternalServerError, serverError, "", "could not look up session "+tr.session)
				return nil
			}
			if !ok {
				fail(w, http.StatusNotFound, notFoundError, "session_not_found", "no session "+tr.session+": omit "+SessionHeader+" to start one")
				return nil
			}
		}
		chat = s.corr.chatFor(tr.session)
	}
	wt := newWaiter(tr.id, chat)
	wt.public = public
	if tr.session != "" {
		wt.session = tr.session
	}
	s.corr.register(wt)
	in := schema.Inbound{Platform: Platform, Chat: chat, User: Platform, MessageID: tr.id, Text: tr.text, Attachments: tr.atts, Verified: true,
		// Deltas come for every request: a non-streamed answer is made of
		// them too, so that it carries the text a streamed one does.
		SessionID: tr.session, Model: s.override(tr.model), Stream: true}
	if err := (*inbox)(r.Context(), in); err != nil {
		s.corr.forget(wt)
		s.log.Error().Err(err).Msg("hand a request to the gateway")
		fail(w, http.StatusServiceUnavailable, serverError, "unavailable", "the gateway did not take the message: "+err.Error())
		return nil
	}
	return wt
}

// follower waits on one request's waiter for its client.
type follower struct {
	s      *Server
	wt     *waiter
	ctx    context.Context
	cancel context.CancelFunc
	tick   *time.Ticker
	done   bool
}

var errTurnTimeout = errors.New("turn timeout")

func (s *Server) follow(r *http.Request, wt *waiter, keepAlive bool) *follower {
	ctx, cancel := context.WithTimeoutCause(r.Context(), s.opts.TurnTimeout, errTurnTimeout)
	f := &follower{s: s, wt: wt, ctx: ctx, cancel: cancel}
	if keepAlive {
		f.tick = time.NewTicker(s.opts.KeepAlive)
	}
	return f
}

// news is what next found.
type news struct {
	items   []item
	final   *schema.Outbound
	session string
	// tick: the keep-alive interval passed with nothing new.
	tick bool
}

// next blocks until the request has news or, with keepAlive, a tick
// passed. err is set when the client left or the turn timed out; the turn
// is then stopped.
func (f *follower) next() (news, error) {
	var n news
	if n.items, n.final, n.session = f.wt.take(); len(n.items) > 0 || n.final != nil {
		f.done = n.final != nil
		return n, nil
	}
	var tick <-chan time.Time
	if f.tick != nil {
		tick = f.tick.C
	}
	select {
	case <-f.wt.wake:
	case <-tick:
		n.tick = true
	case <-f.ctx.Done():
		f.close()
		return n, context.Cause(f.ctx)
	}
	items, final, session := f.wt.take()
	if len(items) > 0 || final != nil {
		n.tick = false
	}
	n.items, n.final, n.session = items, final, session
	f.done = final != nil
	return n, nil
}

// close ends the wait; a request left before its answer is abandoned and
// its turn stopped.
func (f *follower) close() {
	if f.tick != nil {
		f.tick.Stop()
	}
	f.cancel()
	if !f.done {
		f.done = true
		f.s.log.Info().Str("request", f.wt.id).Err(context.Cause(f.ctx)).Msg("API client left before the answer: its turn is stopped")
		f.s.stop(f.s.corr.abandon(f.wt))
	}
}

// timedOut answers a request whose turn outlived TurnTimeout.
func (s *Server) timedOut(w http.ResponseWriter, err error) {
	if errors.Is(err, errTurnTimeout) {
		fail(w, http.StatusGatewayTimeout, serverError, "turn_timeout", fmt.Sprintf("the agent did not answer within %s; the turn was stopped", s.opts.TurnTimeout))
	}
}

// questionNotice is how a question is shown in a streamed answer: the
// client (or the person reading the stream) sees why the agent waits and
// how to answer.
func questionNotice(session, text string, q *question) string {
	var b strings.Builder
	b.WriteString("\n\n[Hermes is waiting for an answer] ")
	b.WriteString(strings.TrimSpace(text))
	if q != nil && q.Kind == tool.QuestionApproval {
		fmt.Fprintf(&b, "\n[Answer with POST /v1/approvals/%s {\"answer\": \"once\"|\"session\"|\"always\"|\"deny\"}; without an answer it is denied when it times out.]\n\n", session)
	} else {
		fmt.Fprintf(&b, "\n[Answer with POST /v1/approvals/%s {\"answer\": \"...\"}.]\n\n", session)
	}
	return b.String()
}

// sse writes a text/event-stream.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startSSE(w http.ResponseWriter, session string) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if session != "" {
		h.Set(SessionHeader, session)
	}
	w.WriteHeader(http.StatusOK)
	e := &sse{w: w, rc: http.NewResponseController(w)}
	_ = e.rc.Flush()
	return e
}

// event writes one event (name "" for a bare data line) and flushes it.
func (e *sse) event(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var buf strings.Builder
	if name != "" {
		buf.WriteString("event: " + name + "\n")
	}
	buf.WriteString("data: ")
	buf.Write(b)
	buf.WriteString("\n\n")
	return e.raw(buf.String())
}

func (e *sse) raw(s string) error {
	if _, err := e.w.Write([]byte(s)); err != nil {
		return err
	}
	return e.rc.Flush()
}

// keepAlive is a comment line: SSE clients skip it. No blank line
// follows: the line joins the next event's block, because some clients
// (openai-go 1.x) dispatch an empty event for a lone comment block and
// fail to decode it.
func (e *sse) keepAlive() error { return e.raw(": keep-alive\n") }
