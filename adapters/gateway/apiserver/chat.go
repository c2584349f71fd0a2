package apiserver

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/hermes-go/hermes/schema"
)

// chatRequest is the part of a chat.completions request Hermes reads.
// Sampling options are the agent's to choose; a client's tools are
// ignored: the agent runs its own.
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func chatUsageOf(u *schema.Usage) chatUsage {
	var c chatUsage
	if u != nil {
		c.PromptTokens, c.CompletionTokens = u.PromptTokens, u.CompletionTokens
		c.TotalTokens = u.PromptTokens + u.CompletionTokens
		c.PromptTokensDetails.CachedTokens = u.CacheReadTokens
	}
	return c
}

type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   chatUsage    `json:"usage"`
}

type chatChoice struct {
	Index        int        `json:"index"`
	Message      chatAnswer `json:"message"`
	Logprobs     *struct{}  `json:"logprobs"`
	FinishReason string     `json:"finish_reason"`
}

type chatAnswer struct {
	Role    string  `json:"role"`
	Content string  `json:"content"`
	Refusal *string `json:"refusal"`
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if !s.decode(w, r, &req) {
		return
	}
	session := strings.TrimSpace(r.Header.Get(SessionHeader))
	text, images, err := chatText(req.Messages, session != "")
	if err != nil {
		msg, _ := asBadInput(err)
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_messages", msg)
		return
	}
	atts, ok := s.images(w, r, images, "invalid_messages")
	if !ok {
		return
	}
	id := newID()
	tr := turnRequest{id: id, text: text, atts: atts, session: session, model: req.Model}
	wt := s.begin(w, r, tr, "chatcmpl-"+id)
	if wt == nil {
		return
	}
	created := time.Now().Unix()
	if req.Stream {
		s.streamChat(w, r, wt, tr, created, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	final, ok := s.awaitFinal(w, r, wt)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, chatCompletion{ID: wt.public, Object: "chat.completion", Created: created, Model: s.answerModel(req.Model),
		Choices: []chatChoice{{Index: 0, Message: chatAnswer{Role: "assistant", Content: s.withMedia(final.Text)}, FinishReason: "stop"}},
		Usage:   chatUsageOf(final.Usage)})
}

// awaitFinal waits for the turn's final reply of a non-streamed request
// and names its session in the response header. false means the answer
// (a timeout, a failed turn) is written already. Its Text is the text the
// turn streamed, when it streamed any: what it said before calling tools,
// then its answer, as a streamed request receives them.
func (s *Server) awaitFinal(w http.ResponseWriter, r *http.Request, wt *waiter) (*schema.Outbound, bool) {
	f := s.follow(r, wt, false)
	defer f.close()
	var said strings.Builder
	for {
		n, err := f.next()
		if err != nil {
			s.timedOut(w, err)
			return nil, false
		}
		for _, it := range n.items {
			if !it.question {
				said.WriteString(it.text)
			}
		}
		final := n.final
		if final == nil {
			continue
		}
		if said.Len() > 0 && final.Error == "" {
			whole := *final
			whole.Text = said.String()
			final = &whole
		}
		w.Header().Set(SessionHeader, final.SessionID)
		if final.Error != "" {
			fail(w, http.StatusInternalServerError, serverError, "turn_failed", final.Error)
			return nil, false
		}
		return final, true
	}
}

// streamChat answers with chat.completion.chunk events. The headers wait
// until the session is known (a new session's id comes with its turn's
// start), so that X-Hermes-Session-Id is always set.
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, wt *waiter, tr turnRequest, created int64, includeUsage bool) {
	f := s.follow(r, wt, true)
	defer f.close()
	model := s.answerModel(tr.model)
	chunk := func(delta map[string]any, finish any) map[string]any {
		c := map[string]any{"id": wt.public, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
		if includeUsage {
			c["usage"] = nil
		}
		return c
	}
	var out *sse
	session := tr.session
	streamed := false
	for {
		n, err := f.next()
		items, final, known := n.items, n.final, n.session
		if err != nil {
			if out == nil {
				s.timedOut(w, err)
			} else if errors.Is(err, errTurnTimeout) {
				_ = out.event("", map[string]apiError{"error": {Message: "the agent did not answer in time; the turn was stopped", Type: serverError, Code: ptr("turn_timeout")}})
			}
			return
		}
		if known != "" {
			session = known
		}
		if out == nil {
			if session == "" && final == nil {
				continue // a keep-alive tick before the turn began
			}
			if final != nil && session == "" {
				session = final.SessionID
			}
			out = startSSE(w, session)
			if err := out.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil)); err != nil {
				return
			}
		}
		if n.tick {
			if err := out.keepAlive(); err != nil {
				return
			}
			continue
		}
		for _, it := range items {
			text := it.text
			if it.question {
				text = questionNotice(session, it.text, s.corr.question(session))
			} else {
				streamed = true
			}
			if err := out.event("", chunk(map[string]any{"content": text}, nil)); err != nil {
				return
			}
		}
		if final == nil {
			continue
		}
		if final.Error != "" {
			_ = out.event("", map[string]apiError{"error": {Message: final.Error, Type: serverError, Code: ptr("turn_failed")}})
			_ = out.raw("data: [DONE]\n\n")
			return
		}
		if !streamed && final.Text != "" {
			// No deltas came (the answer was already recorded, or the
			// provider does not stream): the answer in one piece.
			if err := out.event("", chunk(map[string]any{"content": final.Text}, nil)); err != nil {
				return
			}
		}
		if err := out.event("", chunk(map[string]any{}, "stop")); err != nil {
			return
		}
		if includeUsage {
			u := chatUsageOf(final.Usage)
			_ = out.event("", map[string]any{"id": wt.public, "object": "chat.completion.chunk", "created": created, "model": model,
				"choices": []any{}, "usage": u})
		}
		_ = out.raw("data: [DONE]\n\n")
		return
	}
}
