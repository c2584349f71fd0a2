package slack_test

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack/slacktest"

	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// reactions serves reactions.add and reactions.remove on slacktest's
// customisation hook (slacktest has no handler for them), answering as
// Slack documents, and keeps the calls; with refuse set it answers
// missing_scope, as Slack does for a token without reactions:write.
type reactions struct {
	mu     sync.Mutex
	calls  []string // "add eyes C…:ts", "remove eyes C…:ts"
	refuse bool
}

func (rs *reactions) bind(c slacktest.Customize) {
	for _, method := range []string{"add", "remove"} {
		c.Handle("/reactions."+method, func(w http.ResponseWriter, r *http.Request) {
			_ = r.ParseForm()
			rs.mu.Lock()
			rs.calls = append(rs.calls, fmt.Sprintf("%s %s %s:%s", method, r.Form.Get("name"), r.Form.Get("channel"), r.Form.Get("timestamp")))
			refuse := rs.refuse
			rs.mu.Unlock()
			if refuse {
				_, _ = io.WriteString(w, `{"ok":false,"error":"missing_scope","needed":"reactions:write","provided":"chat:write"}`)
				return
			}
			_, _ = io.WriteString(w, `{"ok":true}`)
		})
	}
}

func (rs *reactions) got() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.calls...)
}

func (rs *reactions) wait(t *testing.T, n int) []string {
	t.Helper()
	gatewaytest.WaitFor(t, fmt.Sprintf("%d reactions calls", n), func() bool { return len(rs.got()) >= n })
	return rs.got()
}

// While a turn runs, the message it answers wears "eyes" (Slack has no
// typing indicator for bots); the delivered answer takes it off, and a
// failed turn's answer puts "x" in its place.
func TestReactionAcknowledgesTurn(t *testing.T) {
	rs := &reactions{}
	p := startPeer(t, rs.bind)
	hold := make(chan struct{})
	s := start(t, p, socketMode, llmtest.Reply{Content: "Done.", Wait: hold},
		llmtest.Reply{Status: http.StatusBadRequest, ErrorBody: `{"error":{"message":"bad request","type":"invalid_request_error"}}`})
	ts := p.ts()
	p.envelope("events_api", messageEvent(alice, dm, "im", "do it", ts, ""))
	msg := dm + ":" + ts
	if got := rs.wait(t, 1); got[0] != "add eyes "+msg {
		t.Fatalf("reactions while the turn runs: %q", got)
	}
	time.Sleep(100 * time.Millisecond)
	if got := rs.got(); len(got) != 1 || len(p.rec.to(dm)) != 0 {
		t.Fatalf("before the answer: reactions %q, posts %d", got, len(p.rec.to(dm)))
	}
	close(hold)
	if got := p.rec.waitPosts(t, dm, 1)[0]; got.Text != "Done." {
		t.Fatalf("answer %+v", got)
	}
	if got := rs.wait(t, 2); got[1] != "remove eyes "+msg {
		t.Fatalf("reactions after the answer: %q", got)
	}
	// A failed turn: eyes off, x on.
	ts2 := p.ts()
	p.envelope("events_api", messageEvent(alice, dm, "im", "again", ts2, ""))
	msg2 := dm + ":" + ts2
	got := rs.wait(t, 5)
	if got[2] != "add eyes "+msg2 || got[3] != "remove eyes "+msg2 || got[4] != "add x "+msg2 {
		t.Fatalf("reactions of a failed turn: %q", got)
	}
	gatewaytest.WaitFor(t, "both replies delivered", func() bool { return s.count(t, "GatewayMessageDelivered") == 2 })
}

// A token without the reactions:write scope: the first refusal turns
// reactions off, and the answers still come.
func TestReactionWithoutScopeTurnsOff(t *testing.T) {
	rs := &reactions{refuse: true}
	p := startPeer(t, rs.bind)
	start(t, p, socketMode, llmtest.Reply{Content: "one"}, llmtest.Reply{Content: "two"})
	p.envelope("events_api", messageEvent(alice, dm, "im", "first", p.ts(), ""))
	p.rec.waitPosts(t, dm, 1)
	p.envelope("events_api", messageEvent(alice, dm, "im", "second", p.ts(), ""))
	if got := p.rec.waitPosts(t, dm, 2); got[1].Text != "two" {
		t.Fatalf("answers %+v", got)
	}
	if got := rs.got(); len(got) != 1 {
		t.Fatalf("reactions calls after a missing_scope: %q", got)
	}
}
