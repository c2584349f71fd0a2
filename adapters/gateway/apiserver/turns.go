package apiserver

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/actors/tool"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// A request's answer comes back through Send, on the gateway's delivery
// goroutine, which serves every chat of the platform in turn: Send never
// waits for an HTTP client. It files what arrived with the request's
// waiter (a growing list and a wake-up channel of one) and returns; the
// handler, on the request's own goroutine, writes it to the client at the
// client's pace.

// waiter is one HTTP request waiting for its turn's answer.
type waiter struct {
	id   string // the Inbound's MessageID
	chat string

	mu      sync.Mutex
	public  string // the id the client sees (chatcmpl-…, resp_…)
	items   []item
	final   *schema.Outbound
	session string
	started bool
	wake    chan struct{}
}

// item is a piece of the answer: a delta of text, or a question the agent
// asks (an approval) that the client should see while it waits.
type item struct {
	question bool
	text     string
}

func newWaiter(id, chat string) *waiter {
	return &waiter{id: id, chat: chat, wake: make(chan struct{}, 1)}
}

func (w *waiter) notify() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *waiter) push(it item) {
	w.mu.Lock()
	w.items = append(w.items, it)
	w.mu.Unlock()
	w.notify()
}

// ids are the platform ids of a delivery: the id the client sees, once
// there is one.
func (w *waiter) ids() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.public == "" {
		return nil
	}
	return []string{w.public}
}

// take returns what arrived since the last call.
func (w *waiter) take() (items []item, final *schema.Outbound, session string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	items, w.items = w.items, nil
	return items, w.final, w.session
}

// question is a tool's question waiting in a chat (an approval of a
// dangerous command, a clarification).
type question struct {
	Key     string   `json:"-"`
	Chat    string   `json:"-"`
	Session string   `json:"session_id"`
	Kind    string   `json:"kind"`
	Text    string   `json:"question"`
	Choices []string `json:"choices,omitempty"`
}

// approvalHint is how the router closes an approval question for chat
// platforms; the API answers it elsewhere.
const approvalHint = "\n\nReply /approve"

// Approval answers the router takes.
var approvalChoices = []string{"once", "session", "always", "deny"}

// correlation keeps the requests in flight and what the router told about
// their chats.
type correlation struct {
	mu sync.Mutex
	// waiting: message id → request.
	waiting map[string]*waiter
	// chatOf: session → the chat it is bound to (a session continued with
	// X-Hermes-Session-Id goes to the same chat, so one chat actor keeps a
	// conversation and its questions).
	chatOf map[string]string
	// running: chat → message id of the turn in flight.
	running map[string]string
	// questions: chat → the question waiting for an answer.
	questions map[string]*question
	// abandoned: message ids whose client left before their turn began.
	abandoned map[string]bool
}

func newCorrelation() *correlation {
	return &correlation{waiting: map[string]*waiter{}, chatOf: map[string]string{}, running: map[string]string{},
		questions: map[string]*question{}, abandoned: map[string]bool{}}
}

// errNobodyWaits is a reply whose request is gone (its client left, or it
// was sent again after a restart): permanent, so the router records the
// delivery as failed at once; the answer stays in the session.
var errNobodyWaits = errors.New("no API client is waiting for this reply")

// deliver files out with its request. stop is called (outside the lock)
// with the session to stop when a turn began whose client already left.
func (c *correlation) deliver(out schema.Outbound, stop func(session string)) ([]string, error) {
	switch out.Kind {
	case schema.OutboundTyping:
		c.mu.Lock()
		c.learn(out)
		c.running[out.Chat] = out.InReplyTo
		w := c.waiting[out.InReplyTo]
		left := c.abandoned[out.InReplyTo]
		c.mu.Unlock()
		if w != nil {
			w.mu.Lock()
			fresh := !w.started
			w.started, w.session = true, out.SessionID
			w.mu.Unlock()
			if fresh {
				w.notify()
			}
		}
		if left && out.SessionID != "" {
			stop(out.SessionID)
		}
		return nil, nil
	case schema.OutboundDelta:
		c.mu.Lock()
		c.learn(out)
		w := c.waiting[out.InReplyTo]
		left := c.abandoned[out.InReplyTo]
		c.mu.Unlock()
		if left && out.SessionID != "" {
			// A stop sent as the turn began may have reached the session
			// before the turn did: stop again while it still talks.
			stop(out.SessionID)
		}
		if w != nil {
			w.mu.Lock()
			w.started, w.session = true, out.SessionID
			w.mu.Unlock()
			w.push(item{text: out.Text})
		}
		return nil, nil
	case schema.OutboundApproval:
		q := &question{Key: out.Key, Chat: out.Chat, Session: out.SessionID, Kind: tool.QuestionClarify, Text: out.Text, Choices: out.Choices}
		if text, _, ok := strings.Cut(out.Text, approvalHint); ok {
			q.Kind, q.Text = tool.QuestionApproval, text
		}
		c.mu.Lock()
		c.learn(out)
		c.questions[out.Chat] = q
		w := c.waiting[c.running[out.Chat]]
		c.mu.Unlock()
		if w != nil {
			w.push(item{question: true, text: q.Text})
			return w.ids(), nil
		}
		return nil, nil
	case schema.OutboundReply:
		c.mu.Lock()
		c.learn(out)
		if c.running[out.Chat] == out.InReplyTo {
			delete(c.running, out.Chat)
		}
		delete(c.questions, out.Chat)
		w := c.waiting[out.InReplyTo]
		delete(c.waiting, out.InReplyTo)
		delete(c.abandoned, out.InReplyTo)
		c.mu.Unlock()
		if w == nil {
			return nil, &gw.PermanentError{Err: errNobodyWaits}
		}
		w.mu.Lock()
		o := out
		w.final = &o
		if out.SessionID != "" {
			w.session = out.SessionID
		}
		w.mu.Unlock()
		w.notify()
		return w.ids(), nil
	}
	return nil, &gw.PermanentError{Err: fmt.Errorf("the API server delivers no %q messages", out.Kind)}
}

// learn records which chat a session is bound to. Locked.
func (c *correlation) learn(out schema.Outbound) {
	if out.SessionID != "" && out.Chat != "" {
		c.chatOf[out.SessionID] = out.Chat
	}
}

// chatFor is the chat to send a message for session to: the chat bound to
// it, or (after a restart) a chat named after it, which the router binds
// to the session.
func (c *correlation) chatFor(session string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.chatOf[session]; ok {
		return ch
	}
	return session
}

func (c *correlation) register(w *waiter) {
	c.mu.Lock()
	c.waiting[w.id] = w
	c.mu.Unlock()
}

// forget drops a request that was never published.
func (c *correlation) forget(w *waiter) {
	c.mu.Lock()
	delete(c.waiting, w.id)
	c.mu.Unlock()
}

// abandon drops a request whose client left. It returns the session whose
// turn must be stopped now ("" when the turn has not begun). Until the
// turn's reply comes, every sign of it (its start, a delta) stops it again:
// a turn queued behind another is stopped when it begins.
func (c *correlation) abandon(w *waiter) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.waiting[w.id]; !ok {
		return "" // answered meanwhile
	}
	delete(c.waiting, w.id)
	c.abandoned[w.id] = true
	w.mu.Lock()
	started, session := w.started, w.session
	w.mu.Unlock()
	if started {
		return session
	}
	return ""
}

// question returns the question waiting in session's chat.
func (c *correlation) question(session string) *question {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.chatOf[session]
	if !ok {
		ch = session
	}
	return c.questions[ch]
}

// allQuestions lists the questions waiting, by session.
func (c *correlation) allQuestions() []*question {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*question, 0, len(c.questions))
	for _, q := range c.questions {
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b *question) int { return strings.Compare(a.Session, b.Session) })
	return out
}

// answered removes q if it is still the chat's question.
func (c *correlation) answered(q *question) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.questions[q.Chat] != q {
		return false
	}
	delete(c.questions, q.Chat)
	return true
}

// inFlight is the number of requests waiting (tests, benchmarks).
func (c *correlation) inFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiting)
}

// busy tells whether a request waits for a turn of session.
func (c *correlation) busy(session string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.chatOf[session]
	if !ok {
		ch = session
	}
	if c.running[ch] != "" {
		return true
	}
	for _, w := range c.waiting {
		w.mu.Lock()
		on := w.session == session
		w.mu.Unlock()
		if on {
			return true
		}
	}
	return false
}
