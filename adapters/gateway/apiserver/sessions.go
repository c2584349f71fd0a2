package apiserver

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/search"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// Archive is the read side of sessions the /api routes show: the
// projections, brought up to the end of the log before each answer.
type Archive interface {
	// List returns sessions, most recently active first (limit <= 0: all).
	List(ctx context.Context, limit int) ([]sessions.Summary, error)
	// Get returns a session by id or unique prefix.
	Get(ctx context.Context, id string) (sessions.Summary, bool, error)
	// History is the message history the session's next model call
	// starts from.
	History(ctx context.Context, id string) ([]schema.Message, error)
	// Events are the session's raw events.
	Events(ctx context.Context, id string) ([]events.Recorded, error)
	// Fork starts a session whose history is id's up to revision at.
	Fork(ctx context.Context, id string, at uint64) (string, error)
	// Exists tells whether a session with exactly this id was started.
	Exists(ctx context.Context, id string) (bool, error)
}

// Searcher runs a full-text search of every message.
type Searcher interface {
	Search(ctx context.Context, q search.Query) (search.Results, error)
}

func (s *Server) archive(w http.ResponseWriter) Archive {
	if s.opts.Archive == nil {
		fail(w, http.StatusNotImplemented, serverError, "not_available", "session routes are not available on this server")
	}
	return s.opts.Archive
}

type list[T any] struct {
	Object string `json:"object"`
	Data   []T    `json:"data"`
}

func newList[T any](data []T) list[T] {
	if data == nil {
		data = []T{}
	}
	return list[T]{Object: "list", Data: data}
}

func (s *Server) readFailed(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, events.ErrStreamDeleted) {
		fail(w, http.StatusNotFound, notFoundError, "session_deleted", what+": the session was deleted")
		return
	}
	s.log.Error().Err(err).Str("what", what).Msg("API read")
	fail(w, http.StatusInternalServerError, serverError, "", what+": "+err.Error())
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	a := s.archive(w)
	if a == nil {
		return
	}
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fail(w, http.StatusBadRequest, invalidRequest, "invalid_limit", "limit "+strconv.Quote(v)+": a number >= 0")
			return
		}
		limit = n
	}
	// offset pages through the list as upstream's clients do.
	offset := 0
	if v := r.URL.Query().Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fail(w, http.StatusBadRequest, invalidRequest, "invalid_offset", "offset "+strconv.Quote(v)+": a number >= 0")
			return
		}
		offset = n
	}
	ask := limit
	if ask > 0 {
		ask += offset + 2 // room for the row dropped below, and to tell whether more follow
	}
	all, err := a.List(r.Context(), ask)
	if err != nil {
		s.readFailed(w, "list sessions", err)
		return
	}
	// The sessions projection files events of streams outside any session
	// (the gateway's chat index, pairings) under the session id "": not a
	// session.
	all = slices.DeleteFunc(all, func(x sessions.Summary) bool { return x.ID == "" })
	all = all[min(offset, len(all)):]
	more := false
	if limit > 0 && len(all) > limit {
		all, more = all[:limit], true
	}
	views := make([]sessionView, len(all))
	for i, x := range all {
		views[i] = viewOf(x)
	}
	if views == nil {
		views = []sessionView{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": views, "limit": limit, "offset": offset, "has_more": more})
}

// session resolves the {id} of the path; it answers 404 itself.
func (s *Server) session(w http.ResponseWriter, r *http.Request, a Archive) (sessions.Summary, bool) {
	id := r.PathValue("id")
	sum, ok, err := a.Get(r.Context(), id)
	if err != nil {
		if strings.Contains(err.Error(), "ambiguous") {
			fail(w, http.StatusBadRequest, invalidRequest, "ambiguous_id", err.Error())
			return sum, false
		}
		s.readFailed(w, "session "+id, err)
		return sum, false
	}
	if !ok {
		fail(w, http.StatusNotFound, notFoundError, "session_not_found", "no session "+id)
		return sum, false
	}
	return sum, true
}

func (s *Server) showSession(w http.ResponseWriter, r *http.Request) {
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
	if msgs == nil {
		msgs = []schema.Message{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "hermes.session", "session": viewOf(sum), "messages": msgs})
}

func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request) {
	a := s.archive(w)
	if a == nil {
		return
	}
	sum, ok := s.session(w, r, a)
	if !ok {
		return
	}
	evs, err := a.Events(r.Context(), sum.ID)
	if err != nil {
		s.readFailed(w, "events of "+sum.ID, err)
		return
	}
	writeJSON(w, http.StatusOK, newList(evs))
}

type forkRequest struct {
	At *int64 `json:"at"`
}

func (s *Server) forkSession(w http.ResponseWriter, r *http.Request) {
	a := s.archive(w)
	if a == nil {
		return
	}
	var req forkRequest
	if !s.decode(w, r, &req) {
		return
	}
	if req.At == nil || *req.At < 0 {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_at", `at is required: the revision of the last event the fork keeps ({"at": N}; GET /api/sessions/{id}/events lists them)`)
		return
	}
	sum, ok := s.session(w, r, a)
	if !ok {
		return
	}
	evs, err := a.Events(r.Context(), sum.ID)
	if err != nil {
		s.readFailed(w, "events of "+sum.ID, err)
		return
	}
	if *req.At >= int64(len(evs)) {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_at", "session "+sum.ID+" has events 0 to "+strconv.Itoa(len(evs)-1)+"; at "+strconv.FormatInt(*req.At, 10)+" is past its end")
		return
	}
	id, err := a.Fork(r.Context(), sum.ID, uint64(*req.At))
	if err != nil {
		s.readFailed(w, "fork "+sum.ID, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"session_id": id, "forked_from": sum.ID, "at": *req.At})
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	if s.opts.Search == nil {
		fail(w, http.StatusNotImplemented, serverError, "not_available", "search is not available on this server")
		return
	}
	v := r.URL.Query()
	q := search.Query{Text: v.Get("q"), Source: v.Get("source"), Role: v.Get("role")}
	if strings.TrimSpace(q.Text) == "" {
		fail(w, http.StatusBadRequest, invalidRequest, "missing_query", "q is required: /api/search?q=words")
		return
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			fail(w, http.StatusBadRequest, invalidRequest, "invalid_limit", "limit "+strconv.Quote(l)+": a number >= 1")
			return
		}
		q.Limit = n
	}
	for _, d := range []struct {
		name string
		to   *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if s := v.Get(d.name); s != "" {
			t, err := time.Parse("2006-01-02", s)
			if err != nil {
				fail(w, http.StatusBadRequest, invalidRequest, "invalid_"+d.name, d.name+" "+strconv.Quote(s)+": use YYYY-MM-DD")
				return
			}
			*d.to = t
		}
	}
	res, err := s.opts.Search.Search(r.Context(), q)
	if err != nil {
		if strings.HasPrefix(err.Error(), "search ") {
			fail(w, http.StatusBadRequest, invalidRequest, "invalid_query", err.Error())
			return
		}
		s.readFailed(w, "search", err)
		return
	}
	if res.Hits == nil {
		res.Hits = []search.Hit{}
	}
	marks := strings.NewReplacer(search.HighlightOn, "<mark>", search.HighlightOff, "</mark>")
	for i := range res.Hits {
		res.Hits[i].Snippet = marks.Replace(res.Hits[i].Snippet)
	}
	writeJSON(w, http.StatusOK, res)
}
