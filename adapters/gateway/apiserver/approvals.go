package apiserver

import (
	"net/http"
	"slices"
	"strings"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/schema"
)

// An API client has nobody to click a button: a tool's question (the
// approval of a dangerous command, a clarification) is shown in the stream
// and waits at /v1/approvals/{session} until the client answers it there
// or the question times out (an approval unanswered is denied).

// listApprovals lists every question waiting: a client that started a
// session without streaming learns its id only with the answer, and finds
// the question here.
func (s *Server) listApprovals(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, newList(s.corr.allQuestions()))
}

type answerRequest struct {
	Answer string `json:"answer"`
}

func (s *Server) approvals(w http.ResponseWriter, r *http.Request) {
	session := r.PathValue("session")
	switch r.Method {
	case http.MethodGet:
		q := s.corr.question(session)
		if q == nil {
			fail(w, http.StatusNotFound, notFoundError, "no_question", "no question is waiting in session "+session)
			return
		}
		writeJSON(w, http.StatusOK, q)
	case http.MethodPost:
		var req answerRequest
		if !s.decode(w, r, &req) {
			return
		}
		ans := strings.TrimSpace(req.Answer)
		q := s.corr.question(session)
		if q == nil {
			fail(w, http.StatusNotFound, notFoundError, "no_question", "no question is waiting in session "+session)
			return
		}
		if ans == "" {
			fail(w, http.StatusBadRequest, invalidRequest, "empty_answer", `answer is required: {"answer": "..."}`)
			return
		}
		if q.Kind == tool.QuestionApproval {
			ans = strings.ToLower(ans)
			if !slices.Contains(approvalChoices, ans) {
				fail(w, http.StatusBadRequest, invalidRequest, "invalid_answer", "an approval's answer is one of once, session, always, deny")
				return
			}
			ans = "approval:" + ans
		}
		if !s.sendAnswer(w, r, q, ans) {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"session_id": q.Session, "answered": true})
	default:
		w.Header().Set("Allow", "GET, POST")
		fail(w, http.StatusMethodNotAllowed, invalidRequest, "method_not_allowed", r.Method+" "+r.URL.Path+": use GET or POST")
	}
}

// sendAnswer hands the answer data (approval:<choice>, or the text of a
// clarification) to q's chat. It answers the client itself on failure.
func (s *Server) sendAnswer(w http.ResponseWriter, r *http.Request, q *question, data string) bool {
	inbox := s.inbox.Load()
	if inbox == nil {
		fail(w, http.StatusServiceUnavailable, serverError, "unavailable", "the gateway is not running")
		return false
	}
	if !s.corr.answered(q) {
		fail(w, http.StatusConflict, invalidRequest, "already_answered", "the question was answered or withdrawn meanwhile")
		return false
	}
	in := schema.Inbound{Kind: schema.InboundCallback, Key: q.Key, Platform: Platform, Chat: q.Chat, User: Platform, Data: data, Verified: true}
	if err := (*inbox)(r.Context(), in); err != nil {
		fail(w, http.StatusServiceUnavailable, serverError, "unavailable", "the gateway did not take the answer: "+err.Error())
		return false
	}
	return true
}
