package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/gateway/wire"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/webhook"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

const secret = "s3cret-for-tests"

// hermesSig signs as a sender would, written out here rather than with
// webhook.Sign, so that the test checks the wire format itself.
func hermesSig(key string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(key))
	fmt.Fprintf(m, "%d.", ts)
	m.Write(body)
	return fmt.Sprintf("t=%d,v1=%s", ts, hex.EncodeToString(m.Sum(nil)))
}

func githubSig(key string, body []byte) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// receiver is the peer of a route's callback URL: it checks each call's
// signature the way a receiver would and keeps what came.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	calls  []callbackCall
	status []int // answered in turn; 200 once used up
	t      *testing.T
}

type callbackCall struct {
	Body     map[string]any
	Delivery string
	Verified bool
}

func newReceiver(t *testing.T, status ...int) *receiver {
	r := &receiver{status: status, t: t}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		c := callbackCall{Delivery: req.Header.Get("X-Hermes-Delivery")}
		sig := req.Header.Get("X-Hermes-Signature")
		parts := map[string]string{}
		for _, p := range strings.Split(sig, ",") {
			k, v, _ := strings.Cut(p, "=")
			parts[k] = v
		}
		ts, _ := strconv.ParseInt(parts["t"], 10, 64)
		c.Verified = hermesSig(secret, ts, body) == sig && time.Since(time.Unix(ts, 0)).Abs() < time.Minute
		_ = json.Unmarshal(body, &c.Body)
		r.mu.Lock()
		r.calls = append(r.calls, c)
		code := http.StatusOK
		if len(r.status) > 0 {
			code, r.status = r.status[0], r.status[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(code)
		fmt.Fprint(w, `{"ok":true}`)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) Calls() []callbackCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]callbackCall(nil), r.calls...)
}

func (r *receiver) wait(n int) []callbackCall {
	r.t.Helper()
	gatewaytest.WaitFor(r.t, fmt.Sprintf("%d callbacks", n), func() bool { return len(r.Calls()) >= n })
	return r.Calls()
}

type env struct {
	rig  *gatewaytest.Rig
	hook *webhook.Platform
	base string
}

// start runs the gateway (router, sessions, store, scripted model) with the
// webhook platform on a loopback port, and extra platforms beside it.
func start(t *testing.T, cfg webhook.Config, script []llmtest.Reply, extra ...*gatewaytest.Chat) *env {
	t.Helper()
	rig := gatewaytest.Start(t, gatewaytest.Options{Script: script})
	cfg.Addr = "127.0.0.1:0"
	if cfg.Forward == nil {
		cfg.Forward = func(ctx context.Context, out schema.Outbound) error {
			return wire.Publish(rig.Bus.Publisher, wire.Out(out.Platform), out, "")
		}
	}
	hook, err := webhook.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range extra {
		rig.Serve(c, nil)
	}
	rig.Serve(hook, nil)
	select {
	case <-hook.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the webhook listener did not start")
	}
	return &env{rig: rig, hook: hook, base: "http://" + hook.Addr()}
}

type resp struct {
	Status int
	Body   map[string]any
}

func (e *env) post(t *testing.T, route string, body []byte, h map[string]string) resp {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.base+"/webhooks/"+route, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out resp
	out.Status = res.StatusCode
	_ = json.NewDecoder(res.Body).Decode(&out.Body)
	return out
}

func signedHermes(body []byte) map[string]string {
	return map[string]string{"X-Hermes-Signature": hermesSig(secret, time.Now().Unix(), body)}
}

func refusals(t *testing.T, store events.Store) []schema.GatewayInboundRefused {
	t.Helper()
	rs, err := store.ReadStream(context.Background(), gateway.RefusedStream, events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []schema.GatewayInboundRefused
	for _, r := range rs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.(schema.GatewayInboundRefused))
	}
	return out
}

func lastUserMessage(t *testing.T, req llmtest.Request) string {
	t.Helper()
	msgs, _ := req.Body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i].(map[string]any)
		if m["role"] == "user" {
			s, _ := m["content"].(string)
			return s
		}
	}
	t.Fatalf("no user message in %s", req.Raw)
	return ""
}

const ciPrompt = `Build {{.build.id}} of {{.repository}} failed{{.missing}} on {{get . "build.branch"}}{{get . "nope.deeper"}} ({{event}}). Log tail:
{{.log}}`

func TestSignedDeliveriesReachTheAgentAndTheCallback(t *testing.T) {
	for _, form := range []string{"hermes", "github"} {
		t.Run(form, func(t *testing.T) {
			rcv := newReceiver(t)
			e := start(t, webhook.Config{Routes: []webhook.Route{{Name: "ci", Secret: secret, Prompt: ciPrompt, Deliver: rcv.URL}}},
				[]llmtest.Reply{{Content: "The test TestParse fails: fix the off-by-one in parse.go:42."}})
			body := []byte(`{"build":{"id":12345678901,"branch":"main"},"repository":"acme/app","log":"--- FAIL: TestParse"}`)
			h := signedHermes(body)
			if form == "github" {
				h = map[string]string{"X-Hub-Signature-256": githubSig(secret, body), "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
					"X-GitHub-Event": "check_run"}
			}
			res := e.post(t, "ci", body, h)
			if res.Status != http.StatusAccepted || res.Body["delivery"] == "" {
				t.Fatalf("POST: %d %v", res.Status, res.Body)
			}
			calls := rcv.wait(1)
			c := calls[0]
			if !c.Verified {
				t.Fatalf("the callback's signature does not verify: %+v", c)
			}
			if c.Body["text"] != "The test TestParse fails: fix the off-by-one in parse.go:42." || c.Body["route"] != "ci" ||
				c.Body["delivery"] != res.Body["delivery"] || c.Body["session"] == "" || c.Delivery == "" {
				t.Fatalf("callback %+v", c)
			}
			if form == "github" && c.Body["delivery"] != "72d3162e-cc78-11e3-81ab-4c9367dc0958" {
				t.Fatalf("GitHub's delivery id not kept: %v", c.Body["delivery"])
			}
			// The prompt the model got: the template over the payload, numbers
			// as written, missing fields empty.
			reqs := e.rig.LLM.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d model calls", len(reqs))
			}
			event := ""
			if form == "github" {
				event = "check_run"
			}
			want := "Build 12345678901 of acme/app failed on main (" + event + "). Log tail:\n--- FAIL: TestParse"
			if got := lastUserMessage(t, reqs[0]); got != want {
				t.Fatalf("prompt\n got %q\nwant %q", got, want)
			}
			// A normal session whose source is the webhook; the answer is
			// recorded as delivered.
			sid := c.Body["session"].(string)
			rs, _ := e.rig.Store.ReadStream(context.Background(), events.SessionStream(sid), events.Forward, 0, 1)
			if len(rs) != 1 || !strings.Contains(string(rs[0].Payload), `"source":"webhook"`) {
				t.Fatalf("session start %+v", rs)
			}
			gatewaytest.WaitFor(t, "the delivery recorded", func() bool {
				return gatewaytest.CountTypes(t, e.rig.Store, "GatewayMessageDelivered") == 1
			})
		})
	}
}

func TestBadSignaturesAreRefusedAndRecorded(t *testing.T) {
	e := start(t, webhook.Config{Routes: []webhook.Route{{Name: "ci", Secret: secret}}}, []llmtest.Reply{{Content: "must not run"}})
	body := []byte(`{"action":"deploy"}`)
	now := time.Now().Unix()
	cases := []struct {
		name   string
		h      map[string]string
		reason string
	}{
		{"none", nil, "no signature"},
		{"wrong secret", map[string]string{"X-Hermes-Signature": hermesSig("guess", now, body)}, "bad signature"},
		{"other body", map[string]string{"X-Hermes-Signature": hermesSig(secret, now, []byte(`{"action":"destroy"}`))}, "bad signature"},
		{"github wrong secret", map[string]string{"X-Hub-Signature-256": githubSig("guess", body)}, "bad signature"},
		{"github no prefix", map[string]string{"X-Hub-Signature-256": strings.TrimPrefix(githubSig(secret, body), "sha256=")}, "malformed"},
		{"not hex", map[string]string{"X-Hermes-Signature": fmt.Sprintf("t=%d,v1=zz", now)}, "malformed"},
		{"no timestamp", map[string]string{"X-Hermes-Signature": "v1=" + strings.Repeat("0", 64)}, "malformed"},
	}
	for i, c := range cases {
		h := map[string]string{"X-Hermes-Delivery": fmt.Sprintf("d-%d", i)}
		for k, v := range c.h {
			h[k] = v
		}
		res := e.post(t, "ci", body, h)
		if res.Status != http.StatusUnauthorized {
			t.Fatalf("%s: %d %v", c.name, res.Status, res.Body)
		}
		got := refusals(t, e.rig.Store)
		if len(got) != i+1 {
			t.Fatalf("%s: %d refusals recorded, want %d", c.name, len(got), i+1)
		}
		r := got[i]
		if r.Platform != "webhook" || r.Chat != "ci" || r.User != "127.0.0.1" || r.MessageID != h["X-Hermes-Delivery"] || !strings.Contains(r.Reason, c.reason) {
			t.Fatalf("%s: refusal %+v", c.name, r)
		}
	}
	if n := len(e.rig.LLM.Requests()); n != 0 {
		t.Fatalf("the model was called %d times for refused requests", n)
	}
	if n := gatewaytest.CountTypes(t, e.rig.Store, "GatewayMessageReceived"); n != 0 {
		t.Fatalf("%d refused requests entered a chat", n)
	}
	if st := e.rig.Router().Stats().Snapshot()["webhook"]; st.Refused != int64(len(cases)) {
		t.Fatalf("router stats %+v", st)
	}
	// A refused delivery id is not burnt: the real, signed delivery goes in.
	if res := e.post(t, "ci", body, map[string]string{"X-Hermes-Delivery": "d-1", "X-Hermes-Signature": hermesSig(secret, now, body)}); res.Status != http.StatusAccepted {
		t.Fatalf("signed delivery after refusals: %d %v", res.Status, res.Body)
	}
}

func TestReplaysAndStaleTimestampsAreRefused(t *testing.T) {
	e := start(t, webhook.Config{Routes: []webhook.Route{{Name: "alerts", Secret: secret}}},
		[]llmtest.Reply{{Content: "looked at it"}, {Content: "looked at the other"}})
	body := []byte(`{"alert":"disk full","host":"db1"}`)
	h := signedHermes(body)
	if res := e.post(t, "alerts", body, h); res.Status != http.StatusAccepted {
		t.Fatalf("first: %d %v", res.Status, res.Body)
	}
	// The same signed request again (no delivery header: named by what
	// the signature covers).
	res := e.post(t, "alerts", body, h)
	if res.Status != http.StatusConflict {
		t.Fatalf("replay: %d %v", res.Status, res.Body)
	}
	// GitHub's form: the delivery id names it, whatever the body.
	gh := func(b []byte) map[string]string {
		return map[string]string{"X-Hub-Signature-256": githubSig(secret, b), "X-GitHub-Delivery": "gh-1"}
	}
	if res := e.post(t, "alerts", []byte(`{"n":1}`), gh([]byte(`{"n":1}`))); res.Status != http.StatusAccepted {
		t.Fatalf("github: %d %v", res.Status, res.Body)
	}
	if res := e.post(t, "alerts", []byte(`{"n":2}`), gh([]byte(`{"n":2}`))); res.Status != http.StatusConflict {
		t.Fatalf("github replay: %d %v", res.Status, res.Body)
	}
	// Signed right, but too old or from too far in the future.
	for _, skew := range []time.Duration{-6 * time.Minute, 6 * time.Minute} {
		res := e.post(t, "alerts", body, map[string]string{"X-Hermes-Signature": hermesSig(secret, time.Now().Add(skew).Unix(), body)})
		if res.Status != http.StatusUnauthorized || !strings.Contains(fmt.Sprint(res.Body["error"]), "window") {
			t.Fatalf("skew %s: %d %v", skew, res.Status, res.Body)
		}
	}
	gatewaytest.WaitFor(t, "two answers", func() bool { return gatewaytest.CountTypes(t, e.rig.Store, "GatewayMessageDelivered") == 2 })
	time.Sleep(200 * time.Millisecond)
	if n := len(e.rig.LLM.Requests()); n != 2 {
		t.Fatalf("model called %d times, want 2 (one per accepted delivery)", n)
	}
	var reasons []string
	for _, r := range refusals(t, e.rig.Store) {
		reasons = append(reasons, r.Reason)
	}
	if len(reasons) != 4 || !strings.Contains(reasons[0], "replay") || !strings.Contains(reasons[1], "replay") ||
		!strings.Contains(reasons[2], "window") || !strings.Contains(reasons[3], "window") {
		t.Fatalf("refusals %q", reasons)
	}
}

func TestRequestsThatStartNoTurn(t *testing.T) {
	e := start(t, webhook.Config{Routes: []webhook.Route{{Name: "ci", Secret: secret, Prompt: "{{.a.b.c}}"}}}, []llmtest.Reply{{Content: "must not run"}})
	huge := bytes.Repeat([]byte("x"), 10<<20)
	for _, c := range []struct {
		name   string
		route  string
		body   []byte
		h      map[string]string
		status int
	}{
		{"10 MB", "ci", huge, signedHermes(huge), http.StatusRequestEntityTooLarge},
		{"unknown route", "nope", []byte(`{}`), signedHermes([]byte(`{}`)), http.StatusNotFound},
		{"malformed JSON", "ci", []byte(`{"a":`), signedHermes([]byte(`{"a":`)), http.StatusBadRequest},
		{"two JSON values", "ci", []byte(`{} {}`), signedHermes([]byte(`{} {}`)), http.StatusBadRequest},
		{"XML", "ci", []byte(`<a/>`), map[string]string{"X-Hermes-Signature": hermesSig(secret, time.Now().Unix(), []byte(`<a/>`)), "Content-Type": "application/xml"}, http.StatusUnsupportedMediaType},
		{"template fails", "ci", []byte(`{"a":"text"}`), signedHermes([]byte(`{"a":"text"}`)), http.StatusUnprocessableEntity},
	} {
		res := e.post(t, c.route, c.body, c.h)
		if res.Status != c.status {
			t.Fatalf("%s: %d %v, want %d", c.name, res.Status, res.Body, c.status)
		}
	}
	// A chunked body (no Content-Length) over the limit is cut off too.
	req, _ := http.NewRequest(http.MethodPost, e.base+"/webhooks/ci", io.MultiReader(bytes.NewReader(huge)))
	req.Header.Set("X-Hermes-Signature", hermesSig(secret, time.Now().Unix(), huge))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked 10 MB: %d", res.StatusCode)
	}
	// Only POST.
	get, err := http.Get(e.base + "/webhooks/ci")
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	if get.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", get.StatusCode)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(e.rig.LLM.Requests()); n != 0 {
		t.Fatalf("model called %d times", n)
	}
	if n := gatewaytest.CountTypes(t, e.rig.Store, "GatewayMessageReceived"); n != 0 {
		t.Fatalf("%d messages entered a chat", n)
	}
}

func TestGitHubPingStartsNoTurn(t *testing.T) {
	e := start(t, webhook.Config{Routes: []webhook.Route{{Name: "gh", Secret: secret}}}, nil)
	body := []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`)
	res := e.post(t, "gh", body, map[string]string{"X-Hub-Signature-256": githubSig(secret, body), "X-GitHub-Event": "ping", "X-GitHub-Delivery": "p1"})
	if res.Status != http.StatusOK || res.Body["status"] != "pong" {
		t.Fatalf("ping: %d %v", res.Status, res.Body)
	}
	// A ping with a wrong signature is refused like any request.
	res = e.post(t, "gh", body, map[string]string{"X-Hub-Signature-256": githubSig("x", body), "X-GitHub-Event": "ping"})
	if res.Status != http.StatusUnauthorized {
		t.Fatalf("bad ping: %d", res.Status)
	}
	if n := len(e.rig.LLM.Requests()); n != 0 {
		t.Fatalf("model called %d times", n)
	}
}

func TestCallbackRetriedOn5xxAndGivenUpOn4xx(t *testing.T) {
	retried := newReceiver(t, http.StatusBadGateway, http.StatusServiceUnavailable)
	refused := newReceiver(t, http.StatusNotFound)
	e := start(t, webhook.Config{Routes: []webhook.Route{
		{Name: "flaky", Secret: secret, Deliver: retried.URL + "/hook?token=abc"},
		{Name: "gone", Secret: secret, Deliver: refused.URL},
	}}, []llmtest.Reply{{Content: "answer one"}, {Content: "answer two"}})
	body := []byte(`{"x":1}`)
	if res := e.post(t, "flaky", body, signedHermes(body)); res.Status != http.StatusAccepted {
		t.Fatal(res)
	}
	calls := retried.wait(3)
	if calls[0].Delivery == "" || calls[0].Delivery != calls[1].Delivery || calls[1].Delivery != calls[2].Delivery {
		t.Fatalf("a retried callback must keep its X-Hermes-Delivery: %q %q %q", calls[0].Delivery, calls[1].Delivery, calls[2].Delivery)
	}
	gatewaytest.WaitFor(t, "delivered", func() bool { return gatewaytest.CountTypes(t, e.rig.Store, "GatewayMessageDelivered") == 1 })

	if res := e.post(t, "gone", body, signedHermes(body)); res.Status != http.StatusAccepted {
		t.Fatal(res)
	}
	gatewaytest.WaitFor(t, "failure recorded", func() bool { return gatewaytest.CountTypes(t, e.rig.Store, "GatewayDeliveryFailed") == 1 })
	time.Sleep(400 * time.Millisecond)
	if n := len(refused.Calls()); n != 1 {
		t.Fatalf("a 404 was retried: %d calls", n)
	}
	if p := gatewaytest.Payloads(t, e.rig.Store); !strings.Contains(p, "404 Not Found") || strings.Contains(p, "token=abc") {
		t.Fatalf("the failure should name the status and not the URL's query:\n%s", p)
	}
	if len(retried.Calls()) != 3 {
		t.Fatalf("%d calls after success", len(retried.Calls()))
	}
}

func TestAnswerForwardedToAnotherPlatformsChat(t *testing.T) {
	chat := gatewaytest.NewChat("testchat")
	e := start(t, webhook.Config{Routes: []webhook.Route{{Name: "alerts", Secret: secret, Prompt: "Alert: {{.title}}", Deliver: "testchat:room:42"}}},
		[]llmtest.Reply{{Content: "The disk of db1 is full: rotate the logs."}}, chat)
	body := []byte(`{"title":"disk full on db1"}`)
	if res := e.post(t, "alerts", body, signedHermes(body)); res.Status != http.StatusAccepted {
		t.Fatal(res)
	}
	got := chat.WaitReplies(t, 1)
	if got[0].Chat != "room:42" || got[0].Text != "The disk of db1 is full: rotate the logs." || got[0].ReplyID != "" || got[0].SessionID == "" {
		t.Fatalf("forwarded %+v", got[0])
	}
	gatewaytest.WaitFor(t, "delivered", func() bool { return gatewaytest.CountTypes(t, e.rig.Store, "GatewayMessageDelivered") == 1 })
}

func TestSessionPerDeliveryOrPerRoute(t *testing.T) {
	rcv := newReceiver(t)
	e := start(t, webhook.Config{Routes: []webhook.Route{
		{Name: "each", Secret: secret, Deliver: rcv.URL, Prompt: "{{.n}}"},
		{Name: "shared", Secret: secret, Deliver: rcv.URL, Prompt: "{{.n}}", Session: webhook.SessionPerRoute},
	}}, nil)
	e.rig.LLM.SetDefault(llmtest.Reply{Content: "ok"})
	sessions := map[string][]string{}
	for _, route := range []string{"each", "shared"} {
		for i := range 2 {
			body := []byte(fmt.Sprintf(`{"n":%d}`, i))
			if res := e.post(t, route, body, signedHermes(body)); res.Status != http.StatusAccepted {
				t.Fatal(res)
			}
		}
	}
	for _, c := range rcv.wait(4) {
		sessions[c.Body["route"].(string)] = append(sessions[c.Body["route"].(string)], c.Body["session"].(string))
	}
	if s := sessions["each"]; len(s) != 2 || s[0] == s[1] {
		t.Fatalf("per delivery: sessions %v", s)
	}
	if s := sessions["shared"]; len(s) != 2 || s[0] != s[1] {
		t.Fatalf("per route: sessions %v", s)
	}
}

func TestRefusalsRecordedAtABoundedRate(t *testing.T) {
	e := start(t, webhook.Config{RefusalsPerMinute: 2, Routes: []webhook.Route{{Name: "ci", Secret: secret}}}, nil)
	for range 5 {
		if res := e.post(t, "ci", []byte(`{}`), nil); res.Status != http.StatusUnauthorized {
			t.Fatal(res)
		}
	}
	if n := len(refusals(t, e.rig.Store)); n != 2 {
		t.Fatalf("%d refusals recorded, want 2", n)
	}
}

// A payload whose text reads like a gateway command (/new, /model) is
// a prompt like any other: the agent answers it.
func TestPayloadIsNeverACommand(t *testing.T) {
	rcv := newReceiver(t)
	e := start(t, webhook.Config{Routes: []webhook.Route{{Name: "issues", Secret: secret, Prompt: "{{.title}}", Deliver: rcv.URL}}},
		[]llmtest.Reply{{Content: "an answer from the agent"}})
	body := []byte(`{"title":"/model evil-model"}`)
	if res := e.post(t, "issues", body, signedHermes(body)); res.Status != http.StatusAccepted {
		t.Fatal(res)
	}
	c := rcv.wait(1)[0]
	if c.Body["text"] != "an answer from the agent" {
		t.Fatalf("callback %v", c.Body)
	}
	if got := lastUserMessage(t, e.rig.LLM.Requests()[0]); got != "Webhook issues:\n/model evil-model" {
		t.Fatalf("prompt %q", got)
	}
}
