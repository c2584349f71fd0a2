package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/tool"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
)

// Wait bounds every wait of the suite for something that should happen.
const Wait = 30 * time.Second

// settle is how long the suite watches for something that must not happen
// (a second copy of an answer, a reply to a stranger): a negative can only
// be observed over some time.
const settle = 700 * time.Millisecond

// Run runs every case of the suite against peer, each as a subtest.
func Run(t *testing.T, peer Peer) {
	cases := []struct {
		c   Case
		run func(*env)
	}{
		{CaseAnswer, caseAnswer},
		{CasePairing, casePairing},
		{CaseSplit, caseSplit},
		{CaseFormatting, caseFormatting},
		{CaseNewAndStop, caseNewAndStop},
		{CaseGroupMention, caseGroupMention},
		{CaseApproval, caseApproval},
		{CasePeerRestart, casePeerRestart},
		{CaseCrash, caseCrash},
	}
	caps := peer.Caps()
	for _, tc := range cases {
		t.Run(string(tc.c), func(t *testing.T) {
			if why, ok := caps.Unsupported[tc.c]; ok {
				if strings.TrimSpace(why) == "" {
					t.Fatalf("%s declares case %s unsupported without a reason", peer.Name(), tc.c)
				}
				t.Skipf("%s: %s", peer.Name(), why)
			}
			e := &env{t: t, peer: peer, caps: caps, dir: t.TempDir()}
			e.users = peer.Users(t)
			tc.run(e)
		})
	}
}

// env is one case's gateway and users.
type env struct {
	t     *testing.T
	peer  Peer
	caps  Caps
	users Users
	dir   string

	rig     *gatewaytest.Rig
	llm     *llmtest.Server
	gate    chan struct{}
	started chan struct{}
}

// start starts the gateway (on the case's store directory) with a model
// answering script, and serves a fresh adapter on it.
func (e *env) start(cfg gateway.Config, script ...llmtest.Reply) {
	t := e.t
	t.Helper()
	if cfg.Auth.Platform == nil {
		cfg.Auth = gateway.Auth{Pairing: true, Platform: map[string][]string{e.peer.Name(): {e.users.Alice.ID(), e.users.Bob.ID()}}}
	}
	cfg.TypingEvery = time.Hour
	e.llm = llmtest.New(script...)
	t.Cleanup(e.llm.Close)
	if e.gate == nil {
		e.gate, e.started = make(chan struct{}), make(chan struct{}, 4)
	}
	tools := []tool.Tool{gatewaytest.ApprovalTool(&terminal.Approver{Timeout: Wait}), gateTool{e.gate, e.started}, slowTool{e.started}}
	e.rig = gatewaytest.Start(t, gatewaytest.Options{Dir: e.dir, LLM: e.llm, Config: cfg, Tools: tools})
	p := e.peer.NewPlatform(t)
	if p.Name() != e.peer.Name() {
		t.Fatalf("the peer is called %q, its adapter %q", e.peer.Name(), p.Name())
	}
	served := e.rig.Serve(p, nil)
	if c, ok := p.(gw.Connector); ok {
		e.waitFor("the adapter to connect", func() bool { return c.Connected() }, func() string {
			return "last error: " + served.Status().LastError
		})
	}
}

// crash stops the whole gateway at once — the adapter, the router and the
// sessions, with no draining of what is in flight — and closes the store,
// as a killed process leaves them; the next start reopens the store.
func (e *env) crash() {
	e.rig.Stop()
	e.llm.Close()
}

func (e *env) waitFor(what string, cond func() bool, detail func() string) {
	e.t.Helper()
	deadline := time.Now().Add(Wait)
	for !cond() {
		if time.Now().After(deadline) {
			d := ""
			if detail != nil {
				d = ": " + detail()
			}
			e.t.Fatalf("waited %s for %s%s", Wait, what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// send has u send text to where.
func (e *env) send(u User, where Where, text string) {
	e.t.Helper()
	if err := u.Send(context.Background(), where, text); err != nil {
		e.t.Fatalf("%s sends %q to the %s: %v", u.ID(), text, where, err)
	}
}

func (e *env) received(u User, where Where) []Message {
	e.t.Helper()
	ms, err := u.Received(context.Background(), where)
	if err != nil {
		e.t.Fatalf("what %s received in the %s: %v", u.ID(), where, err)
	}
	return ms
}

// waitMessages waits until u has received at least n messages in where.
func (e *env) waitMessages(u User, where Where, n int) []Message {
	e.t.Helper()
	var ms []Message
	e.waitFor(fmt.Sprintf("%d messages to %s in the %s", n, u.ID(), where), func() bool {
		ms = e.received(u, where)
		return len(ms) >= n
	}, func() string { return texts(ms) })
	return ms
}

// waitText waits until u has received a message containing text in where
// and returns the first such.
func (e *env) waitText(u User, where Where, text string) Message {
	e.t.Helper()
	var ms []Message
	var found Message
	e.waitFor(fmt.Sprintf("a message with %q to %s in the %s", text, u.ID(), where), func() bool {
		ms = e.received(u, where)
		for _, m := range ms {
			if strings.Contains(m.Text, text) {
				found = m
				return true
			}
		}
		return false
	}, func() string { return texts(ms) })
	return found
}

// quiet checks that u receives nothing beyond n messages in where over a
// while, and returns them.
func (e *env) quiet(u User, where Where, n int) []Message {
	e.t.Helper()
	time.Sleep(settle)
	ms := e.received(u, where)
	if len(ms) != n {
		e.t.Fatalf("%s has %d messages in the %s, want %d:%s", u.ID(), len(ms), where, n, texts(ms))
	}
	return ms
}

func (e *env) count(typ string) int {
	e.t.Helper()
	return gatewaytest.CountTypes(e.t, e.rig.Store, typ)
}

func (e *env) waitCount(typ string, n int) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("%d %s events", n, typ), func() bool { return e.count(typ) >= n }, nil)
}

// lastUserText is the text of the last user message of the last model call.
func (e *env) lastUserText() string {
	e.t.Helper()
	reqs := e.llm.Requests()
	if len(reqs) == 0 {
		e.t.Fatal("no model call")
	}
	return userTexts(reqs[len(reqs)-1])
}

// userTexts joins the user messages a model call carried.
func userTexts(r llmtest.Request) string {
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(r.Raw, &body)
	var out []string
	for _, m := range body.Messages {
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			out = append(out, s)
			continue
		}
		var parts []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(m.Content, &parts)
		for _, p := range parts {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

func texts(ms []Message) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "\n  %q", m.Text)
	}
	return b.String()
}

func count(ms []Message, text string) int {
	n := 0
	for _, m := range ms {
		if strings.TrimSpace(m.Text) == text {
			n++
		}
	}
	return n
}
