package apiserver

import (
	"context"
	"net/http"
	"strings"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// ResponseLog keeps the ids of responses clients deleted. A response is
// not stored apart from its session: GET /v1/responses/{id} reads it back
// from the session's events, and a deletion only makes its id unknown.
type ResponseLog interface {
	DeleteResponse(ctx context.Context, id string) error
	ResponseDeleted(ctx context.Context, id string) (bool, error)
}

// DeletedResponsesStream holds APIResponseDeleted events.
const DeletedResponsesStream = "api-responses-deleted"

// StoreResponses is the ResponseLog of a home: APIResponseDeleted events
// on DeletedResponsesStream.
type StoreResponses struct{ Store events.Store }

// DeleteResponse records that id was deleted.
func (l StoreResponses) DeleteResponse(ctx context.Context, id string) error {
	env, err := schema.NewEnvelope(schema.Meta{}, schema.APIResponseDeleted{ResponseID: id})
	if err != nil {
		return err
	}
	_, err = l.Store.Append(ctx, DeletedResponsesStream, events.Any, env)
	return err
}

// ResponseDeleted tells whether id was deleted.
func (l StoreResponses) ResponseDeleted(ctx context.Context, id string) (bool, error) {
	rs, err := l.Store.ReadStream(ctx, DeletedResponsesStream, events.Forward, 0, 0)
	if err != nil {
		return false, err
	}
	for _, r := range rs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return false, err
		}
		if d, ok := p.(schema.APIResponseDeleted); ok && d.ResponseID == id {
			return true, nil
		}
	}
	return false, nil
}

// knownResponse returns the session and request id a response id carries
// when it is this server's and not deleted; otherwise it answers the
// client (404, or 500 when the log cannot be read) and returns false.
func (s *Server) knownResponse(w http.ResponseWriter, r *http.Request, id, code string) (sessionID, reqID string, ok bool) {
	sessionID, ok = sessionOfResponse(id)
	if !ok {
		fail(w, http.StatusNotFound, notFoundError, code, "response "+id+" is not a response of this server")
		return "", "", false
	}
	if s.opts.Responses != nil {
		gone, err := s.opts.Responses.ResponseDeleted(r.Context(), id)
		if err != nil {
			fail(w, http.StatusInternalServerError, serverError, "store_error", err.Error())
			return "", "", false
		}
		if gone {
			fail(w, http.StatusNotFound, notFoundError, code, "response "+id+" was deleted")
			return "", "", false
		}
	}
	return sessionID, strings.TrimPrefix(id, respPrefix)[:24], true
}

// getResponse answers GET /v1/responses/{id} from the session's events:
// the turn the request ran (its id derives from the request's), its text
// as the response carried it, its status and usage.
func (s *Server) getResponse(w http.ResponseWriter, r *http.Request) {
	arch := s.archive(w)
	if arch == nil {
		return
	}
	id := r.PathValue("id")
	sessionID, reqID, ok := s.knownResponse(w, r, id, "response_not_found")
	if !ok {
		return
	}
	st, err := session.LookupTurnIn(r.Context(), arch.Events, sessionID, gateway.TurnIDFor(Platform, reqID))
	if err != nil {
		fail(w, http.StatusInternalServerError, serverError, "store_error", err.Error())
		return
	}
	if !st.Started && !st.Completed && st.First.IsZero() {
		fail(w, http.StatusNotFound, notFoundError, "response_not_found", "response "+id+" has no turn in session "+sessionID)
		return
	}
	o := s.responseBase(id, &responsesRequest{}, st.First.Unix())
	msgID := "msg_" + reqID
	switch {
	case st.Completed:
		done := st.Last.Unix()
		o.Status, o.CompletedAt = "completed", &done
		o.Output = []outputMessage{{Type: "message", ID: msgID, Status: "completed", Role: "assistant",
			Content: []outputText{textPart(strings.Join(st.Said, "\n\n"))}}}
		o.Usage = responseUsageOf(&st.Usage)
	case st.Interrupted != "":
		o.Status = "cancelled"
		o.Error = &responseError{Code: "server_error", Message: "the turn was interrupted: " + st.Interrupted}
	}
	writeJSON(w, http.StatusOK, o)
}

// responseByID serves /v1/responses/{id}: GET and DELETE.
func (s *Server) responseByID(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.getResponse(w, r)
	case http.MethodDelete:
		s.deleteResponse(w, r)
	default:
		w.Header().Set("Allow", "GET, DELETE")
		fail(w, http.StatusMethodNotAllowed, invalidRequest, "method_not_allowed", r.Method+" "+r.URL.Path+": use GET or DELETE")
	}
}

// deleteResponse answers DELETE /v1/responses/{id}: the id is unknown
// from then on; the turn stays in its session.
func (s *Server) deleteResponse(w http.ResponseWriter, r *http.Request) {
	if s.opts.Responses == nil {
		fail(w, http.StatusNotImplemented, serverError, "not_available", "deleting responses is not available on this server")
		return
	}
	id := r.PathValue("id")
	if _, _, ok := s.knownResponse(w, r, id, "response_not_found"); !ok {
		return
	}
	if err := s.opts.Responses.DeleteResponse(r.Context(), id); err != nil {
		fail(w, http.StatusInternalServerError, serverError, "store_error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response", "deleted": true})
}
