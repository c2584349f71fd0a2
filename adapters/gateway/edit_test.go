package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/gateway/wire"
	"github.com/hermes-go/hermes/adapters/bus"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// pad is a platform whose messages can be edited, kept in memory: the
// test's stand-in for a chat service (no real one is involved here; the
// adapters' own tests run against their servers). Each message is one
// part.
type pad struct {
	ready chan struct{}
	edits bool // implements editing (through editingPad)

	mu      sync.Mutex
	msgs    map[string]string
	order   []string
	sends   int
	edited  int
	noEdit  bool // Edit answers ErrNoEdit for replies
	goneErr bool // Edit answers a permanent error (the message was deleted)
}

func newPad() *pad { return &pad{ready: make(chan struct{}), msgs: map[string]string{}} }

func (p *pad) Name() string { return "pad" }
func (p *pad) Run(ctx context.Context, _ gw.Inbox) error {
	close(p.ready)
	<-ctx.Done()
	return nil
}

func (p *pad) Send(_ context.Context, out schema.Outbound) ([]string, error) {
	switch out.Kind {
	case schema.OutboundReply, schema.OutboundNotice:
	case schema.OutboundPreview, schema.OutboundProgress:
		return nil, fmt.Errorf("pad: %s sent as a message", out.Kind)
	default:
		return nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sends++
	return []string{p.add(out.Text)}, nil
}

func (p *pad) add(text string) string {
	id := fmt.Sprintf("m%d", len(p.order)+1)
	p.msgs[id] = text
	p.order = append(p.order, id)
	return id
}

// texts is what the chat reads, in order.
func (p *pad) texts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, id := range p.order {
		out = append(out, p.msgs[id])
	}
	return out
}

func (p *pad) counts() (sends, edits int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sends, p.edited
}

// editingPad is pad with gateway.Editor.
type editingPad struct{ *pad }

func (p editingPad) Edit(_ context.Context, out schema.Outbound, ids []string) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if out.Kind == schema.OutboundReply && p.noEdit {
		return nil, gw.ErrNoEdit
	}
	if len(ids) == 0 {
		p.sends++
		return []string{p.add(out.Text)}, nil
	}
	if _, ok := p.msgs[ids[0]]; !ok || p.goneErr {
		return nil, &gw.PermanentError{Err: errors.New("pad: message to edit not found")}
	}
	p.edited++
	p.msgs[ids[0]] = out.Text
	return ids[:1], nil
}

// servePad serves p (as an Editor when editing) on a new in-process bus
// and returns the bus.
func servePad(t *testing.T, p gw.Platform, every time.Duration) *bus.Bus {
	t.Helper()
	b, err := bus.Open("", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	s := gw.NewServed(p, b, zerolog.Nop())
	s.EditEvery = every
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done; b.Close() })
	return b
}

func publish(t *testing.T, b *bus.Bus, out schema.Outbound) {
	t.Helper()
	out.Platform, out.Chat, out.Key = "pad", "c1", "pad/c1"
	if out.InReplyTo == "" {
		out.InReplyTo = "q1"
	}
	if err := wire.Publish(b.Publisher, wire.Out("pad"), out, ""); err != nil {
		t.Fatal(err)
	}
}

func waitTexts(t *testing.T, p *pad, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if got := p.texts(); fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the chat reads %q, want %q", p.texts(), want)
}

// Previews of a segment become one message, edited (the newest text only,
// once the pace allows), which the answer replaces; a preview that comes
// after the answer is dropped.
func TestServedEditsPreviewIntoAnswer(t *testing.T) {
	p := newPad()
	b := servePad(t, editingPad{p}, 30*time.Millisecond)
	<-p.ready
	in, err := b.Subscriber.Subscribe(context.Background(), wire.In("pad", "c1"))
	if err != nil {
		t.Fatal(err)
	}
	acks := make(chan schema.Inbound, 16)
	go func() {
		for m := range in {
			var ack schema.Inbound
			if wire.Decode(m, &ack) == nil {
				acks <- ack
			}
			m.Ack()
		}
	}()
	for _, text := range []string{"Par", "Paris is", "Paris is the capital"} {
		publish(t, b, schema.Outbound{Kind: schema.OutboundPreview, Text: text})
	}
	waitTexts(t, p, "Paris is the capital")
	publish(t, b, schema.Outbound{Kind: schema.OutboundReply, ReplyID: "r1", Replace: true, Text: "Paris is the capital of France."})
	waitTexts(t, p, "Paris is the capital of France.")
	publish(t, b, schema.Outbound{Kind: schema.OutboundPreview, Text: "Paris is the"})
	time.Sleep(100 * time.Millisecond)
	waitTexts(t, p, "Paris is the capital of France.")
	if sends, edits := p.counts(); sends != 1 || edits < 1 || edits > 3 {
		t.Fatalf("%d sends and %d edits for three previews and the answer", sends, edits)
	}
	// The preview's id went back to be recorded, then the delivery.
	var kinds []string
	for len(kinds) < 2 {
		select {
		case ack := <-acks:
			kinds = append(kinds, ack.Kind)
			if ack.Kind == schema.InboundPreviewed && (ack.MessageID != "q1" || fmt.Sprint(ack.PlatformMessageIDs) != "[m1]") {
				t.Fatalf("previewed %+v", ack)
			}
			if ack.Kind == schema.InboundDelivered && fmt.Sprint(ack.PlatformMessageIDs) != "[m1]" {
				t.Fatalf("delivered %+v", ack)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("acks so far: %v", kinds)
		}
	}
	if fmt.Sprint(kinds) != "[previewed delivered]" {
		t.Fatalf("acks %v", kinds)
	}
}

// After a restart the adapter knows no preview: the answer edits the one
// the chat recorded (Edit). An answer that cannot be edited in (files), or
// whose preview is gone, is sent as a message.
func TestServedReplacesRecordedPreview(t *testing.T) {
	p := newPad()
	b := servePad(t, editingPad{p}, 30*time.Millisecond)
	<-p.ready
	p.mu.Lock()
	p.add("Half an ans")
	p.mu.Unlock()
	publish(t, b, schema.Outbound{Kind: schema.OutboundReply, ReplyID: "r1", Replace: true, Edit: []string{"m1"}, Text: "The whole answer."})
	waitTexts(t, p, "The whole answer.")

	publish(t, b, schema.Outbound{Kind: schema.OutboundReply, ReplyID: "r2", InReplyTo: "q2", Replace: true, Edit: []string{"nosuch"}, Text: "Its preview was deleted."})
	waitTexts(t, p, "The whole answer.", "Its preview was deleted.")

	p.mu.Lock()
	p.noEdit = true
	p.mu.Unlock()
	publish(t, b, schema.Outbound{Kind: schema.OutboundPreview, InReplyTo: "q3", Text: "Here is"})
	waitTexts(t, p, "The whole answer.", "Its preview was deleted.", "Here is")
	publish(t, b, schema.Outbound{Kind: schema.OutboundReply, ReplyID: "r3", InReplyTo: "q3", Replace: true, Text: "Here is the file."})
	waitTexts(t, p, "The whole answer.", "Its preview was deleted.", "Here is", "Here is the file.")
}

// A platform that cannot edit gets neither previews nor progress lines:
// the answer only, as before.
func TestServedWithoutEditsSendsAnswerOnly(t *testing.T) {
	p := newPad()
	b := servePad(t, p, 10*time.Millisecond)
	<-p.ready
	publish(t, b, schema.Outbound{Kind: schema.OutboundProgress, Text: "💻 terminal: \"ls\""})
	publish(t, b, schema.Outbound{Kind: schema.OutboundPreview, Text: "Par"})
	publish(t, b, schema.Outbound{Kind: schema.OutboundReply, ReplyID: "r1", Replace: true, Text: "Paris."})
	waitTexts(t, p, "Paris.")
	time.Sleep(50 * time.Millisecond)
	waitTexts(t, p, "Paris.")
}

// Progress lines are one message edited as lines come; the last lines are
// shown before the answer even when the pace held them back.
func TestServedShowsLastProgressBeforeAnswer(t *testing.T) {
	p := newPad()
	b := servePad(t, editingPad{p}, time.Hour)
	<-p.ready
	publish(t, b, schema.Outbound{Kind: schema.OutboundProgress, Text: "one"})
	waitTexts(t, p, "one")
	publish(t, b, schema.Outbound{Kind: schema.OutboundProgress, Text: "one\ntwo"})
	publish(t, b, schema.Outbound{Kind: schema.OutboundReply, ReplyID: "r1", Text: "done"})
	waitTexts(t, p, "one\ntwo", "done")
}
