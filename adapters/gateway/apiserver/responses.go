package apiserver

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/hermes-go/hermes/schema"
)

// A response id carries its session: "resp_" + the request's 24 hex
// digits + the session id in unpadded base64url. previous_response_id
// then continues that session with nothing stored beside the events, and
// still does after a restart.
const respPrefix = "resp_"

func responseID(reqID, session string) string {
	return respPrefix + reqID + base64.RawURLEncoding.EncodeToString([]byte(session))
}

// sessionOfResponse returns the session a response id carries.
func sessionOfResponse(id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, respPrefix)
	if !ok || len(rest) <= 24 {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest[24:])
	if err != nil || len(b) == 0 {
		return "", false
	}
	return string(b), true
}

// responsesRequest is the part of a Responses request Hermes reads.
type responsesRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions"`
	PreviousResponseID string            `json:"previous_response_id"`
	Stream             bool              `json:"stream"`
	Metadata           map[string]string `json:"metadata"`
}

type responseObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	CompletedAt        *int64            `json:"completed_at"`
	Error              *responseError    `json:"error"`
	IncompleteDetails  *struct{}         `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int64            `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []outputMessage   `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          *struct{}         `json:"reasoning"`
	Store              bool              `json:"store"`
	Temperature        float64           `json:"temperature"`
	Text               map[string]any    `json:"text"`
	ToolChoice         string            `json:"tool_choice"`
	Tools              []any             `json:"tools"`
	TopP               float64           `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              *responseUsage    `json:"usage,omitempty"`
	Metadata           map[string]string `json:"metadata"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type outputMessage struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type responseUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

func responseUsageOf(u *schema.Usage) *responseUsage {
	r := &responseUsage{}
	if u != nil {
		r.InputTokens, r.OutputTokens = u.PromptTokens, u.CompletionTokens
		r.InputTokensDetails.CachedTokens, r.InputTokensDetails.CacheWriteTokens = u.CacheReadTokens, u.CacheWriteTokens
		r.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return r
}

func textPart(text string) outputText {
	return outputText{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
}

// responseBase is a response in progress: no output yet.
func (s *Server) responseBase(id string, req *responsesRequest, created int64) responseObject {
	o := responseObject{ID: id, Object: "response", CreatedAt: created, Status: "in_progress", Instructions: req.Instructions,
		Model: s.answerModel(req.Model), Output: []outputMessage{}, ParallelToolCalls: true, Store: true, Temperature: 1,
		Text: map[string]any{"format": map[string]string{"type": "text"}}, ToolChoice: "auto", Tools: []any{}, TopP: 1,
		Truncation: "disabled", Metadata: req.Metadata}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	if req.PreviousResponseID != "" {
		p := req.PreviousResponseID
		o.PreviousResponseID = &p
	}
	return o
}

// finished completes o with the final reply.
func finished(o responseObject, msgID string, final *schema.Outbound) responseObject {
	now := time.Now().Unix()
	if final.Error != "" {
		o.Status = "failed"
		o.Error = &responseError{Code: "server_error", Message: final.Error}
		return o
	}
	o.Status, o.CompletedAt = "completed", &now
	o.Output = []outputMessage{{Type: "message", ID: msgID, Status: "completed", Role: "assistant", Content: []outputText{textPart(final.Text)}}}
	o.Usage = responseUsageOf(final.Usage)
	return o
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if !s.decode(w, r, &req) {
		return
	}
	session := strings.TrimSpace(r.Header.Get(SessionHeader))
	if req.PreviousResponseID != "" {
		prev, _, ok := s.knownResponse(w, r, req.PreviousResponseID, "previous_response_not_found")
		if !ok {
			return
		}
		if session != "" && session != prev {
			fail(w, http.StatusBadRequest, invalidRequest, "conflicting_session", "previous_response_id belongs to session "+prev+", but "+SessionHeader+" names "+session)
			return
		}
		session = prev
	}
	instructions := ""
	if req.Instructions != nil {
		instructions = *req.Instructions
	}
	text, images, err := responsesText(req.Input, instructions, session != "")
	if err != nil {
		msg, _ := asBadInput(err)
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_input", msg)
		return
	}
	atts, ok := s.images(w, r, images, "invalid_input")
	if !ok {
		return
	}
	reqID := newID()
	tr := turnRequest{id: reqID, text: text, atts: atts, session: session, model: req.Model}
	// The public id needs the session, which a new session has only once
	// its turn begins; the waiter's public id is set then.
	wt := s.begin(w, r, tr, "")
	if wt == nil {
		return
	}
	created := time.Now().Unix()
	msgID := "msg_" + reqID
	if req.Stream {
		s.streamResponse(w, r, wt, &req, tr, created, msgID)
		return
	}
	final, ok := s.awaitFinal(w, r, wt)
	if !ok {
		return
	}
	linked := *final
	linked.Text = s.withMedia(final.Text)
	writeJSON(w, http.StatusOK, finished(s.responseBase(responseID(reqID, final.SessionID), &req, created), msgID, &linked))
}

// streamResponse answers with the Responses API's typed events.
func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, wt *waiter, req *responsesRequest, tr turnRequest, created int64, msgID string) {
	f := s.follow(r, wt, true)
	defer f.close()
	var out *sse
	var base responseObject
	seq := 0
	emit := func(typ string, fields map[string]any) error {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		return out.event(typ, fields)
	}
	session := tr.session
	var text strings.Builder
	streamed := false
	started := false // the message item and its text part are open
	open := func() error {
		if started {
			return nil
		}
		started = true
		item := outputMessage{Type: "message", ID: msgID, Status: "in_progress", Role: "assistant", Content: []outputText{}}
		if err := emit("response.output_item.added", map[string]any{"output_index": 0, "item": item}); err != nil {
			return err
		}
		return emit("response.content_part.added", map[string]any{"item_id": msgID, "output_index": 0, "content_index": 0, "part": textPart("")})
	}
	delta := func(d string) error {
		if err := open(); err != nil {
			return err
		}
		text.WriteString(d)
		return emit("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": 0, "content_index": 0, "delta": d, "logprobs": []any{}})
	}
	for {
		n, err := f.next()
		items, final, known := n.items, n.final, n.session
		if err != nil {
			if out == nil {
				s.timedOut(w, err)
			} else if errors.Is(err, errTurnTimeout) {
				o := base
				o.Status, o.Error = "failed", &responseError{Code: "server_error", Message: "the agent did not answer in time; the turn was stopped"}
				_ = emit("response.failed", map[string]any{"response": o})
			}
			return
		}
		if known != "" {
			session = known
		}
		if out == nil {
			if session == "" && final == nil {
				continue
			}
			if final != nil && session == "" {
				session = final.SessionID
			}
			base = s.responseBase(responseID(tr.id, session), req, created)
			wt.mu.Lock()
			wt.public = base.ID
			wt.mu.Unlock()
			out = startSSE(w, session)
			if err := emit("response.created", map[string]any{"response": base}); err != nil {
				return
			}
			if err := emit("response.in_progress", map[string]any{"response": base}); err != nil {
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
			d := it.text
			if it.question {
				d = questionNotice(session, it.text, s.corr.question(session))
			} else {
				streamed = true
			}
			if err := delta(d); err != nil {
				return
			}
		}
		if final == nil {
			continue
		}
		if final.Error != "" {
			_ = emit("response.failed", map[string]any{"response": finished(base, msgID, final)})
			return
		}
		if !streamed && final.Text != "" {
			if err := delta(final.Text); err != nil {
				return
			}
		}
		if err := open(); err != nil {
			return
		}
		// The text done is what was streamed: what the client holds.
		full := text.String()
		part := textPart(full)
		item := outputMessage{Type: "message", ID: msgID, Status: "completed", Role: "assistant", Content: []outputText{part}}
		steps := []struct {
			typ    string
			fields map[string]any
		}{
			{"response.output_text.done", map[string]any{"item_id": msgID, "output_index": 0, "content_index": 0, "text": full, "logprobs": []any{}}},
			{"response.content_part.done", map[string]any{"item_id": msgID, "output_index": 0, "content_index": 0, "part": part}},
			{"response.output_item.done", map[string]any{"output_index": 0, "item": item}},
		}
		for _, st := range steps {
			if err := emit(st.typ, st.fields); err != nil {
				return
			}
		}
		done := finished(base, msgID, final)
		done.Output = []outputMessage{item}
		_ = emit("response.completed", map[string]any{"response": done})
		return
	}
}
