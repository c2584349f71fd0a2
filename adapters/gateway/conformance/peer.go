// Package conformance is the gateway conformance suite: the behaviour every
// platform adapter must show against its platform's real server, run the
// same way for each (as watermill runs one pub/sub test suite against every
// backend). An adapter's test supplies a Peer — the real server, adapters
// connected to it, and users who act on the platform as real clients of
// that server — and calls Run:
//
//	func TestConformance(t *testing.T) { conformance.Run(t, newPeer(t)) }
//
// Run starts the whole gateway for each case (router, session manager,
// embedded event store, scripted model server, bus: gatewaytest.Rig),
// serves a fresh adapter from Peer.NewPlatform on it, and checks, each in
// a subtest named by its Case:
//
//   - answer: an allowed user's direct message is answered, once.
//   - pairing: a stranger gets a pairing code and nothing else — no
//     session, no model call.
//   - split: an answer longer than Caps.Limit arrives as several messages,
//     each within the limit, in order, whose text put together is the
//     answer (up to the whitespace at the splits).
//   - formatting: Markdown's and HTML's special characters, unicode and a
//     code fence arrive intact.
//   - new-and-stop: /stop stops a turn in flight; /new starts a
//     conversation whose model call carries none of the earlier one.
//   - group-mention: in a group the bot answers only when mentioned.
//   - approval: a dangerous command's approval question reaches the
//     session's user, another allowed user's answer is refused, the
//     session's user's answer lets the command run.
//   - peer-restart: the server restarts mid-turn; the adapter reconnects,
//     the answer is delivered exactly once, and the conversation goes on.
//   - crash: the gateway dies mid-turn (router, sessions and adapter
//     stopped without draining, the store reopened, all started again);
//     the turn is finished and its answer delivered exactly once; a second
//     crash after the delivery sends nothing again.
//
// A Peer may declare a case unsupported (Caps.Unsupported) only with a
// reason, which the subtest logs as its skip.
//
// # The Peer interface
//
// Peer (below) is stable: new methods will come as separate optional
// interfaces, never as changes to these.
//
//	type Peer interface {
//		Name() string
//		Caps() Caps
//		Users(t testing.TB) Users
//		NewPlatform(t testing.TB) gw.Platform
//		Mention(text string) string
//		Restart(t testing.TB)
//	}
//
//	type User interface {
//		ID() string
//		Send(ctx context.Context, where Where, text string) error
//		Received(ctx context.Context, where Where) ([]Message, error)
//		Answer(ctx context.Context, where Where, question Message, choice string) error
//	}
//
// In each case the suite calls Users first (fresh users, and a fresh group
// for them, so that what earlier cases left on the server does not
// count), then NewPlatform (the adapter must be able to reach that group).
package conformance

import (
	"context"
	"testing"

	gw "github.com/hermes-go/hermes/adapters/gateway"
)

// Peer is what an adapter's test supplies: the platform's real server
// (started by the test, owned by the Peer), adapters connected to it, and
// users who are clients of that server.
type Peer interface {
	// Name is the platform's name, as the adapters' Name returns it.
	Name() string
	// Caps says what the platform can do, and its limits.
	Caps() Caps
	// Users returns fresh users of the server for one case — two the
	// suite puts on the allow-list (Alice, Bob) and one it does not
	// (Stranger) — and, when Caps.Groups, a fresh group chat they are all
	// in. It is called before NewPlatform in every case.
	Users(t testing.TB) Users
	// NewPlatform builds a fresh adapter connected to the server, in the
	// group of the last Users (when Caps.Groups). The suite serves it
	// with gw.Served, waits for Connected when it implements gw.Connector,
	// and stops it by ending Run's context. It may be called again in a
	// case (after a simulated crash): the new adapter must take over.
	NewPlatform(t testing.TB) gw.Platform
	// Mention returns text as a group message addressed to the bot
	// ("@bot text", "bot: text").
	Mention(text string) string
	// Restart stops the server and starts it again at the same address,
	// and returns once it serves again and the users are connected to it
	// again (in their group). Called only when Caps.Restart.
	Restart(t testing.TB)
}

// Caps are a platform's capabilities and limits.
type Caps struct {
	// Limit is the most one message may hold, in the unit Message.Size
	// counts (0: no limit; the split case is then skipped).
	Limit int
	// Groups: the platform has group chats where the bot answers only
	// when mentioned (Peer.Mention).
	Groups bool
	// Restart: Peer.Restart works.
	Restart bool
	// Unsupported names the cases the platform cannot run, each with the
	// reason (logged as the case's skip).
	Unsupported map[Case]string
}

// Case names a case of the suite (its subtest's name).
type Case string

// The cases of the suite.
const (
	CaseAnswer       Case = "answer"
	CasePairing      Case = "pairing"
	CaseSplit        Case = "split"
	CaseFormatting   Case = "formatting"
	CaseNewAndStop   Case = "new-and-stop"
	CaseGroupMention Case = "group-mention"
	CaseApproval     Case = "approval"
	CasePeerRestart  Case = "peer-restart"
	CaseCrash        Case = "crash"
)

// Users are the clients of one case.
type Users struct {
	// Alice and Bob are on the allow-list; Stranger is not.
	Alice, Bob, Stranger User
}

// Where is the chat a user acts in.
type Where int

const (
	// DM is the user's direct chat with the bot.
	DM Where = iota
	// Group is the group chat of the case's users (Caps.Groups).
	Group
)

func (w Where) String() string {
	if w == Group {
		return "group"
	}
	return "dm"
}

// User is a real client of the platform's server.
type User interface {
	// ID is the user's id on the platform as the adapter reports it in
	// schema.Inbound.User: what an allow-list names.
	ID() string
	// Send sends text to the bot's direct chat (DM) or to the group
	// (Group; the suite addresses the bot with Peer.Mention itself).
	Send(ctx context.Context, where Where, text string) error
	// Received returns every message the bot sent to where that this user
	// has received so far, in order.
	Received(ctx context.Context, where Where) ([]Message, error)
	// Answer answers an approval question the bot sent to where: choice
	// is once, session, always or deny. Platforms with buttons press the
	// button (Message.Choices); others reply as a person would
	// ("/approve", "/deny").
	Answer(ctx context.Context, where Where, question Message, choice string) error
}

// Message is what a user received from the bot. A platform that cuts one
// reply into several messages (IRC: one per line of text) returns each.
type Message struct {
	// Text is the message as the user reads it: markup rendered away
	// (Telegram's HTML tags and entities), platform framing removed.
	Text string
	// Size is the message's size in the unit the platform limits it by
	// (Caps.Limit): UTF-16 code units on Telegram, the whole line's bytes
	// on IRC. 0: the number of runes of Text.
	Size int
	// Choices are the buttons attached to the message, if any.
	Choices []string
	// ID is the platform's id of the message, when it has one.
	ID string
}
