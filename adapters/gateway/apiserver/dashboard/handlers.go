package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/replay"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/projections/search"
	"github.com/hermes-go/hermes/projections/sessions"
)

func (h *Handler) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFiles, "static")
	m.Handle("GET "+Prefix+"/static/", http.StripPrefix(Prefix+"/static/", http.FileServerFS(static)))
	m.HandleFunc("GET "+Prefix+"/static/code.css", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		_, _ = w.Write(h.pages.css)
	})
	m.HandleFunc(Prefix+"/login", h.loginPage)
	m.HandleFunc("POST "+Prefix+"/logout", h.guard(h.logout))
	m.HandleFunc("GET "+Prefix+"/{$}", h.guard(h.sessionsPage))
	m.HandleFunc("GET "+Prefix+"/rows", h.guard(h.sessionRows))
	m.HandleFunc("GET "+Prefix+"/live", h.guard(h.live))
	m.HandleFunc("GET "+Prefix+"/s/{id}", h.guard(h.sessionPage))
	m.HandleFunc("GET "+Prefix+"/s/{id}/export", h.guard(h.export))
	m.HandleFunc("POST "+Prefix+"/s/{id}/fork", h.guard(h.fork))
	m.HandleFunc("POST "+Prefix+"/s/{id}/replay", h.guard(h.replay))
	m.HandleFunc("POST "+Prefix+"/s/{id}/chat", h.guard(h.chat))
	m.HandleFunc("GET "+Prefix+"/new", h.guard(h.newChatPage))
	m.HandleFunc("POST "+Prefix+"/new", h.guard(h.newChat))
	m.HandleFunc("GET "+Prefix+"/lineage/{id}", h.guard(h.lineagePage))
	m.HandleFunc("GET "+Prefix+"/search", h.guard(h.searchPage))
	m.HandleFunc("GET "+Prefix+"/costs", h.guard(h.costsPage))
	m.HandleFunc("GET "+Prefix+"/gateway", h.guard(h.gatewayPage))
	m.HandleFunc("GET "+Prefix+"/cron", h.guard(h.cronPage))
	m.HandleFunc("GET "+Prefix+"/cron/{id}", h.guard(h.jobPage))
	m.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, Prefix+"/", http.StatusSeeOther) })
	h.mux = m
}

// base is what every page's layout needs.
type base struct {
	Title   string
	Nav     string
	CSRF    string
	Live    string // what the page follows live: "list" or a session id
	Gateway bool
	Cron    bool
	Chat    bool // a new chat can be started
}

func (h *Handler) base(r *http.Request, title, nav string) base {
	return base{Title: title, Nav: nav, CSRF: csrfOf(r), Gateway: h.opts.Platforms != nil, Cron: h.opts.Cron != nil, Chat: h.opts.Chat != nil}
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.pages.render(w, r, status, "error", map[string]any{"Base": h.base(r, "Error", ""), "Status": status, "Message": msg})
}

func (h *Handler) readFailed(w http.ResponseWriter, r *http.Request, what string, err error) {
	if errors.Is(err, events.ErrStreamDeleted) {
		h.fail(w, r, http.StatusNotFound, what+": the session was deleted")
		return
	}
	if errors.Is(err, r.Context().Err()) {
		return
	}
	h.log.Error().Err(err).Str("what", what).Msg("dashboard read")
	h.fail(w, r, http.StatusInternalServerError, what+": "+err.Error())
}

// filter is the sessions list's filter, from the query string.
type filter struct {
	Source, Model, Status, Since string
}

func filterOf(r *http.Request) filter {
	q := r.URL.Query()
	return filter{Source: q.Get("source"), Model: q.Get("model"), Status: q.Get("status"), Since: q.Get("since")}
}

func (f filter) keep(s sessions.Summary) bool {
	if s.ID == "" {
		return false // events outside any session (the gateway's chat index)
	}
	if f.Source != "" && s.Source != f.Source || f.Model != "" && s.Model != f.Model || f.Status != "" && s.Status != f.Status {
		return false
	}
	if f.Since != "" {
		if d, err := time.Parse("2006-01-02", f.Since); err == nil && s.LastActive.Before(d) {
			return false
		}
	}
	return true
}

type listData struct {
	Base                      base
	Filter                    filter
	Rows                      []sessions.Summary
	Sources, Models, Statuses []string
	Query                     string
}

func (h *Handler) listData(r *http.Request) (listData, error) {
	all, err := h.opts.Read.List(r.Context(), 0)
	if err != nil {
		return listData{}, err
	}
	f := filterOf(r)
	d := listData{Base: h.base(r, "Sessions", "sessions"), Filter: f, Query: r.URL.RawQuery}
	d.Base.Live = "list"
	seen := map[string]bool{}
	for _, s := range all {
		if s.ID == "" {
			continue
		}
		for _, v := range [][2]string{{"s", s.Source}, {"m", s.Model}, {"t", s.Status}} {
			if v[1] == "" || seen[v[0]+v[1]] {
				continue
			}
			seen[v[0]+v[1]] = true
			switch v[0] {
			case "s":
				d.Sources = append(d.Sources, v[1])
			case "m":
				d.Models = append(d.Models, v[1])
			case "t":
				d.Statuses = append(d.Statuses, v[1])
			}
		}
		if f.keep(s) {
			d.Rows = append(d.Rows, s)
		}
	}
	sort.Strings(d.Sources)
	sort.Strings(d.Models)
	sort.Strings(d.Statuses)
	return d, nil
}

func (h *Handler) sessionsPage(w http.ResponseWriter, r *http.Request) {
	if v := r.URL.Query().Get("since"); v != "" {
		if _, err := time.Parse("2006-01-02", v); err != nil {
			h.fail(w, r, http.StatusBadRequest, "since "+strconv.Quote(v)+": use YYYY-MM-DD")
			return
		}
	}
	d, err := h.listData(r)
	if err != nil {
		h.readFailed(w, r, "list sessions", err)
		return
	}
	h.pages.render(w, r, http.StatusOK, "sessions", d)
}

// sessionRows is the list's table body alone, for live updates.
func (h *Handler) sessionRows(w http.ResponseWriter, r *http.Request) {
	d, err := h.listData(r)
	if err != nil {
		h.readFailed(w, r, "list sessions", err)
		return
	}
	h.pages.render(w, r, http.StatusOK, "sessions#rows", d)
}

// live streams the id of every session that changes, fed by the store's
// subscription from the log's end; the page then fetches what it shows.
func (h *Handler) live(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	ctx := r.Context()
	head, err := h.opts.Store.Head(ctx)
	if err != nil {
		h.readFailed(w, r, "the log's head", err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 2000\n: live\n\n")
	fl.Flush()
	changed := make(chan string, 256)
	go func() {
		err := h.opts.Store.SubscribeAll(ctx, head, func(rec events.Recorded) error {
			id := events.SessionOf(rec.Stream)
			if id == "" {
				return nil
			}
			select {
			case changed <- id:
			case <-ctx.Done():
				return ctx.Err()
			}
			return nil
		})
		if err != nil && ctx.Err() == nil {
			h.log.Warn().Err(err).Msg("dashboard live subscription ended")
		}
		close(changed)
	}()
	life := h.life()
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-life.Done():
			return
		case <-keep.C:
			_, _ = fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		case id, ok := <-changed:
			if !ok {
				return
			}
			// Coalesce a burst (a turn writes several events at once).
			ids := []string{id}
		drain:
			for {
				select {
				case more, ok := <-changed:
					if !ok {
						break drain
					}
					if !slices.Contains(ids, more) {
						ids = append(ids, more)
					}
				default:
					break drain
				}
			}
			for _, id := range ids {
				_, _ = fmt.Fprintf(w, "event: session\ndata: %s\n\n", id)
			}
			fl.Flush()
		}
	}
}

// lookup resolves the {id} of the path; it answers the client itself.
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request) (sessions.Summary, bool) {
	id := r.PathValue("id")
	s, ok, err := h.opts.Read.Get(r.Context(), id)
	if err != nil {
		if strings.Contains(err.Error(), "ambiguous") {
			h.fail(w, r, http.StatusBadRequest, err.Error())
			return s, false
		}
		h.readFailed(w, r, "session "+id, err)
		return s, false
	}
	if !ok {
		h.fail(w, r, http.StatusNotFound, "no session "+id)
		return s, false
	}
	return s, true
}

type sessionData struct {
	Base    base
	S       sessions.Summary
	View    View
	Chat    bool
	Notice  string
	Replay  *replayResult
	ForkErr string
}

type replayResult struct {
	OK       bool
	Report   replay.Report
	Revision uint64
	Expected string
	Got      string
	Error    string
}

func (h *Handler) sessionData(w http.ResponseWriter, r *http.Request) (sessionData, bool) {
	s, ok := h.lookup(w, r)
	if !ok {
		return sessionData{}, false
	}
	evs, err := h.opts.Store.ReadStream(r.Context(), events.SessionStream(s.ID), events.Forward, 0, 0)
	if err != nil {
		h.readFailed(w, r, "events of "+s.ID, err)
		return sessionData{}, false
	}
	title := s.Title
	if title == "" {
		title = "Session " + clip(s.ID, 13)
	}
	d := sessionData{Base: h.base(r, title, "sessions"), S: s, View: build(evs), Chat: h.opts.Chat != nil}
	d.Base.Live = s.ID
	return d, true
}

func (h *Handler) sessionPage(w http.ResponseWriter, r *http.Request) {
	d, ok := h.sessionData(w, r)
	if !ok {
		return
	}
	switch r.URL.Query().Get("part") {
	case "main":
		h.pages.render(w, r, http.StatusOK, "session#main", d)
		return
	}
	d.Notice = noticeOf(r.URL.Query().Get("notice"))
	h.pages.render(w, r, http.StatusOK, "session", d)
}

// noticeOf maps the few notices a redirect may carry to their text (the
// query string never carries text that is shown as is).
func noticeOf(code string) string {
	switch code {
	case "forked":
		return "This session is a fork: its history is its parent's up to the chosen event."
	case "sent":
		return "Message sent: the answer appears here when the turn ends."
	}
	return ""
}

func (h *Handler) fork(w http.ResponseWriter, r *http.Request) {
	s, ok := h.lookup(w, r)
	if !ok {
		return
	}
	at, err := strconv.ParseUint(strings.TrimSpace(r.PostFormValue("at")), 10, 64)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, "at "+strconv.Quote(r.PostFormValue("at"))+": the number of the event the fork keeps last")
		return
	}
	evs, err := h.opts.Store.ReadStream(r.Context(), events.SessionStream(s.ID), events.Backward, events.End, 1)
	if err != nil {
		h.readFailed(w, r, "events of "+s.ID, err)
		return
	}
	if len(evs) == 0 || at > evs[0].Revision {
		last := int64(-1)
		if len(evs) > 0 {
			last = int64(evs[0].Revision)
		}
		h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("session %s has events 0 to %d; %d is past its end", s.ID, last, at))
		return
	}
	id, err := session.Fork(r.Context(), h.opts.Store, s.ID, at)
	if err != nil {
		h.readFailed(w, r, "fork "+s.ID, err)
		return
	}
	h.log.Info().Str("session", s.ID).Str("fork", id).Uint64("at", at).Msg("dashboard fork")
	http.Redirect(w, r, Prefix+"/s/"+url.PathEscape(id)+"?notice=forked", http.StatusSeeOther)
}

func (h *Handler) export(w http.ResponseWriter, r *http.Request) {
	s, ok := h.lookup(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="session-`+s.ID+`.jsonl"`)
	if _, err := session.Export(r.Context(), h.opts.Store, s.ID, w, h.opts.Blobs); err != nil {
		// Headers are gone; the log says why the download is short.
		h.log.Error().Err(err).Str("session", s.ID).Msg("dashboard export")
	}
}

func (h *Handler) replay(w http.ResponseWriter, r *http.Request) {
	d, ok := h.sessionData(w, r)
	if !ok {
		return
	}
	evs, err := h.opts.Store.ReadStream(r.Context(), events.SessionStream(d.S.ID), events.Forward, 0, 0)
	if err != nil {
		h.readFailed(w, r, "events of "+d.S.ID, err)
		return
	}
	rep, err := replay.Run(r.Context(), evs, nil)
	res := &replayResult{OK: err == nil, Report: rep}
	var div *replay.Divergence
	switch {
	case errors.As(err, &div):
		res.Revision, res.Expected, res.Got = div.Revision, div.Expected, div.Got
		res.Error = div.Error()
	case err != nil:
		res.Error = err.Error()
	}
	d.Replay = res
	h.pages.render(w, r, http.StatusOK, "session", d)
}

// chat sends the message through the API (a turn like any client's) in
// the background; the page shows the answer when its events arrive.
func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	if h.opts.Chat == nil {
		h.fail(w, r, http.StatusNotImplemented, noChat)
		return
	}
	s, ok := h.lookup(w, r)
	if !ok {
		return
	}
	text := r.PostFormValue("text")
	if strings.TrimSpace(text) == "" {
		h.fail(w, r, http.StatusBadRequest, "the message is empty")
		return
	}
	life := h.life()
	h.turns.Add(1)
	go func() {
		defer h.turns.Done()
		if err := h.opts.Chat.Continue(life, s.ID, text); err != nil && life.Err() == nil {
			h.log.Error().Err(err).Str("session", s.ID).Msg("dashboard chat turn")
		}
	}()
	http.Redirect(w, r, Prefix+"/s/"+url.PathEscape(s.ID)+"?notice=sent", http.StatusSeeOther)
}

// noChat is the answer to a chat action when no API server runs turns.
const noChat = "chatting needs the gateway's API server: run `hermes gateway run` with the API server enabled"

// newChatPage is the form that starts a new session.
func (h *Handler) newChatPage(w http.ResponseWriter, r *http.Request) {
	if h.opts.Chat == nil {
		h.fail(w, r, http.StatusNotImplemented, noChat)
		return
	}
	h.pages.render(w, r, http.StatusOK, "new", map[string]any{"Base": h.base(r, "New chat", "new")})
}

// newChat starts a session with the message through the API (a first
// turn like any client's, in the background) and, as soon as the session
// has its id, sends the browser to its page, where the answer arrives
// live.
func (h *Handler) newChat(w http.ResponseWriter, r *http.Request) {
	if h.opts.Chat == nil {
		h.fail(w, r, http.StatusNotImplemented, noChat)
		return
	}
	text := r.PostFormValue("text")
	if strings.TrimSpace(text) == "" {
		h.fail(w, r, http.StatusBadRequest, "the message is empty")
		return
	}
	life := h.life()
	started := make(chan string, 1)
	done := make(chan struct{})
	var startErr error // set before done closes
	h.turns.Add(1)
	go func() {
		defer h.turns.Done()
		defer close(done)
		id := ""
		startErr = h.opts.Chat.Start(life, text, func(s string) {
			id = s
			started <- s
		})
		if startErr != nil && life.Err() == nil {
			h.log.Error().Err(startErr).Str("session", id).Msg("dashboard new chat")
		}
	}()
	select {
	case id := <-started:
		if err := h.awaitSession(r.Context(), id, done, &startErr); err != nil {
			if r.Context().Err() == nil {
				h.fail(w, r, http.StatusBadGateway, "the chat did not start: "+err.Error())
			}
			return
		}
		h.log.Info().Str("session", id).Msg("dashboard new chat")
		http.Redirect(w, r, Prefix+"/s/"+url.PathEscape(id)+"?notice=sent", http.StatusSeeOther)
	case <-done:
		// It ended before naming a session: nothing to show but why.
		msg := "the chat did not start"
		if startErr != nil {
			msg += ": " + startErr.Error()
		}
		h.fail(w, r, http.StatusBadGateway, msg)
	case <-r.Context().Done():
	}
}

// errFound ends a subscription that saw what it waited for.
var errFound = errors.New("found")

// awaitSession waits until session id has its first event in the log: a
// turn may name its session before it writes it (a gateway whose sessions
// are created by their first turn), and the page must not be asked for
// before. It gives up when the chat ends first (with *startErr, set when
// done closes) or after 30 s.
func (h *Handler) awaitSession(ctx context.Context, id string, done <-chan struct{}, startErr *error) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	head, err := h.opts.Store.Head(ctx)
	if err != nil {
		return err
	}
	if evs, err := h.opts.Store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 1); err != nil || len(evs) > 0 {
		return err
	}
	go func() {
		select {
		case <-done:
			// The chat ended: stop waiting, look at the log once more.
			cancel()
		case <-ctx.Done():
		}
	}()
	err = h.opts.Store.SubscribeAll(ctx, head, func(rec events.Recorded) error {
		if events.SessionOf(rec.Stream) == id {
			return errFound
		}
		return nil
	})
	if errors.Is(err, errFound) {
		return nil
	}
	if evs, rerr := h.opts.Store.ReadStream(context.WithoutCancel(ctx), events.SessionStream(id), events.Forward, 0, 1); rerr == nil && len(evs) > 0 {
		return nil // written as the chat ended
	}
	select {
	case <-done:
		if *startErr != nil {
			return *startErr
		}
		return fmt.Errorf("session %s was never written", id)
	default:
	}
	if ctx.Err() != nil {
		return fmt.Errorf("session %s was not written within 30 s", id)
	}
	return err
}

// treeNode is one node of the lineage drawn as nested lists.
type treeNode struct {
	lineage.Node
	Title    string
	Current  bool
	Children []*treeNode
}

func (h *Handler) lineagePage(w http.ResponseWriter, r *http.Request) {
	s, ok := h.lookup(w, r)
	if !ok {
		return
	}
	nodes, err := h.opts.Read.Lineage(r.Context(), s.ID)
	if err != nil {
		h.readFailed(w, r, "lineage of "+s.ID, err)
		return
	}
	all, err := h.opts.Read.List(r.Context(), 0)
	if err != nil {
		h.readFailed(w, r, "list sessions", err)
		return
	}
	titles := make(map[string]string, len(all))
	for _, x := range all {
		titles[x.ID] = x.Title
	}
	byID := map[string]*treeNode{}
	var roots []*treeNode
	for _, n := range nodes {
		t := &treeNode{Node: n, Current: n.ID == s.ID, Title: titles[n.ID]}
		byID[n.ID] = t
		if p := byID[n.Parent]; p != nil {
			p.Children = append(p.Children, t)
		} else {
			roots = append(roots, t)
		}
	}
	h.pages.render(w, r, http.StatusOK, "lineage", map[string]any{"Base": h.base(r, "Lineage", "sessions"), "S": s, "Roots": roots, "Count": len(nodes)})
}

// group is the hits of one session.
type group struct {
	Session string
	// Title is the session's title ("" when it has none yet).
	Title string
	Hits  []search.Hit
}

// facet is one clickable value of a facet.
type facet struct {
	Field, Value string
	Count        int
	Link         string
	On           bool
}

func (h *Handler) searchPage(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	data := map[string]any{"Base": h.base(r, "Search", "search"), "Q": q}
	if q == "" {
		h.pages.render(w, r, http.StatusOK, "search", data)
		return
	}
	res, err := h.opts.Read.Search(r.Context(), search.Query{Text: q, Limit: 100})
	if err != nil {
		if strings.HasPrefix(err.Error(), "search ") {
			data["Error"] = err.Error()
			h.pages.render(w, r, http.StatusBadRequest, "search", data)
			return
		}
		h.readFailed(w, r, "search", err)
		return
	}
	var groups []*group
	at := map[string]*group{}
	for _, hit := range res.Hits {
		g := at[hit.Session]
		if g == nil {
			g = &group{Session: hit.Session}
			if sum, ok, err := h.opts.Read.Get(r.Context(), hit.Session); err == nil && ok {
				g.Title = sum.Title
			}
			at[hit.Session] = g
			groups = append(groups, g)
		}
		g.Hits = append(g.Hits, hit)
	}
	var facets []facet
	fields := make([]string, 0, len(res.Facets))
	for f := range res.Facets {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, f := range fields {
		vals := make([]string, 0, len(res.Facets[f]))
		for v := range res.Facets[f] {
			vals = append(vals, v)
		}
		sort.Strings(vals)
		for _, v := range vals {
			term := f + ":" + v
			if strings.ContainsAny(v, " \t\"") {
				term = f + `:"` + strings.ReplaceAll(v, `"`, ``) + `"`
			}
			on := slices.Contains(strings.Fields(q), term)
			next := q + " " + term
			if on {
				next = strings.Join(slices.DeleteFunc(strings.Fields(q), func(s string) bool { return s == term }), " ")
			}
			facets = append(facets, facet{Field: f, Value: v, Count: res.Facets[f][v], On: on, Link: Prefix + "/search?q=" + url.QueryEscape(next)})
		}
	}
	data["Total"] = res.Total
	data["Groups"] = groups
	data["Facets"] = facets
	h.pages.render(w, r, http.StatusOK, "search", data)
}

// chartRow is one bar of a costs chart.
type chartRow struct {
	Key  string
	Cost float64
	Row  costs.Row
}

type chart struct {
	Title string
	By    string
	Rows  []chartRow
	Max   float64
	Total float64
}

func (h *Handler) costsPage(w http.ResponseWriter, r *http.Request) {
	since := r.URL.Query().Get("since")
	if since == "" {
		since = time.Now().UTC().AddDate(0, 0, -29).Format("2006-01-02")
	} else if _, err := time.Parse("2006-01-02", since); err != nil {
		h.fail(w, r, http.StatusBadRequest, "since "+strconv.Quote(since)+": use YYYY-MM-DD")
		return
	}
	var charts []chart
	for _, by := range []struct{ by, title string }{{"day", "Per day"}, {"model", "Per model"}, {"provider", "Per provider"}, {"source", "Per source"}} {
		rows, err := h.opts.Read.Costs(r.Context(), by.by, since)
		if err != nil {
			h.readFailed(w, r, "costs by "+by.by, err)
			return
		}
		c := chart{Title: by.title, By: by.by}
		for _, row := range rows {
			key := row.Key
			if key == "" {
				key = "(none)"
			}
			c.Rows = append(c.Rows, chartRow{Key: key, Cost: row.Cost, Row: row})
			c.Max = max(c.Max, row.Cost)
			c.Total += row.Cost
		}
		if by.by == "day" {
			sort.Slice(c.Rows, func(i, j int) bool { return c.Rows[i].Key < c.Rows[j].Key })
		} else {
			sort.SliceStable(c.Rows, func(i, j int) bool { return c.Rows[i].Cost > c.Rows[j].Cost })
		}
		charts = append(charts, c)
	}
	today := time.Now().UTC().Format("2006-01-02")
	var spentToday float64
	for _, row := range charts[0].Rows {
		if row.Key == today {
			spentToday = row.Cost
		}
	}
	// The sessions closest to the per-session cap.
	var top []sessions.Summary
	if h.opts.Caps.PerSession > 0 {
		all, err := h.opts.Read.List(r.Context(), 0)
		if err != nil {
			h.readFailed(w, r, "list sessions", err)
			return
		}
		all = slices.DeleteFunc(all, func(s sessions.Summary) bool { return s.ID == "" })
		sort.SliceStable(all, func(i, j int) bool { return all[i].CostUSD > all[j].CostUSD })
		top = all[:min(5, len(all))]
	}
	h.pages.render(w, r, http.StatusOK, "costs", map[string]any{"Base": h.base(r, "Costs", "costs"), "Charts": charts, "Since": since,
		"Caps": h.opts.Caps, "Today": spentToday, "Top": top})
}

func (h *Handler) gatewayPage(w http.ResponseWriter, r *http.Request) {
	if h.opts.Platforms == nil {
		h.fail(w, r, http.StatusNotFound, "no gateway runs in this process")
		return
	}
	h.pages.render(w, r, http.StatusOK, "gateway", map[string]any{"Base": h.base(r, "Gateway", "gateway"), "Platforms": h.opts.Platforms()})
}

// jobRow is one scheduled job as listed.
type jobRow struct {
	*cron.Job
	Next  string
	State string
	// Running are the runs not finished yet, oldest first.
	Running []*cron.Run
}

func (h *Handler) cronPage(w http.ResponseWriter, r *http.Request) {
	if h.opts.Cron == nil {
		h.fail(w, r, http.StatusNotFound, "scheduled jobs are not available here")
		return
	}
	all, err := h.opts.Cron.Load(r.Context())
	if err != nil {
		h.readFailed(w, r, "scheduled jobs", err)
		return
	}
	var rows []jobRow
	for _, j := range all {
		if j.Removed {
			continue
		}
		next := "-"
		switch {
		case len(j.Open) > 0:
			next = "running"
		case j.Active() && j.Retry != nil:
			next = "now (retry)"
		case j.Active():
			if n := j.NextSlot(); !n.IsZero() {
				next = n.UTC().Format("2006-01-02 15:04 UTC")
			}
		}
		var running []*cron.Run
		for _, run := range j.Open {
			if !run.Finished {
				running = append(running, run)
			}
		}
		sort.Slice(running, func(a, b int) bool { return running[a].StartedAt.Before(running[b].StartedAt) })
		rows = append(rows, jobRow{Job: j, Next: next, State: j.State(), Running: running})
	}
	h.pages.render(w, r, http.StatusOK, "cron", map[string]any{"Base": h.base(r, "Scheduled jobs", "cron"), "Jobs": rows})
}

func (h *Handler) jobPage(w http.ResponseWriter, r *http.Request) {
	if h.opts.Cron == nil {
		h.fail(w, r, http.StatusNotFound, "scheduled jobs are not available here")
		return
	}
	j, err := h.opts.Cron.Find(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, http.StatusNotFound, err.Error())
		return
	}
	rs, err := h.opts.Cron.Events(r.Context(), j.ID)
	if err != nil {
		h.readFailed(w, r, "job "+j.ID, err)
		return
	}
	hist, err := cron.History(rs)
	if err != nil {
		h.readFailed(w, r, "history of job "+j.ID, err)
		return
	}
	slices.Reverse(hist)
	h.pages.render(w, r, http.StatusOK, "job", map[string]any{"Base": h.base(r, "Job "+j.Spec.Name, "cron"), "Job": j, "State": j.State(), "History": hist})
}
