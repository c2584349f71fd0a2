// Package gateway holds what every platform adapter shares: the Platform
// port an adapter implements, and Serve, which connects one to the bus —
// its inbound messages published on the gateway_in_N topics (by chat), the router's outbound ones
// delivered from gateway_out_<platform> with retries, and each delivery's
// outcome published back so the router records it. Adapters are thin: they
// know their platform's API and nothing of sessions or models.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/gateway/wire"
	"github.com/hermes-go/hermes/adapters/bus"
	"github.com/hermes-go/hermes/schema"
)

// Inbox publishes what a platform received.
type Inbox func(ctx context.Context, in schema.Inbound) error

// Platform is a chat platform or other front door.
type Platform interface {
	// Name is the platform's name: the source of its sessions and the
	// suffix of its outbound topic.
	Name() string
	// Run receives from the platform and hands each message to in until
	// ctx ends. It reconnects by itself (with backoff) and returns only
	// when ctx ends or the platform can never work (bad credentials).
	Run(ctx context.Context, in Inbox) error
	// Send delivers one outbound message and returns the platform's ids
	// of the messages it became. Errors may be *RetryAfterError or
	// *PermanentError.
	Send(ctx context.Context, out schema.Outbound) ([]string, error)
}

// Connector is implemented by platforms that can say whether they are
// connected right now.
type Connector interface {
	Connected() bool
}

// ErrorReporter is implemented by platforms that retry by themselves
// inside Run (reconnecting with backoff) and can say what last went wrong,
// for Status.
type ErrorReporter interface {
	LastError() (string, time.Time)
}

// RetryAfterError is a platform's "too many requests": wait, then retry.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", e.Err, e.After)
}
func (e *RetryAfterError) Unwrap() error { return e.Err }

// PermanentError is a refusal that no retry will change (a chat that does
// not exist, a message the platform rejects).
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Delivery retry policy: up to MaxAttempts over about a minute; a reply
// still undelivered is recorded as failed (and stays in the chat's history
// of the session).
const (
	MaxAttempts  = 8
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 15 * time.Second
)

// Status is an adapter's state as `hermes gateway status` shows it.
type Status struct {
	Platform  string    `json:"platform"`
	Connected bool      `json:"connected"`
	Delivered int64     `json:"delivered"`
	Failed    int64     `json:"failed"`
	LastError string    `json:"last_error,omitempty"`
	ErrorAt   time.Time `json:"error_at,omitempty"`
}

// Served is a platform connected to the bus.
type Served struct {
	// EditEvery is the least time between two edits of one turn's
	// previews on an Editor platform (0: DefaultEditEvery). Set it before
	// Serve.
	EditEvery time.Duration

	p   Platform
	b   *bus.Bus
	log zerolog.Logger

	mu sync.Mutex
	st Status

	edits editing
	// runCtx is Serve's context: previews are edited under it, not under
	// the bus message's, which ends with its handler.
	runCtx context.Context
}

// NewServed prepares p for Serve.
func NewServed(p Platform, b *bus.Bus, log zerolog.Logger) *Served {
	return &Served{p: p, b: b, log: log.With().Str("platform", p.Name()).Logger(), st: Status{Platform: p.Name()}}
}

// Status returns the adapter's state.
func (s *Served) Status() Status {
	s.mu.Lock()
	st := s.st
	s.mu.Unlock()
	if c, ok := s.p.(Connector); ok {
		st.Connected = c.Connected()
	}
	if r, ok := s.p.(ErrorReporter); ok {
		if msg, at := r.LastError(); msg != "" && at.After(st.ErrorAt) {
			st.LastError, st.ErrorAt = msg, at
		}
	}
	return st
}

func (s *Served) fail(err error) {
	s.mu.Lock()
	s.st.LastError, s.st.ErrorAt = err.Error(), time.Now()
	s.mu.Unlock()
}

// Serve delivers the router's outbound messages to the platform and runs
// the platform's receiver, until ctx ends. A platform that fails to start
// is reported in Status and retried; the other platforms keep working.
func (s *Served) Serve(ctx context.Context) error {
	s.runCtx = ctx
	wr, err := message.NewRouter(message.RouterConfig{CloseTimeout: 10 * time.Second}, s.b.Logger)
	if err != nil {
		return err
	}
	wr.AddMiddleware(middleware.CorrelationID, middleware.Recoverer)
	wr.AddConsumerHandler("deliver_"+s.p.Name(), wire.Out(s.p.Name()), s.b.Subscriber, s.deliver)
	routerDone := make(chan error, 1)
	go func() { routerDone <- wr.Run(ctx) }()
	select {
	case <-wr.Running():
	case err := <-routerDone:
		return err
	}
	inbox := func(ctx context.Context, in schema.Inbound) error {
		in.Platform = s.p.Name()
		return wire.Publish(s.b.Publisher, wire.In(in.Platform, in.Chat), in, "")
	}
	backoff := time.Second
	for ctx.Err() == nil {
		err := s.p.Run(ctx, inbox)
		if ctx.Err() != nil {
			break
		}
		var perm *PermanentError
		if err != nil {
			s.fail(err)
			s.log.Error().Err(err).Dur("retry_in", backoff).Msg("platform stopped")
		}
		if errors.As(err, &perm) {
			break // bad credentials and the like: reported, not retried
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Minute)
	}
	<-ctx.Done()
	_ = wr.Close()
	return <-routerDone
}

// deliver is the handler of gateway_out_<platform>.
func (s *Served) deliver(msg *message.Message) error {
	var out schema.Outbound
	if err := wire.Decode(msg, &out); err != nil {
		s.log.Warn().Err(err).Msg("dropping a malformed outbound message")
		return nil
	}
	ctx := msg.Context()
	if m, ok := s.p.(MediaSender); !ok || !m.SendsMedia() {
		out.Text = withoutMedia(out.Text, s.p.Name())
	}
	if out.Kind == schema.OutboundPreview || out.Kind == schema.OutboundProgress {
		// Shown only where a message can be edited as it grows; elsewhere
		// the answer comes whole, as a reply. A preview never shows a
		// MEDIA: tag (a file's path): the answer sends or names the file.
		if out.Kind == schema.OutboundPreview {
			out.Text, _ = SplitMedia(out.Text)
		}
		if ed, ok := s.p.(Editor); ok {
			s.show(s.runCtx, ed, out, wire.Correlation(msg))
		}
		return nil
	}
	if out.Kind == schema.OutboundTyping || out.Kind == schema.OutboundDelta {
		// Best effort: a lost typing indicator or delta is harmless.
		if _, err := s.p.Send(ctx, out); err != nil {
			s.log.Debug().Err(err).Str("kind", out.Kind).Msg("send")
		}
		return nil
	}
	send := s.p.Send
	if ed, ok := s.p.(Editor); ok && out.Kind == schema.OutboundReply {
		// The turn's previews stop here (an edit in flight ends first);
		// an answer that replaces its preview is edited into it.
		if prev := s.endTurn(ctx, ed, out); out.Replace && len(prev) > 0 {
			send = func(ctx context.Context, out schema.Outbound) ([]string, error) { return s.replace(ctx, ed, out, prev) }
		}
	}
	ids, err := s.sendWithRetry(ctx, out, send)
	if out.ReplyID == "" {
		return nil // not in the outbox (a pairing notice): nothing to acknowledge
	}
	ack := schema.Inbound{Kind: schema.InboundDelivered, Key: out.Key, Platform: out.Platform, Chat: out.Chat, ReplyID: out.ReplyID, PlatformMessageIDs: ids}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // shutting down: the outbox sends it after the restart
		}
		var perm *PermanentError
		ack.Kind, ack.Error, ack.Permanent = schema.InboundFailed, err.Error(), errors.As(err, &perm)
	}
	return wire.Publish(s.b.Publisher, wire.In(ack.Platform, ack.Chat), ack, wire.Correlation(msg))
}

func (s *Served) sendWithRetry(ctx context.Context, out schema.Outbound, send func(context.Context, schema.Outbound) ([]string, error)) ([]string, error) {
	wait := firstBackoff
	var err error
	for attempt := 1; attempt <= MaxAttempts; attempt++ {
		var ids []string
		ids, err = send(ctx, out)
		if err == nil {
			s.mu.Lock()
			s.st.Delivered++
			s.mu.Unlock()
			return ids, nil
		}
		s.fail(err)
		var perm *PermanentError
		if errors.As(err, &perm) {
			break
		}
		d := wait
		var ra *RetryAfterError
		if errors.As(err, &ra) && ra.After > 0 {
			d = ra.After
		}
		s.log.Warn().Err(err).Int("attempt", attempt).Dur("retry_in", d).Msg("delivery failed")
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(d):
		}
		wait = min(wait*2, maxBackoff)
	}
	s.mu.Lock()
	s.st.Failed++
	s.mu.Unlock()
	return nil, err
}
