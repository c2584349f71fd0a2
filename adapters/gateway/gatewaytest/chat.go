package gatewaytest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// Chat is a test platform: a chat service whose users are the test. What
// the gateway sends it is kept (typing indicators aside) and, when OnSend
// is set, handed to it as well.
type Chat struct {
	name  string
	ready chan struct{}

	mu    sync.Mutex
	inbox gw.Inbox
	sent  []schema.Outbound
	// OnSend sees every message the gateway sends (set before Serve).
	OnSend func(schema.Outbound)
}

// NewChat returns a test platform called name.
func NewChat(name string) *Chat { return &Chat{name: name, ready: make(chan struct{})} }

// Ready is closed once the platform runs (Post works from then on).
func (c *Chat) Ready() <-chan struct{} { return c.ready }

// Name is the platform's name.
func (c *Chat) Name() string { return c.name }

// Run hands the inbox to the test and waits for the end.
func (c *Chat) Run(ctx context.Context, in gw.Inbox) error {
	c.mu.Lock()
	first := c.inbox == nil
	c.inbox = in
	c.mu.Unlock()
	if first {
		close(c.ready)
	}
	<-ctx.Done()
	return nil
}

// Send keeps what the gateway sent.
func (c *Chat) Send(_ context.Context, out schema.Outbound) ([]string, error) {
	if c.OnSend != nil {
		c.OnSend(out)
	}
	if out.Kind == schema.OutboundTyping {
		return nil, nil
	}
	c.mu.Lock()
	c.sent = append(c.sent, out)
	c.mu.Unlock()
	return []string{"m-" + uuid.NewString()[:8]}, nil
}

// Post publishes a message as the platform received it.
func (c *Chat) Post(tb testing.TB, in schema.Inbound) {
	tb.Helper()
	c.mu.Lock()
	inbox := c.inbox
	c.mu.Unlock()
	if err := inbox(context.Background(), in); err != nil {
		tb.Fatal(err)
	}
}

// Replies returns the replies, notices and approvals sent so far.
func (c *Chat) Replies() []schema.Outbound {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []schema.Outbound
	for _, o := range c.sent {
		if o.Kind == schema.OutboundReply || o.Kind == schema.OutboundNotice || o.Kind == schema.OutboundApproval {
			out = append(out, o)
		}
	}
	return out
}

// WaitReplies waits until n replies arrived and returns them.
func (c *Chat) WaitReplies(tb testing.TB, n int) []schema.Outbound {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if r := c.Replies(); len(r) >= n {
			return r
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatalf("waited for %d replies on %s, got %d: %+v", n, c.name, len(c.Replies()), c.Replies())
	return nil
}

// DM is a direct message of user in chat "c"+user.
func DM(user, id, text string) schema.Inbound {
	return schema.Inbound{Chat: "c" + user, ChatType: "dm", User: user, MessageID: id, Text: text}
}

// LongAnswer is a long Markdown answer of the kind that tests splitting:
// before sentences of prose (a paragraph every four), a Go code block of
// lines lines, then after sentences (a paragraph every five). It returns
// the block too, so that a test can look for it whole. (24, 40, 50) is
// about 9,000 characters.
func LongAnswer(before, lines, after int) (answer, block string) {
	var b strings.Builder
	sentence := "The quick brown fox jumps over the lazy dog, and the **dog** does not mind <at all> & sleeps. "
	for i := range before {
		b.WriteString(sentence)
		if i%4 == 3 {
			b.WriteString("\n\n")
		}
	}
	block = "```go\n" + strings.Repeat("for i := 0; i < n && ok; i++ { total += i << 1 }\n", lines) + "```"
	b.WriteString(block + "\n\n")
	for i := range after {
		b.WriteString(sentence)
		if i%5 == 4 {
			b.WriteString("\n\n")
		}
	}
	return strings.TrimSpace(b.String()), block
}
