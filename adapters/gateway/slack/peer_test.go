package slack_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slacktest"
)

// The peer of these tests is slacktest, slack-go's own in-process test
// server for the Slack Web API and its WebSocket (not Slack): auth.test,
// chat.postMessage, apps.connections.open and a WebSocket to which a test
// pushes Socket Mode envelopes in Slack's documented format. What the
// adapter posts is read from the chat.postMessage exchanges with it (the
// request's form and slacktest's answer). Flows slacktest does not serve —
// the Events API, slash commands and interactivity over HTTP — are tested
// by posting correctly signed requests in Slack's documented wire format
// to the adapter's endpoint.

// Ids of the workspace the tests play in. slacktest's auth.test answers
// that the bot's user is botID (its "non-bot" user W012A3CDE: the id the
// adapter learns, and the one mentions name).
const (
	botID   = "W012A3CDE"
	alice   = "UALICE01"
	bob     = "UBOB0002"
	dm      = "D0ALICE1"
	channel = "C0GENERAL"
	secret  = "8f742231b10e8888abcd99yyyzzz85a5"
	// Tokens in the shape Slack issues; slacktest accepts any.
	botToken = "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy"
	appToken = "xapp-1-A0123456789-1234567890123-0123456789abcdef0123456789abcdef"
)

// post is one chat.postMessage call as slacktest received and answered it.
type post struct {
	Channel, Text, ThreadTS, Blocks string
	OK                              bool
	TS                              string
}

// recorder sits between the adapter and slacktest and keeps the
// chat.postMessage exchanges.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	ps   []post
	// down refuses every request (Slack unreachable), for the restart case;
	// opens counts apps.connections.open calls (Socket Mode connections).
	down  atomic.Bool
	opens atomic.Int64
	// bodies holds every request body sent, to check no secret leaks.
	bodies strings.Builder
	// uniqueTS gives each post a ts of its own, as Slack's are
	// ("seconds.micros"): slacktest answers the second only, the same for
	// two posts in one second, which an update could not tell apart.
	uniqueTS atomic.Bool
	seq      atomic.Int64
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.down.Load() {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	if strings.HasSuffix(req.URL.Path, "/apps.connections.open") {
		r.opens.Add(1)
	}
	if !strings.HasSuffix(req.URL.Path, "/chat.postMessage") || req.Body == nil {
		return r.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	vals, _ := url.ParseQuery(string(body))
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	rb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	var ans struct {
		OK bool   `json:"ok"`
		TS string `json:"ts"`
	}
	_ = json.Unmarshal(rb, &ans)
	if r.uniqueTS.Load() && ans.TS != "" && !strings.Contains(ans.TS, ".") {
		unique := fmt.Sprintf("%s.%06d", ans.TS, r.seq.Add(1))
		rb = bytes.Replace(rb, []byte(`"ts":"`+ans.TS+`"`), []byte(`"ts":"`+unique+`"`), 1)
		resp.Body = io.NopCloser(bytes.NewReader(rb))
		resp.ContentLength = int64(len(rb))
		resp.Header.Del("Content-Length")
		ans.TS = unique
	}
	r.mu.Lock()
	r.ps = append(r.ps, post{Channel: vals.Get("channel"), Text: vals.Get("text"), ThreadTS: vals.Get("thread_ts"),
		Blocks: vals.Get("blocks"), OK: ans.OK && resp.StatusCode == http.StatusOK, TS: ans.TS})
	r.mu.Unlock()
	return resp, nil
}

func (r *recorder) posts() []post {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]post(nil), r.ps...)
}

// to returns the posts to channel.
func (r *recorder) to(ch string) []post {
	var out []post
	for _, p := range r.posts() {
		if p.Channel == ch {
			out = append(out, p)
		}
	}
	return out
}

// waitPosts waits until channel has n posts and returns them.
func (r *recorder) waitPosts(t testing.TB, ch string, n int) []post {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if ps := r.to(ch); len(ps) >= n {
			return ps
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("waited 20 s for %d posts to %s, got %+v", n, ch, r.to(ch))
	return nil
}

// peer is a running slacktest server.
type peer struct {
	srv  *slacktest.Server
	rec  *recorder
	mu   sync.Mutex
	acks map[string]string // envelope id → the ack frame
	seq  atomic.Int64
}

// startPeer starts slacktest. binders customise its answers (slacktest's
// own hook), for the failure tests.
func startPeer(t testing.TB, binders ...slacktest.Binder) *peer {
	t.Helper()
	p := &peer{srv: slacktest.NewTestServer(binders...), rec: &recorder{base: http.DefaultTransport}, acks: map[string]string{}}
	p.srv.Start()
	done := make(chan struct{})
	t.Cleanup(func() { close(done); p.srv.Stop() })
	// slacktest hands every frame a client writes (Socket Mode acks) to
	// SeenFeed, unbuffered: read them, or its WebSocket reader stalls.
	go func() {
		for {
			select {
			case m := <-p.srv.SeenFeed:
				var ack struct {
					EnvelopeID string `json:"envelope_id"`
				}
				if json.Unmarshal([]byte(m), &ack) == nil && ack.EnvelopeID != "" {
					p.mu.Lock()
					p.acks[ack.EnvelopeID] = m
					p.mu.Unlock()
				}
			case <-done:
				return
			}
		}
	}()
	return p
}

func (p *peer) url() string { return p.srv.GetAPIURL() }

func (p *peer) client() *http.Client { return &http.Client{Transport: p.rec} }

func (p *peer) acked(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.acks[id]
	return ok
}

// ack returns the frame that acknowledged envelope id ("" if none yet).
func (p *peer) ack(id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acks[id]
}

// ts returns a fresh Slack message timestamp.
func (p *peer) ts() string {
	return fmt.Sprintf("1700000%03d.%06d", p.seq.Add(1)%1000, p.seq.Load())
}

// envelope pushes a Socket Mode envelope over slacktest's WebSocket and
// returns its id.
func (p *peer) envelope(typ string, payload any) string {
	id := fmt.Sprintf("env-%d", p.seq.Add(1))
	raw, _ := json.Marshal(map[string]any{"envelope_id": id, "type": typ, "accepts_response_payload": typ != "events_api", "payload": payload})
	p.srv.SendToWebsocket(string(raw))
	return id
}

// messageEvent is an Events API event_callback carrying a message event.
func messageEvent(user, ch, chType, text, ts, thread string) map[string]any {
	ev := map[string]any{"type": "message", "user": user, "text": text, "ts": ts, "channel": ch, "channel_type": chType, "event_ts": ts}
	if thread != "" {
		ev["thread_ts"] = thread
	}
	return callback(ev)
}

func mentionEvent(user, ch, text, ts, thread string) map[string]any {
	ev := map[string]any{"type": "app_mention", "user": user, "text": "<@" + botID + "> " + text, "ts": ts, "channel": ch, "event_ts": ts}
	if thread != "" {
		ev["thread_ts"] = thread
	}
	return callback(ev)
}

func callback(ev map[string]any) map[string]any {
	return map[string]any{"token": "verification-token", "team_id": "T024BE7LD", "api_app_id": "A0123456789", "event": ev,
		"type": "event_callback", "event_id": fmt.Sprintf("Ev%d", time.Now().UnixNano()), "event_time": time.Now().Unix()}
}

// click is a block_actions interaction: user pressed the button of value
// in the actions block blockID of a message in ch.
func click(user, ch, blockID, value string) map[string]any {
	choice := strings.TrimPrefix(value, "approval:")
	return map[string]any{
		"type": "block_actions", "user": map[string]any{"id": user, "name": user}, "api_app_id": "A0123456789",
		"token": "verification-token", "trigger_id": "13345224609.738474920.8088930838d88f008e0",
		"container": map[string]any{"type": "message", "message_ts": "1700000000.000001", "channel_id": ch, "is_ephemeral": false},
		"channel":   map[string]any{"id": ch, "name": "x"},
		"actions": []map[string]any{{"action_id": "hermes_approval_" + choice, "block_id": blockID, "value": value, "type": "button",
			"text": map[string]any{"type": "plain_text", "text": choice}, "action_ts": "1700000001.000002"}},
	}
}

// signed posts body to the adapter's endpoint as Slack does: the
// X-Slack-Signature header is v0= and the hex HMAC-SHA256 of
// "v0:<timestamp>:<body>" under the signing secret.
func signed(t testing.TB, endpoint, contentType string, body []byte, key string, at time.Time) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	stamp := fmt.Sprint(at.Unix())
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte("v0:" + stamp + ":" + string(body)))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Slack-Request-Timestamp", stamp)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func signedJSON(t testing.TB, endpoint string, v any) *http.Response {
	t.Helper()
	raw, _ := json.Marshal(v)
	return signed(t, endpoint, "application/json", raw, secret, time.Now())
}

func signedForm(t testing.TB, endpoint string, vals url.Values) *http.Response {
	t.Helper()
	return signed(t, endpoint, "application/x-www-form-urlencoded", []byte(vals.Encode()), secret, time.Now())
}

// blocks decodes a post's Block Kit blocks.
func blocks(t testing.TB, p post) slackapi.Blocks {
	t.Helper()
	var b slackapi.Blocks
	if err := json.Unmarshal([]byte(p.Blocks), &b); err != nil {
		t.Fatalf("blocks %q: %v", p.Blocks, err)
	}
	return b
}
