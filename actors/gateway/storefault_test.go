package gateway_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// replyFaults is the gateway's store with faults on the append of a
// chat's reply, as a store restarting makes them: the next such append is
// written but answered with an error (its acknowledgement lost), or not
// written and answered with an error.
type replyFaults struct {
	events.Store
	mu     sync.Mutex
	next   string // "lost-ack", "down" or ""
	failed int
}

func (f *replyFaults) arm(mode string) { f.mu.Lock(); f.next = mode; f.mu.Unlock() }

func (f *replyFaults) Append(ctx context.Context, stream string, exp events.Expected, evs ...schema.Envelope) (events.AppendResult, error) {
	f.mu.Lock()
	mode := ""
	if strings.HasPrefix(stream, "gateway-chat-") && len(evs) > 0 && evs[len(evs)-1].Type == "GatewayReplyRequested" {
		mode, f.next = f.next, ""
	}
	if mode != "" {
		f.failed++
	}
	f.mu.Unlock()
	switch mode {
	case "lost-ack":
		if _, err := f.Store.Append(ctx, stream, exp, evs...); err != nil {
			return events.AppendResult{}, err
		}
		return events.AppendResult{}, io.ErrUnexpectedEOF
	case "down":
		return events.AppendResult{}, errors.New("connection refused")
	}
	return f.Store.Append(ctx, stream, exp, evs...)
}

// TestGatewayReplyDespiteStoreFault: when the store answers a reply's
// append with an error (down, or written but not acknowledged), the reply
// still reaches the chat — a caller waiting on it is not left hanging —
// and the chat answers its next messages: it does not stay a revision
// behind its stream.
func TestGatewayReplyDespiteStoreFault(t *testing.T) {
	for _, mode := range []string{"lost-ack", "down"} {
		t.Run(mode, func(t *testing.T) {
			faults := &replyFaults{}
			r := newGwRigWrapped(t, t.TempDir(), "", false, gateway.Config{Auth: gateway.Auth{Platform: map[string][]string{"testchat": {"111"}}}},
				func(s events.Store) events.Store { faults.Store = s; return faults },
				llmtest.Reply{Content: "one"}, llmtest.Reply{Content: "two"}, llmtest.Reply{Content: "three"})
			faults.arm(mode)
			r.plat.send(t, dm("111", "1", "first"))
			got := r.plat.waitReplies(t, 1)
			if got[0].Text != "one" || got[0].InReplyTo != "1" {
				t.Fatalf("reply %+v", got[0])
			}
			if faults.failed != 1 {
				t.Fatalf("%d faults", faults.failed)
			}
			r.plat.send(t, dm("111", "2", "second"))
			r.plat.send(t, dm("111", "3", "third"))
			got = r.plat.waitReplies(t, 3)
			if got[1].Text != "two" || got[2].Text != "three" {
				t.Fatalf("replies after the fault: %+v", got)
			}
		})
	}
}
