package gateway

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/hermes-go/hermes/actors/gateway/wire"
	"github.com/hermes-go/hermes/schema"
)

// Editor is implemented by platforms that can change the text of a message
// they sent (Telegram's editMessageText, Slack's chat.update, Matrix's
// m.replace events). Serve shows a streamed answer and a turn's tool
// progress on them by editing one message as the text grows, and delivers
// the answer by editing its preview into it. Platforms without it get the
// answer only, as one reply.
type Editor interface {
	// Edit makes the messages ids (which Edit returned earlier in out's
	// chat; none: new ones) read out.Text, split as Send splits a reply:
	// ids[i] becomes part i, parts beyond ids are sent as new messages,
	// ids beyond the parts are left as they are. It returns the ids the
	// text occupies now. ErrNoEdit says out cannot be delivered by editing
	// (a reply carrying files, say): Serve sends it instead. Errors are as
	// Send's.
	Edit(ctx context.Context, out schema.Outbound, ids []string) ([]string, error)
}

// ErrNoEdit is what Editor.Edit returns for a message that must be sent
// rather than edited in.
var ErrNoEdit = errors.New("not deliverable by editing")

// DefaultEditEvery is the least time between two edits (or sends) of one
// chat's previews when Served.EditEvery is unset: Telegram allows about
// one message a second in a chat, Slack's chat.update about one a second.
const DefaultEditEvery = time.Second

// maxPreviewFailures ends a turn's previews after this many edits in a row
// failed: the answer still comes, as a reply.
const maxPreviewFailures = 3

// maxEnded bounds the turns remembered as answered, whose late previews
// are dropped.
const maxEnded = 1024

// liveKey names the previews of one turn: its chat and the message it
// answers.
type liveKey struct{ key, inReplyTo string }

// slot is one message of a turn's previews: a segment of the answer, or
// the progress lines.
type slot struct {
	kind    string
	segment int
	out     schema.Outbound // the latest text wanted
	shown   string          // the text last shown
	ids     []string
}

// live is a turn whose previews are shown, with the goroutine that edits
// them (one per turn: a chat's edits are paced together).
type live struct {
	slots    []*slot
	running  bool
	closed   bool
	failures int
	stop     chan struct{}
	done     chan struct{}
}

// editing is Served's state of the previews it shows.
type editing struct {
	mu        sync.Mutex
	live      map[liveKey]*live
	ended     map[liveKey]bool
	endedList []liveKey
}

func (s *Served) editEvery() time.Duration {
	if s.EditEvery > 0 {
		return s.EditEvery
	}
	return DefaultEditEvery
}

// show takes a preview or progress message: the latest text of its slot,
// which the turn's goroutine shows when the pace allows (older texts not
// yet shown are skipped). It never waits for the platform.
func (s *Served) show(ctx context.Context, ed Editor, out schema.Outbound, corr string) {
	if out.Text == "" {
		return
	}
	k := liveKey{out.Key, out.InReplyTo}
	e := &s.edits
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended[k] {
		return // answered already: a late preview must not reappear
	}
	if e.live == nil {
		e.live = map[liveKey]*live{}
	}
	l := e.live[k]
	if l == nil {
		l = &live{stop: make(chan struct{})}
		e.live[k] = l
	}
	if l.closed {
		return
	}
	var sl *slot
	for _, x := range l.slots {
		if x.kind == out.Kind && x.segment == out.Segment {
			sl = x
			break
		}
	}
	if sl == nil {
		sl = &slot{kind: out.Kind, segment: out.Segment, ids: out.Edit}
		l.slots = append(l.slots, sl)
	}
	sl.out = out
	if !l.running {
		l.running, l.done = true, make(chan struct{})
		go s.editLoop(ctx, ed, k, l, corr)
	}
}

// editLoop shows the turn's slots in the order they appeared, one call at
// a time and at most one per editEvery, until none has new text or the
// turn is answered.
func (s *Served) editLoop(ctx context.Context, ed Editor, k liveKey, l *live, corr string) {
	e := &s.edits
	defer close(l.done)
	for {
		e.mu.Lock()
		var sl *slot
		for _, x := range l.slots {
			if x.out.Text != x.shown {
				sl = x
				break
			}
		}
		if sl == nil || l.closed {
			l.running = false
			e.mu.Unlock()
			return
		}
		out, ids := sl.out, sl.ids
		e.mu.Unlock()

		got, err := ed.Edit(ctx, out, ids)
		wait := s.editEvery()
		var ack *schema.Inbound
		e.mu.Lock()
		sl.shown = out.Text // a failed text is not tried again: a newer one comes
		switch {
		case err == nil:
			l.failures = 0
			if len(got) > 0 && !slices.Equal(got, sl.ids) && sl.kind == schema.OutboundPreview {
				// A new preview, or one grown past a message: its ids
				// are recorded again.
				ack = &schema.Inbound{Kind: schema.InboundPreviewed, Key: out.Key, Platform: out.Platform, Chat: out.Chat,
					MessageID: out.InReplyTo, Segment: out.Segment, PlatformMessageIDs: got}
			}
			if len(got) > 0 {
				sl.ids = got
			}
		default:
			var ra *RetryAfterError
			if errors.As(err, &ra) && ra.After > 0 {
				wait = max(wait, ra.After)
				sl.shown = "" // shown later, as the platform asks
			} else {
				l.failures++
				s.log.Debug().Err(err).Str("kind", out.Kind).Msg("preview not shown")
				if l.failures >= maxPreviewFailures {
					// The answer still comes, as a reply.
					l.closed = true
				}
			}
		}
		e.mu.Unlock()
		if ack != nil {
			// Recorded by the chat, so that the answer edits this message
			// also after a restart. Published before the turn's answer is
			// delivered (which waits for this loop): the two stay in order.
			if err := wire.Publish(s.b.Publisher, wire.In(ack.Platform, ack.Chat), *ack, corr); err != nil {
				s.log.Debug().Err(err).Msg("publish a preview's ids")
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-l.stop:
			return
		case <-time.After(wait):
		}
	}
}

// endTurn stops the previews of the turn out answers, waiting for an edit
// in flight, shows what they had still to show (the last progress lines;
// not the preview the answer replaces), and returns the ids of the preview
// segment out replaces (none known here: out.Edit, as the chat recorded
// them).
func (s *Served) endTurn(ctx context.Context, ed Editor, out schema.Outbound) []string {
	k := liveKey{out.Key, out.InReplyTo}
	e := &s.edits
	e.mu.Lock()
	l := e.live[k]
	delete(e.live, k)
	if e.ended == nil {
		e.ended = map[liveKey]bool{}
	}
	if !e.ended[k] {
		e.ended[k] = true
		e.endedList = append(e.endedList, k)
		if len(e.endedList) > maxEnded {
			delete(e.ended, e.endedList[0])
			e.endedList = e.endedList[1:]
		}
	}
	if l == nil {
		e.mu.Unlock()
		return out.Edit
	}
	failed := l.failures >= maxPreviewFailures
	l.closed = true
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	done := l.done
	running := l.running
	e.mu.Unlock()
	if running {
		<-done
	}
	// The loop has ended: the slots are this goroutine's now.
	var prev []string
	for _, sl := range l.slots {
		replaced := sl.kind == schema.OutboundPreview && sl.segment == out.Segment && out.Replace
		if replaced {
			prev = append([]string(nil), sl.ids...)
			continue
		}
		if sl.out.Text != sl.shown && !failed && ctx.Err() == nil {
			if _, err := ed.Edit(ctx, sl.out, sl.ids); err != nil {
				s.log.Debug().Err(err).Str("kind", sl.out.Kind).Msg("last preview not shown")
			}
		}
	}
	if len(prev) == 0 {
		return out.Edit
	}
	return prev
}

// replace delivers a reply by editing the preview ids into it, or sends it
// when it cannot be edited in (ErrNoEdit, or the preview is gone).
func (s *Served) replace(ctx context.Context, ed Editor, out schema.Outbound, ids []string) ([]string, error) {
	got, err := ed.Edit(ctx, out, ids)
	var perm *PermanentError
	if errors.Is(err, ErrNoEdit) || errors.As(err, &perm) {
		if !errors.Is(err, ErrNoEdit) {
			s.log.Warn().Err(err).Msg("the preview could not be edited into the answer: sending it")
		}
		return s.p.Send(ctx, out)
	}
	return got, err
}
