package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestVerify(t *testing.T) {
	body := []byte(`{"a":1}`)
	now := time.Unix(1_700_000_000, 0)
	good := Sign("k", now, body)
	_, goodV1, _ := strings.Cut(good, ",")
	cases := []struct {
		name string
		h    http.Header
		want error
	}{
		{"hermes", http.Header{"X-Hermes-Signature": {good}}, nil},
		{"hermes, rotated secret listed first", http.Header{"X-Hermes-Signature": {Sign("old", now, body) + "," + goodV1}}, nil},
		{"hermes, unknown scheme ignored", http.Header{"X-Hermes-Signature": {good + ",v9=abc"}}, nil},
		{"hermes, 4 min old", http.Header{"X-Hermes-Signature": {Sign("k", now.Add(-4*time.Minute), body)}}, nil},
		{"hermes, 6 min old", http.Header{"X-Hermes-Signature": {Sign("k", now.Add(-6*time.Minute), body)}}, ErrStale},
		{"hermes, 6 min ahead", http.Header{"X-Hermes-Signature": {Sign("k", now.Add(6*time.Minute), body)}}, ErrStale},
		{"hermes, wrong key", http.Header{"X-Hermes-Signature": {Sign("x", now, body)}}, ErrBadSignature},
		{"hermes, timestamp changed", http.Header{"X-Hermes-Signature": {strings.Replace(good, "t=1700000000", "t=1700000001", 1)}}, ErrBadSignature},
		{"hermes, no v1", http.Header{"X-Hermes-Signature": {"t=1700000000"}}, ErrMalformed},
		{"hermes, bad t", http.Header{"X-Hermes-Signature": {"t=yesterday," + goodV1}}, ErrMalformed},
		{"hermes, junk", http.Header{"X-Hermes-Signature": {"junk"}}, ErrMalformed},
		{"github", http.Header{"X-Hub-Signature-256": {SignGitHub("k", body)}}, nil},
		{"github, wrong key", http.Header{"X-Hub-Signature-256": {SignGitHub("x", body)}}, ErrBadSignature},
		{"github, sha1 form", http.Header{"X-Hub-Signature-256": {"sha1=00"}}, ErrMalformed},
		{"github, truncated", http.Header{"X-Hub-Signature-256": {SignGitHub("k", body)[:21]}}, ErrBadSignature},
		{"hermes wins over github", http.Header{"X-Hermes-Signature": {Sign("x", now, body)}, "X-Hub-Signature-256": {SignGitHub("k", body)}}, ErrBadSignature},
		{"none", http.Header{}, ErrNoSignature},
	}
	for _, c := range cases {
		err := Verify("k", c.h, body, now, DefaultWindow)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

func TestDecodePayload(t *testing.T) {
	cases := []struct {
		ctype, body string
		want        string // fmt of the decoded value, or "error"
	}{
		{"application/json", `{"n":12345678901,"f":1.5}`, "map[f:1.5 n:12345678901]"},
		{"application/json; charset=utf-8", `[1,2]`, "[1 2]"},
		{"application/vnd.github+json", `{"a":true}`, "map[a:true]"},
		{"", `{"a":"b"}`, "map[a:b]"},
		{"application/json", ``, "map[]"},
		{"application/json", `{"a":`, "error"},
		{"application/json", `{"a":1} x`, "error"},
		{"application/x-www-form-urlencoded", `a=1&b=2&b=3`, "map[a:1 b:[2 3]]"},
		{"application/x-www-form-urlencoded", `payload=%7B%22action%22%3A%22opened%22%7D`, "map[action:opened]"},
		{"application/x-www-form-urlencoded", `payload=not-json`, "map[payload:not-json]"},
		{"application/x-www-form-urlencoded", `a=%zz`, "error"},
		{"application/xml", `<a/>`, "error"},
		{"multipart/form-data; boundary=x", `--x--`, "error"},
		{"nonsense/", `{}`, "error"},
	}
	for _, c := range cases {
		v, err := decodePayload(c.ctype, []byte(c.body))
		got := fmt.Sprint(v)
		if err != nil {
			got = "error"
		}
		if got != c.want {
			t.Errorf("%q %q: got %s (%v), want %s", c.ctype, c.body, got, err, c.want)
		}
	}
}

func TestRender(t *testing.T) {
	payload, err := decodePayload("application/json", []byte(`{"pr":{"title":"Fix it","head":{"ref":"fix-1"}},"labels":["a","b"],"nothing":null,"big":12345678901}`))
	if err != nil {
		t.Fatal(err)
	}
	m := meta{route: "gh", delivery: "d1", event: "pull_request"}
	cases := []struct{ tmpl, want string }{
		{"{{.pr.title}} ({{.pr.head.ref}})", "Fix it (fix-1)"},
		{"[{{.missing}}][{{.nothing}}][{{.pr.missing}}]", "[][][]"},
		{`{{get . "pr.head.ref"}}|{{get . "issue.title"}}|{{get . "labels.x"}}`, "fix-1||"},
		{`{{default "none" .missing}} {{default "none" .pr.title}}`, "none Fix it"},
		{`{{range .labels}}#{{.}} {{end}}`, "#a #b"},
		{`{{route}}/{{delivery}}/{{event}}`, "gh/d1/pull_request"},
		{`{{.big}}`, "12345678901"},
		{`{{truncate 3 "héllo"}}`, "hé…"},
		{`{{json .labels}}`, "[\n  \"a\",\n  \"b\"\n]"},
		// Never a gateway command, whatever the payload says.
		{`  /new {{.pr.title}}`, "Webhook gh:\n/new Fix it"},
	}
	for _, c := range cases {
		tm, err := compilePrompt("t", c.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", c.tmpl, err)
		}
		got, err := render(tm, payload, m)
		if err != nil || got != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.tmpl, got, err, c.want)
		}
	}
	// A missing object's field fails: {{with}} or get guard it.
	tm, _ := compilePrompt("t", "{{.issue.title}}")
	if _, err := render(tm, payload, m); err == nil {
		t.Error("a field of a missing object rendered")
	}
	// Output is bounded.
	tm, _ = compilePrompt("t", `{{range .labels}}{{json $}}{{end}}`)
	big := map[string]any{"labels": make([]any, 10_000), "pad": strings.Repeat("x", 100)}
	if _, err := render(tm, big, m); !errors.Is(err, errPromptTooLong) {
		t.Errorf("unbounded output: %v", err)
	}
	// Without a template, the payload itself, quoted and clipped.
	got, err := render(nil, map[string]any{"k": strings.Repeat("v", 40<<10)}, m)
	if err != nil || !strings.HasPrefix(got, "Webhook gh (pull_request event) delivered this payload:") || len(got) > maxQuotedBytes+200 ||
		!strings.Contains(got, "(clipped)") {
		t.Errorf("default prompt: %v %d %q", err, len(got), got[:80])
	}
}

func TestSeenSetForgetsOldAndExcess(t *testing.T) {
	s := newSeenSet(time.Hour, 3)
	t0 := time.Unix(0, 0)
	for i, k := range []string{"a", "b", "c"} {
		if !s.add(k, t0.Add(time.Duration(i)*time.Minute)) {
			t.Fatalf("%s: not new", k)
		}
	}
	if s.add("a", t0.Add(5*time.Minute)) {
		t.Fatal("a replay within the memory was new")
	}
	s.add("d", t0.Add(6*time.Minute))
	s.add("e", t0.Add(7*time.Minute)) // over 3 entries: a goes
	if !s.add("a", t0.Add(8*time.Minute)) {
		t.Fatal("the oldest entry was kept past the limit")
	}
	if !s.add("d", t0.Add(2*time.Hour)) {
		t.Fatal("an entry was kept past its time")
	}
	s.forget("d")
	if !s.add("d", t0.Add(2*time.Hour)) {
		t.Fatal("a forgotten entry was still there")
	}
}

func TestBucket(t *testing.T) {
	b := newBucket(2, time.Minute)
	t0 := time.Unix(0, 0)
	if !b.take(t0) || !b.take(t0) || b.take(t0) {
		t.Fatal("the first two only")
	}
	if !b.take(t0.Add(30 * time.Second)) {
		t.Fatal("a token comes back after half a minute")
	}
}

func TestNewRejectsBadRoutes(t *testing.T) {
	cases := []struct {
		r    Route
		want string
	}{
		{Route{Name: "ci"}, "routes.ci.secret"},
		{Route{Name: "a/b", Secret: "s"}, "route name"},
		{Route{Name: "ci", Secret: "s", Deliver: "telegram"}, "PLATFORM:CHAT"},
		{Route{Name: "ci", Secret: "s", Deliver: "webhook:other"}, "cannot deliver to a webhook"},
		{Route{Name: "ci", Secret: "s", Deliver: "telegram:1"}, "no bus"},
		{Route{Name: "ci", Secret: "s", Deliver: "https://"}, "not a URL"},
		{Route{Name: "ci", Secret: "s", Session: "forever"}, "session"},
		{Route{Name: "ci", Secret: "s", Prompt: "{{.a"}, "routes.ci.prompt"},
	}
	for _, c := range cases {
		_, err := New(Config{Routes: []Route{c.r}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %q", c.r, err, c.want)
		}
	}
	if _, err := New(Config{}); err == nil {
		t.Error("no routes accepted")
	}
	if _, err := New(Config{Routes: []Route{{Name: "a", Secret: "s"}, {Name: "a", Secret: "s"}}}); err == nil {
		t.Error("a route defined twice")
	}
}
