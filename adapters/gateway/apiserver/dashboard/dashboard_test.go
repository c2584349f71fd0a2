package dashboard_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/gateway/apiserver/dashboard"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

const hostile = "Check <script>window.__xss=1</script> the <img src=x onerror=\"window.__xss=2\"> three stations"

const answer = "All **three** stations report 12°C.\n\n```go\nfunc main() { println(\"hi\") }\n```\n"

func TestDashboardNeedsAKey(t *testing.T) {
	if _, err := dashboard.New(dashboard.Options{}); !errors.Is(err, dashboard.ErrNoKey) {
		t.Fatalf("New without a key: %v, want ErrNoKey", err)
	}
	_, err := apiserver.New(apiserver.Options{Host: "127.0.0.1", Dashboard: &dashboard.Options{}, Log: zerolog.Nop()})
	if !errors.Is(err, dashboard.ErrNoKey) {
		t.Fatalf("API server with a dashboard and no key: %v, want ErrNoKey", err)
	}
}

func TestLoginCookieAndCSRF(t *testing.T) {
	r := newRig(t, threeTools(answer)...)
	sid := r.chat(t, "", hostile)

	// Nothing without the key: a browser is sent to the login form, other
	// clients and POSTs get 401.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	for _, c := range []struct {
		method, path, bearer string
		want                 int
	}{
		{"GET", "/dashboard/", "", http.StatusSeeOther},
		{"GET", "/dashboard/s/" + sid, "", http.StatusSeeOther},
		{"GET", "/dashboard/s/" + sid, "wrong", http.StatusUnauthorized},
		{"POST", "/dashboard/s/" + sid + "/fork", "", http.StatusUnauthorized},
		{"GET", "/dashboard/live", "wrong", http.StatusUnauthorized},
		{"GET", "/dashboard/s/" + sid + "/export", "", http.StatusSeeOther},
	} {
		req, _ := http.NewRequest(c.method, r.url+c.path, nil)
		if c.bearer != "" {
			req.Header.Set("Authorization", "Bearer "+c.bearer)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s (bearer %q): %d, want %d", c.method, c.path, c.bearer, resp.StatusCode, c.want)
		}
	}
	// The bearer key works without a login.
	if page := get(t, http.DefaultClient, r.url+"/dashboard/s/"+sid, testKey); !contains(page, "Timeline") {
		t.Fatal("the session page by bearer key has no timeline")
	}

	// A wrong key is refused; a form without its CSRF cookie too.
	if _, resp, _ := login(t, r.url, "not-the-key"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("login with a wrong key: %d, want 401", resp.StatusCode)
	}
	resp, err := http.PostForm(r.url+"/dashboard/login", url.Values{"csrf": {"00"}, "key": {testKey}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("login without the form's cookie: %d, want 403", resp.StatusCode)
	}

	b, resp, page := login(t, r.url, testKey)
	if resp.StatusCode != http.StatusOK || !contains(page, "Sessions") {
		t.Fatalf("login: %d\n%s", resp.StatusCode, page)
	}
	u, _ := url.Parse(r.url + "/dashboard/")
	var cookie *http.Cookie
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "hermes_dashboard" {
			cookie = c
		}
	}
	if cookie == nil || contains(cookie.Value, testKey) {
		t.Fatalf("session cookie %v: want a token that is not the key", cookie)
	}
	if sc := resp.Request.Response; sc != nil {
		for _, h := range sc.Header.Values("Set-Cookie") {
			if strings.HasPrefix(h, "hermes_dashboard=") && (!contains(h, "HttpOnly") || !contains(h, "SameSite=Strict")) {
				t.Fatalf("session cookie attributes: %s", h)
			}
		}
	}
	// No page holds the key.
	for _, p := range []string{"/dashboard/", "/dashboard/s/" + sid, "/dashboard/costs", "/dashboard/search?q=stations", "/dashboard/lineage/" + sid} {
		if page := get(t, b.c, r.url+p, ""); contains(page, testKey) {
			t.Fatalf("%s contains the key", p)
		}
	}

	count := func() int {
		all, err := r.read.List(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(all)
	}
	before := count()
	// A POST by cookie without the CSRF token is refused, and nothing is forked.
	resp, err = b.c.PostForm(r.url+"/dashboard/s/"+sid+"/fork", url.Values{"at": {"3"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("fork without CSRF: %d, want 403", resp.StatusCode)
	}
	resp, err = b.c.PostForm(r.url+"/dashboard/s/"+sid+"/fork", url.Values{"at": {"3"}, "csrf": {"f00"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || count() != before {
		t.Fatalf("fork with a wrong CSRF token: %d, sessions %d -> %d", resp.StatusCode, before, count())
	}
	// With it, the fork is made and the browser lands on it.
	resp, err = b.c.PostForm(r.url+"/dashboard/s/"+sid+"/fork", url.Values{"at": {"3"}, "csrf": {b.csrf(t)}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !contains(string(body), "This session is a fork") || count() != before+1 {
		t.Fatalf("fork with CSRF: %d, sessions %d -> %d\n%s", resp.StatusCode, before, count(), body)
	}
	// A fork past the end is refused with the range.
	resp, err = b.c.PostForm(r.url+"/dashboard/s/"+sid+"/fork", url.Values{"at": {"9999"}, "csrf": {b.csrf(t)}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !contains(string(body), "past its end") || count() != before+1 {
		t.Fatalf("fork past the end: %d\n%s", resp.StatusCode, body)
	}

	// Logging out ends the cookie's session.
	resp, err = b.c.PostForm(r.url+"/dashboard/logout", url.Values{"csrf": {b.csrf(t)}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodGet, r.url+"/dashboard/", nil)
	req.AddCookie(cookie)
	resp, err = noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("old cookie after logout: %d, want a redirect to the login", resp.StatusCode)
	}
}

var toolBarRe = regexp.MustCompile(`class="bar bar-tool" data-kind="tool" data-lane="(\d+)"`)

func TestSessionPageTimelineAndConversation(t *testing.T) {
	r := newRig(t, threeTools(answer)...)
	sid := r.chat(t, "", hostile)
	page := get(t, http.DefaultClient, r.url+"/dashboard/s/"+sid, testKey)

	lanes := map[string]bool{}
	for _, m := range toolBarRe.FindAllStringSubmatch(page, -1) {
		lanes[m[1]] = true
	}
	if len(lanes) != 3 {
		t.Fatalf("tool bars in lanes %v, want 3 parallel lanes", lanes)
	}
	if n := strings.Count(page, `data-kind="model"`); n != 2 {
		t.Fatalf("%d model-call bars, want 2", n)
	}
	if !contains(page, "(3 in parallel)") || !contains(page, "1000 cache read") {
		t.Fatal("the turn's caption or a model call's cache hits are missing")
	}
	// The message is shown as text, never as markup.
	if contains(page, "<script>window.__xss") || contains(page, "<img src=x") {
		t.Fatal("a message's HTML reached the page unescaped")
	}
	if !contains(page, "&lt;script&gt;window.__xss=1&lt;/script&gt;") {
		t.Fatal("the hostile message is not shown escaped")
	}
	// Markdown rendered, code highlighted, tool calls folded with their arguments.
	if !contains(page, "<strong>three</strong>") || !contains(page, `class="chroma"`) {
		t.Fatal("the answer's Markdown or its code highlighting is missing")
	}
	if !contains(page, "<details class=\"call\"><summary>Tool call <code>probe</code>") || !contains(page, "&#34;city&#34;: &#34;Lima&#34;") {
		t.Fatal("the tool calls are not folded with their arguments")
	}
	if !contains(page, "station Pune: 12°C") {
		t.Fatal("a tool result is missing")
	}

	// The list's filters.
	if page := get(t, http.DefaultClient, r.url+"/dashboard/?source=api&model=gpt-4o&status=active&since=2020-01-01", testKey); !contains(page, `data-session="`+sid+`"`) {
		t.Fatalf("filtered list lacks the session:\n%s", page)
	}
	for _, q := range []string{"source=cli", "model=other", "status=ended", "since=2999-01-01"} {
		if page := get(t, http.DefaultClient, r.url+"/dashboard/?"+q, testKey); contains(page, `data-session="`+sid+`"`) || !contains(page, "match the filter") {
			t.Fatalf("?%s still lists the session", q)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, r.url+"/dashboard/?since=yesterday", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("since=yesterday: %d, want 400", resp.StatusCode)
	}
	// Pages allow no script but the server's own.
	if csp := resp.Header.Get("Content-Security-Policy"); !contains(csp, "script-src 'self'") || contains(csp, "unsafe-inline") || !contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("Content-Security-Policy %q", csp)
	}
}

func TestReplayExportSearchCostsLineage(t *testing.T) {
	r := newRig(t, threeTools(answer)...)
	sid := r.chat(t, "", hostile)
	b, _, _ := login(t, r.url, testKey)

	// Replay: the report says the record matches.
	resp, err := b.c.PostForm(r.url+"/dashboard/s/"+sid+"/replay", url.Values{"csrf": {b.csrf(t)}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !contains(string(body), "The replay matches the record: 1 turns, 2 model calls") {
		t.Fatalf("replay report missing:\n%s", body)
	}

	// Export: one JSON line per event.
	evs, err := r.store.ReadStream(context.Background(), events.SessionStream(sid), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	exp := get(t, b.c, r.url+"/dashboard/s/"+sid+"/export", "")
	if lines := strings.Count(strings.TrimSpace(exp), "\n") + 1; lines != len(evs) {
		t.Fatalf("export has %d lines, the session %d events", lines, len(evs))
	}

	// Search: hits grouped by session under its title, facets as links
	// that add a filter.
	titled := schema.MustEnvelope(schema.Meta{SessionID: sid}, schema.SessionTitled{Title: "Weather of three stations"})
	if _, err := r.store.Append(context.Background(), events.SessionStream(sid), events.Any, titled); err != nil {
		t.Fatal(err)
	}
	page := get(t, b.c, r.url+"/dashboard/search?q=stations", "")
	if !contains(page, "<mark>station") || !contains(page, `href="/dashboard/s/`+sid+`">Weather of three stations</a>`) {
		t.Fatalf("search results:\n%s", page)
	}
	if page := get(t, b.c, r.url+"/dashboard/lineage/"+sid, ""); !contains(page, `">Weather of three stations</a>: compressions`) {
		t.Fatalf("the lineage page does not name the session by its title:\n%s", page)
	}
	facet := regexp.MustCompile(`href="/dashboard/search\?q=stations&#43;role%3Auser"`).FindStringSubmatch(page)
	if facet == nil {
		t.Fatalf("no role:user facet link:\n%s", page)
	}
	page = get(t, b.c, r.url+"/dashboard/search?q=stations+role%3Auser", "")
	if !contains(page, "1 messages match") || !contains(page, `aria-pressed="true"`) {
		t.Fatalf("after the facet:\n%s", page)
	}
	resp, err = b.c.Get(r.url + "/dashboard/search?q=%22unclosed")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !contains(string(body), `role="alert"`) || contains(string(body), "messages match") {
		t.Fatalf("a bad query: %d\n%s", resp.StatusCode, body)
	}

	// Costs: bars per day, model, provider and source, and the caps.
	page = get(t, b.c, r.url+"/dashboard/costs", "")
	for _, want := range []string{`data-by="day"`, `data-by="model"`, `class="cbar"`, "gpt-4o", `id="cap-day"`, "of $0.0500 per day"} {
		if !contains(page, want) {
			t.Fatalf("costs page lacks %q:\n%s", want, page)
		}
	}

	// Lineage: a fork hangs under its parent.
	child := forkAt(t, r, sid, 2)
	page = get(t, b.c, r.url+"/dashboard/lineage/"+child, "")
	if !regexp.MustCompile(`(?s)href="/dashboard/s/` + sid + `".*<ul role="group">.*href="/dashboard/s/` + child + `" class="node current"`).MatchString(page) {
		t.Fatalf("lineage tree:\n%s", page)
	}

	// Cron: the job, its next run, and its history.
	job, err := r.jobs.Create(context.Background(), schema.JobSpec{Name: "morning <b>brief</b>", Schedule: "0 9 * * *", Prompt: "Summarise the news", Deliver: "local"}, true, "test")
	if err != nil {
		t.Fatal(err)
	}
	page = get(t, b.c, r.url+"/dashboard/cron", "")
	if !contains(page, `data-job="`+job.ID+`"`) || !contains(page, "morning &lt;b&gt;brief&lt;/b&gt;") || !contains(page, " 09:00 UTC") {
		t.Fatalf("cron page:\n%s", page)
	}
	if page = get(t, b.c, r.url+"/dashboard/cron/"+job.ID, ""); !contains(page, "<td>created</td>") {
		t.Fatalf("job history:\n%s", page)
	}

	// Gateway: the API platform and its state.
	if page = get(t, b.c, r.url+"/dashboard/gateway", ""); !contains(page, "<td>api</td>") || !contains(page, "connected") {
		t.Fatalf("gateway page:\n%s", page)
	}
}

func forkAt(t testing.TB, r *rig, sid string, at int) string {
	t.Helper()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest(http.MethodPost, r.url+"/dashboard/s/"+sid+"/fork", strings.NewReader(url.Values{"at": {itoa(at)}}.Encode()))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/dashboard/s/") {
		t.Fatalf("fork: %d %q", resp.StatusCode, loc)
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(loc, "/dashboard/s/"), "?")
	return id
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestLiveUpdatesAndChat(t *testing.T) {
	r := newRig(t, append(threeTools(answer), llmtest.Reply{Content: "Second answer from the dashboard."})...)
	sid := r.chat(t, "", hostile)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.url+"/dashboard/live", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("live: %s", ct)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(want string) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the stream ended before %q", want)
				}
				if l == want {
					return
				}
			case <-deadline:
				t.Fatalf("no %q on the live stream", want)
			}
		}
	}
	next(": live")
	child := forkAt(t, r, sid, 2)
	next("data: " + child)

	// Continue the chat through the form: the turn runs through the API
	// and its events arrive live.
	b, _, _ := login(t, r.url, testKey)
	resp2, err := b.c.PostForm(r.url+"/dashboard/s/"+sid+"/chat", url.Values{"text": {"And tomorrow?"}, "csrf": {b.csrf(t)}})
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	next("data: " + sid)
	waitFor(t, "the dashboard's turn to answer", func() bool {
		return contains(get(t, b.c, r.url+"/dashboard/s/"+sid+"?part=main", ""), "Second answer from the dashboard.")
	})
	var s sessions.Summary
	s, _, _ = r.read.Get(context.Background(), sid)
	if s.Messages < 7 {
		t.Fatalf("session has %d messages after the dashboard's turn", s.Messages)
	}
}

// TestNewChat starts a conversation from the dashboard: the button on the
// list leads to the form, the form's message becomes the first turn of a
// new session through the API server's chat route, the browser lands on
// that session's page and the answer arrives there.
func TestNewChat(t *testing.T) {
	t.Run("created when bound", func(t *testing.T) { testNewChat(t, lazySessions{}) })
	// The session is named 300 ms before it is written: the browser is
	// sent to its page only once it is there.
	t.Run("created by its first turn", func(t *testing.T) { testNewChat(t, lazySessions{Delay: 300 * time.Millisecond}) })
}

// TestNewChatNeverWritten: a new chat whose session is named and then
// never written (its creation fails) answers 502 with the reason, not a
// redirect to a page that does not exist.
func TestNewChatNeverWritten(t *testing.T) {
	r := newRigWith(t, lazySessions{Delay: 50 * time.Millisecond, Err: errors.New("the disk is full")}, llmtest.Reply{Content: "unused"})
	b, _, _ := login(t, r.url, testKey)
	noRedirect := *b.c
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirect.PostForm(r.url+"/dashboard/new", url.Values{"text": {"hello"}, "csrf": {b.csrf(t)}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !contains(string(body), "the chat did not start") || !contains(string(body), "the disk is full") {
		t.Fatalf("a chat whose session was never written: %d %s\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
}

func testNewChat(t *testing.T, lazy lazySessions) {
	r := newRigWith(t, lazy, llmtest.Reply{Content: "Hello from a **new** chat."})
	b, _, _ := login(t, r.url, testKey)
	list := get(t, b.c, r.url+"/dashboard/", "")
	if !contains(list, `id="new-chat" href="/dashboard/new"`) || !contains(list, `class="new-chat"`) {
		t.Fatalf("no new-chat button on the sessions page:\n%s", list)
	}
	form := get(t, b.c, r.url+"/dashboard/new", "")
	m := csrfRe.FindStringSubmatch(form)
	if m == nil || !contains(form, `action="/dashboard/new"`) {
		t.Fatalf("no new-chat form:\n%s", form)
	}
	noRedirect := *b.c
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	// Failure paths: no CSRF token, an empty message. Neither starts a
	// session.
	for _, c := range []struct {
		form url.Values
		want int
	}{
		{url.Values{"text": {"hi"}}, http.StatusForbidden},
		{url.Values{"text": {"  "}, "csrf": {m[1]}}, http.StatusBadRequest},
	} {
		resp, err := noRedirect.PostForm(r.url+"/dashboard/new", c.form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Fatalf("new chat with %v: %d, want %d", c.form, resp.StatusCode, c.want)
		}
	}
	if all, _ := r.read.List(context.Background(), 0); len(all) != 0 {
		t.Fatalf("refused forms started sessions: %+v", all)
	}

	resp, err := noRedirect.PostForm(r.url+"/dashboard/new", url.Values{"text": {"Start something <b>new</b>"}, "csrf": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/dashboard/s/") || !strings.HasSuffix(loc, "?notice=sent") {
		t.Fatalf("new chat: %d %q, want a redirect to the session's page", resp.StatusCode, loc)
	}
	sid := strings.TrimSuffix(strings.TrimPrefix(loc, "/dashboard/s/"), "?notice=sent")
	// The page is there at once (the session exists when the browser is
	// sent to it).
	page := get(t, b.c, r.url+loc, "")
	if !contains(page, "Message sent") || !contains(page, `data-live="`+sid+`"`) || !contains(page, "Start something &lt;b&gt;new&lt;/b&gt;") {
		t.Fatalf("the new session's page:\n%s", page)
	}
	waitFor(t, "the new chat's answer", func() bool {
		return contains(get(t, b.c, r.url+"/dashboard/s/"+sid+"?part=main", ""), "Hello from a <strong>new</strong> chat.")
	})
	s, ok, err := r.read.Get(context.Background(), sid)
	if err != nil || !ok || s.Source != "api" || s.Messages < 2 {
		t.Fatalf("the new session: %+v %v %v", s, ok, err)
	}
}

var barRe = regexp.MustCompile(`<rect class="bar bar-(model|tool)[^"]*" data-kind="\w+" data-lane="\d+" x="([\d.]+)" y="\d+" width="([\d.]+)"`)

// TestTimelinesShareOneTimeAxis draws two turns whose tool calls took 100
// and 400 ms: on the page their bars are 1 to 4 wide, the model calls of
// 50 ms each are as wide as each other, and the axis above them has its
// ticks where the bars' times fall.
func TestTimelinesShareOneTimeAxis(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	id := uuid.NewString()
	if err := session.Create(ctx, r.store, id, session.Start{Source: "cli", Model: "gpt-4o", System: "You are Hermes."}); err != nil {
		t.Fatal(err)
	}
	// No turn yet (a new chat's page before its turn begins): no axis.
	if page := get(t, http.DefaultClient, r.url+"/dashboard/s/"+id, testKey); contains(page, `class="tl axis"`) || !contains(page, "No turns yet.") {
		t.Fatalf("a session without turns:\n%s", page)
	}
	t0 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	var batch []schema.Envelope
	turn := func(start time.Time, tool time.Duration) {
		id2 := uuid.NewString()
		add := func(at time.Duration, p schema.Payload) {
			batch = append(batch, schema.MustEnvelope(schema.Meta{SessionID: id, TurnID: id2, Time: start.Add(at)}, p))
		}
		call := schema.ToolCall{ID: "c-" + id2, Type: "function", Function: schema.FunctionCall{Name: "probe", Arguments: `{}`}}
		add(0, schema.UserMessageAdded{Content: "go"})
		add(50*ms, schema.AssistantMessageAdded{ToolCalls: []schema.ToolCall{call}, Model: "gpt-4o"})
		add(60*ms, schema.ToolCallStarted{CallID: call.ID, Name: "probe"})
		add(60*ms+tool, schema.ToolResultAdded{CallID: call.ID, Name: "probe", Content: "ok"})
		add(100*ms+tool, schema.AssistantMessageAdded{Content: "done", Model: "gpt-4o"})
		add(100*ms+tool, schema.TurnCompleted{Iterations: 2})
	}
	turn(t0, 100*ms)                  // 200 ms long
	turn(t0.Add(time.Minute), 400*ms) // 500 ms long: the axis runs to 500 ms
	if _, err := r.store.Append(ctx, events.SessionStream(id), events.Any, batch...); err != nil {
		t.Fatal(err)
	}
	page := get(t, http.DefaultClient, r.url+"/dashboard/s/"+id, testKey)

	// The axis: 0 to 500 ms, a tick every 100 ms, over the 500 units after
	// the lane labels (90 to 590).
	if !contains(page, `class="tl axis"`) || !contains(page, `data-end-ms="500"`) || !contains(page, "0 to 500 ms, a tick every 100 ms") {
		t.Fatalf("no time axis to 500 ms:\n%s", page)
	}
	for i, want := range []string{"0", "100 ms", "200 ms", "300 ms", "400 ms", "500 ms"} {
		x := strconv.Itoa(90 + i*100)
		tick := `<g class="tick" data-at-ms="` + strconv.Itoa(i*100) + `"><line x1="` + x + `"`
		if !contains(page, tick) || !contains(page, ">"+want+"</text>") {
			t.Fatalf("no tick %q at x=%s:\n%s", want, x, page)
		}
	}
	if n := strings.Count(page, `<path class="grid" d="M90 0V`); n != 2 {
		t.Fatalf("%d turns with the axis' grid, want 2", n)
	}

	var model, tool [][2]float64 // x, width
	for _, m := range barRe.FindAllStringSubmatch(page, -1) {
		x, _ := strconv.ParseFloat(m[2], 64)
		w, _ := strconv.ParseFloat(m[3], 64)
		if m[1] == "tool" {
			tool = append(tool, [2]float64{x, w})
		} else {
			model = append(model, [2]float64{x, w})
		}
	}
	if len(tool) != 2 || len(model) != 4 {
		t.Fatalf("bars: %d tool, %d model", len(tool), len(model))
	}
	// 100 and 400 ms at one unit a millisecond, both from 60 ms (x=150).
	if tool[0] != [2]float64{150, 100} || tool[1] != [2]float64{150, 400} {
		t.Fatalf("tool bars (x, width) %v, want [150 100] and [150 400]", tool)
	}
	if ratio := tool[1][1] / tool[0][1]; ratio < 3.99 || ratio > 4.01 {
		t.Fatalf("a 400 ms call is %.2f times as wide as a 100 ms one", ratio)
	}
	// The first model call of each turn: 50 ms from its start, the same bar.
	if model[0] != [2]float64{90, 50} || model[2] != model[0] {
		t.Fatalf("model bars %v: the first of each turn should be [90 50]", model)
	}
	if !contains(page, `>09:00:00</time>`) || !contains(page, `>09:01:00</time>`) {
		t.Fatal("the turns' start times are missing from their captions")
	}
}

var runLinkRe = regexp.MustCompile(`<a href="(/dashboard/s/[^"]+)" class="run" data-run="([^"]+)"`)

// TestCronLinks: on the cron page each job links to its history and each
// run (the last one, the one running) to its session; on the job's page
// each run links to its session. Every link opens the real session page.
func TestCronLinks(t *testing.T) {
	r := newRig(t, llmtest.Reply{Content: "Morning brief: all quiet."}, llmtest.Reply{Content: "Morning brief: rain later."})
	done := r.chat(t, "", "Brief me")
	running := r.chat(t, "", "Brief me again")
	ctx := context.Background()
	job, err := r.jobs.Create(ctx, schema.JobSpec{Name: "brief", Schedule: "0 9 * * *", Prompt: "Brief me", Deliver: "local"}, true, "test")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	if _, err := r.jobs.Append(ctx, job.ID, func(*cron.Job) ([]schema.Payload, error) {
		return []schema.Payload{
			schema.JobRunStarted{RunID: "run-1", ScheduledFor: at, Attempt: 1, Trigger: schema.TriggerSchedule, SessionID: done},
			schema.JobRunFinished{RunID: "run-1", Status: schema.RunOK, DurationMS: 1200, CostUSD: 0.001},
			schema.JobRunStarted{RunID: "run-2", ScheduledFor: at.Add(24 * time.Hour), Attempt: 1, Trigger: schema.TriggerManual, SessionID: running},
		}, nil
	}); err != nil {
		t.Fatal(err)
	}
	b, _, _ := login(t, r.url, testKey)
	follow := func(page string, want map[string]string) {
		t.Helper()
		got := map[string]string{}
		for _, m := range runLinkRe.FindAllStringSubmatch(page, -1) {
			got[m[2]] = m[1]
		}
		for run, sid := range want {
			link := got[run]
			if link != "/dashboard/s/"+sid {
				t.Fatalf("run %s links to %q, want its session %s:\n%s", run, link, sid, page)
			}
			if p := get(t, b.c, r.url+link, ""); !contains(p, `data-live="`+sid+`"`) || !contains(p, "Brief me") {
				t.Fatalf("%s is not the run's session page:\n%s", link, p)
			}
		}
	}
	page := get(t, b.c, r.url+"/dashboard/cron", "")
	follow(page, map[string]string{"run-1": done, "run-2": running})
	if !contains(page, `href="/dashboard/cron/`+job.ID+`#history"`) || !contains(page, `<a href="/dashboard/cron/`+job.ID+`">brief</a>`) {
		t.Fatalf("the job does not link to its history:\n%s", page)
	}
	page = get(t, b.c, r.url+"/dashboard/cron/"+job.ID, "")
	follow(page, map[string]string{"run-1": done, "run-2": running})
	if !contains(page, `id="history"`) || !contains(page, ">ok</a> · schedule · 1200 ms") || !contains(page, ">running</a> · manual") {
		t.Fatalf("the job's history:\n%s", page)
	}
}
