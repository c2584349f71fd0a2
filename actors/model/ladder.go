package model

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/schema"
)

// Endpoint is one provider the ladder may use: the primary or a fallback.
type Endpoint struct {
	// Name labels it in events and errors (provider name).
	Name string
	// Model overrides the request's model (fallbacks name their own).
	Model string
	// Build makes a client for an API key; the ladder calls it to rotate
	// keys, refresh credentials and rebuild a broken client.
	Build func(key string) Provider
	// Keys is the credential pool, tried in order on 429/403.
	Keys []string
	// Refresh re-reads the credentials (environment, key files) after a
	// 401; it returns "" when nothing changed.
	Refresh func() string

	mu     sync.Mutex
	client Provider
	key    int
	cur    string
}

func (e *Endpoint) get() Provider {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client == nil {
		if len(e.Keys) > 0 {
			e.cur = e.Keys[e.key%len(e.Keys)]
		}
		e.client = e.Build(e.cur)
	}
	return e.client
}

func (e *Endpoint) rebuild(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cur = key
	e.client = e.Build(key)
}

// rotate moves to the next key of the pool; false when there is none.
func (e *Endpoint) rotate(tried int) bool {
	e.mu.Lock()
	n := len(e.Keys)
	e.mu.Unlock()
	if n < 2 || tried >= n-1 {
		return false
	}
	e.mu.Lock()
	e.key = (e.key + 1) % n
	key := e.Keys[e.key]
	e.mu.Unlock()
	e.rebuild(key)
	return true
}

// Backoff is the waiting rung: jittered exponential backoff, Retry-After
// honoured up to Cap.
type Backoff struct {
	Base    time.Duration
	Cap     time.Duration
	Retries int
	// Sleep waits (tests make it instant or scaled).
	Sleep func(ctx context.Context, d time.Duration) error
}

func (b Backoff) withDefaults() Backoff {
	if b.Base <= 0 {
		b.Base = 5 * time.Second
	}
	if b.Cap <= 0 {
		b.Cap = 120 * time.Second
	}
	if b.Retries == 0 {
		b.Retries = 3
	}
	if b.Sleep == nil {
		b.Sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return b
}

func (b Backoff) wait(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, b.Cap)
	}
	d := b.Base << n
	jitter := 0.8 + 0.4*rand.Float64()
	return min(time.Duration(float64(d)*jitter), b.Cap)
}

// Ladder is a Provider that climbs the error-recovery ladder of the seeds:
// sanitise invalid text, refresh credentials, strip reasoning, rotate
// keys, report context overflow for compression, lower max_tokens,
// rebuild the client, back off, fall back to the next provider, and only
// then give up with an actionable message. A 402 is never retried on the
// same provider. Use ForTurn for each turn: the primary is tried again at
// the start of every turn.
type Ladder struct {
	Endpoints []*Endpoint
	Backoff   Backoff
	// Status, when set, hears each recovery step (for the CLI's stderr).
	Status func(string)

	cur       int
	fallbacks []schema.ProviderFallback
}

// ErrContextOverflow is returned when the request must shrink: the loop
// compresses and tries again.
var ErrContextOverflow = errors.New("the conversation is too long for the model's context window")

// ForTurn returns a ladder for one turn, starting at the primary.
func (l *Ladder) ForTurn() *Ladder {
	return &Ladder{Endpoints: l.Endpoints, Backoff: l.Backoff.withDefaults(), Status: l.Status}
}

func (l *Ladder) Name() string    { return l.Endpoints[l.cur].get().Name() }
func (l *Ladder) APIMode() string { return l.Endpoints[l.cur].get().APIMode() }

// TakeFallbacks returns (and forgets) the switches made since the last
// call, for the loop to record as events.
func (l *Ladder) TakeFallbacks() []schema.ProviderFallback {
	out := l.fallbacks
	l.fallbacks = nil
	return out
}

func (l *Ladder) status(format string, args ...any) {
	if l.Status != nil {
		l.Status(fmt.Sprintf(format, args...))
	}
}

// transient classes are worth waiting for on the same provider. A
// malformed response, a server that never answered (no_answer) or a call
// past its deadline is not: the same server
// would most likely do the same again, and each attempt costs a whole
// model call, so the ladder goes to the fallbacks (or gives up) at once.
func transient(c ErrorClass) bool {
	switch c {
	case ClassRateLimit, ClassForbidden, ClassOverloaded, ClassServer, ClassTimeout, ClassStreamCut, ClassUnknown:
		return true
	}
	return false
}

// complete is Complete without its trace and metrics.
func (l *Ladder) complete(ctx context.Context, req Request, onDelta func(Delta)) (Response, error) {
	l.Backoff = l.Backoff.withDefaults()
	type rungs struct {
		sanitised, refreshed, stripped, lowered, rebuilt bool
		rotated, retries                                 int
	}
	var done rungs
	// The adapters' watchdogs say on the status line when a server is
	// slow to answer.
	ctx = WithStatus(ctx, l.Status)
	for {
		ep := l.Endpoints[l.cur]
		r := req
		if ep.Model != "" {
			r.Model = ep.Model
		}
		shown := 0
		resp, err := ep.get().Complete(ctx, r, func(d Delta) {
			if d.Kind == DeltaText {
				shown += len(d.Text)
			}
			onDelta(d)
		})
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return resp, err
		}
		class := Classify(err)
		if shown > 0 {
			// The text streamed so far was shown but is no answer: say so
			// before any retry streams its own, complete one.
			l.status("%s from %s after %d bytes of answer: that partial answer is discarded", class, ep.Name, shown)
		}
		var pe *ProviderError
		errors.As(err, &pe)
		msg, retryAfter := err.Error(), time.Duration(0)
		if pe != nil {
			msg, retryAfter = pe.Message, pe.RetryAfter
		}
		switch {
		case class == ClassInvalidUnicode && !done.sanitised:
			done.sanitised = true
			req = sanitise(req)
			l.status("invalid text in the request: sanitised, retrying")
			continue
		case class == ClassAuth && !done.refreshed && ep.Refresh != nil:
			done.refreshed = true
			if key := ep.Refresh(); key != "" {
				ep.rebuild(key)
				l.status("401 from %s: credentials refreshed, retrying", ep.Name)
				continue
			}
		case class == ClassThinkingSignature && !done.stripped:
			done.stripped = true
			req = stripReasoning(req)
			l.status("reasoning signatures rejected: stripped, retrying")
			continue
		case (class == ClassRateLimit || class == ClassForbidden) && ep.rotate(done.rotated):
			done.rotated++
			l.status("%s from %s: next key of the pool", class, ep.Name)
			continue
		case class == ClassContextOverflow || class == ClassPayloadTooLarge:
			return resp, fmt.Errorf("%w: %v", ErrContextOverflow, err)
		case class == ClassOutputCap && !done.lowered:
			done.lowered = true
			if n := OutputCapFrom(msg, req.MaxTokens); n > 0 {
				req.MaxTokens = n
				l.status("max_tokens too high for the model: lowered to %d, retrying", n)
				continue
			}
		case class == ClassTimeout && !done.rebuilt:
			done.rebuilt = true
			ep.rebuild(ep.cur)
			l.status("transport error from %s: client rebuilt, retrying", ep.Name)
			continue
		}
		if transient(class) && done.retries < l.Backoff.Retries {
			wait := l.Backoff.wait(done.retries, retryAfter)
			done.retries++
			l.status("%s from %s: retry %d of %d in %s", class, ep.Name, done.retries, l.Backoff.Retries, wait.Round(time.Millisecond))
			if err := l.Backoff.Sleep(ctx, wait); err != nil {
				return resp, err
			}
			continue
		}
		if l.cur+1 < len(l.Endpoints) {
			next := l.Endpoints[l.cur+1]
			l.fallbacks = append(l.fallbacks, schema.ProviderFallback{FromProvider: ep.Name, FromModel: first(ep.Model, req.Model),
				ToProvider: next.Name, ToModel: first(next.Model, req.Model), Reason: fmt.Sprintf("%s: %s", class, clipText(msg, 200))})
			l.status("%s from %s: falling back to %s %s", class, ep.Name, next.Name, next.Model)
			l.cur++
			done = rungs{}
			continue
		}
		return resp, &AbortError{Class: class, Err: err}
	}
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// AbortError is the last rung: what failed and what to do about it.
type AbortError struct {
	Class ErrorClass
	Err   error
}

func (e *AbortError) Error() string {
	hint := map[ErrorClass]string{
		ClassAuth:          "check the API key (OPENAI_API_KEY, ANTHROPIC_API_KEY or api_key in config.yaml)",
		ClassBilling:       "the account is out of credit or quota: top it up, or configure fallback_providers",
		ClassRateLimit:     "the provider keeps rate-limiting: wait, add keys, or configure fallback_providers",
		ClassForbidden:     "the key may not use this model or endpoint",
		ClassModelNotFound: "check the model name (--model or model in config.yaml)",
		ClassContentPolicy: "the provider refused the content; rephrase the request",
		ClassFormat:        "the provider rejected the request format; try another api_mode or provider",
		ClassOverloaded:    "the provider is overloaded: try again later or configure fallback_providers",
		ClassServer:        "the provider keeps failing: try again later or configure fallback_providers",
		ClassTimeout:       "the provider cannot be reached or stalls: check base_url and the network",
		ClassStreamCut:     "the provider's stream keeps ending before the answer is complete (a crashing server, or a proxy cutting the connection): check the server, or configure fallback_providers",
		ClassMalformed:     "the server's response is not a valid stream of its API: check base_url and api_mode, and any proxy in between",
		ClassCallTimeout:   "the model call took longer than agent.model_call_timeout: raise it in config.yaml for a slow model, or check the server",
		ClassUnreachable:   "the server cannot be reached: is it running, and are base_url (or OPENAI_BASE_URL / ANTHROPIC_BASE_URL) and the network right?",
		ClassNoAnswer:      "is the server overloaded or stuck (a local one still loading its model)? check it and base_url, or raise agent.first_byte_timeout in config.yaml for a slow server",
	}[e.Class]
	if e.Class == ClassUnreachable {
		if u := URLOf(e.Err); u != "" {
			hint = "cannot connect to " + u + ": " + hint
		}
	}
	if hint == "" {
		hint = "see the error above"
	}
	return fmt.Sprintf("%v (%s; %s)", e.Err, e.Class, hint)
}

func (e *AbortError) Unwrap() error { return e.Err }

// sanitise replaces invalid UTF-8 (and lone surrogates, which Go already
// cannot hold in valid strings) in every text of the request.
func sanitise(req Request) Request {
	fix := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
	req.System = fix(req.System)
	msgs := make([]schema.Message, len(req.Messages))
	for i, m := range req.Messages {
		m.Content, m.Reasoning = fix(m.Content), fix(m.Reasoning)
		msgs[i] = m
	}
	req.Messages = msgs
	return req
}

// stripReasoning drops reasoning from the history sent.
func stripReasoning(req Request) Request {
	msgs := make([]schema.Message, len(req.Messages))
	for i, m := range req.Messages {
		m.Reasoning = ""
		msgs[i] = m
	}
	req.Messages = msgs
	return req
}

// clipText cuts s to n bytes for a fallback event's reason.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
