package xmpptest

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	goxmpp "github.com/xmppo/go-xmpp"
)

// Message is one message a Client received.
type Message struct {
	From, Type, Body, Subject string
	Delayed                   bool
	ID                        string
}

// Client is a person: a real XMPP client connection to the server that
// keeps every message with a body it receives.
type Client struct {
	JID string

	tb       testing.TB
	srv      *Server
	password string
	c        *goxmpp.Client
	rooms    map[string]string // room → nick, to join again on Reconnect

	mu      sync.Mutex
	got     []Message
	states  []Message // bodiless messages carrying a XEP-0085 chat state (Body: the state)
	subs    []chan Message
	joined  map[string]bool
	done    chan struct{}
	readErr error
}

// Connect logs user in (registered with Register) and starts reading.
func (s *Server) Connect(user, password string) *Client {
	s.tb.Helper()
	cl := &Client{JID: user + "@" + Domain, tb: s.tb, srv: s, password: password, rooms: map[string]string{}}
	if err := cl.login(); err != nil {
		s.tb.Fatal(err)
	}
	s.tb.Cleanup(cl.Close)
	return cl
}

func (cl *Client) login() error {
	opts := goxmpp.Options{Host: cl.srv.Addr, User: cl.JID, Password: cl.password, Resource: "test",
		NoTLS: true, StartTLS: true, TLSConfig: cl.srv.TLS(), DialTimeout: 10 * time.Second}
	c, err := opts.NewClient()
	if err != nil {
		return fmt.Errorf("%s logs in: %w", cl.JID, err)
	}
	done := make(chan struct{})
	cl.mu.Lock()
	cl.c, cl.done, cl.joined = c, done, map[string]bool{}
	cl.mu.Unlock()
	go cl.read(c, done)
	return nil
}

// Reconnect closes the connection (if still open), logs in again and
// joins the rooms joined before; the messages received so far are kept.
func (cl *Client) Reconnect() error {
	cl.Close()
	if err := cl.login(); err != nil {
		return err
	}
	cl.mu.Lock()
	rooms := maps.Clone(cl.rooms)
	cl.mu.Unlock()
	for room, nick := range rooms {
		if err := cl.join(room, nick); err != nil {
			return err
		}
	}
	return nil
}

func (cl *Client) read(c *goxmpp.Client, done chan struct{}) {
	defer close(done)
	for {
		st, err := c.Recv()
		if err != nil {
			cl.mu.Lock()
			cl.readErr = err
			cl.mu.Unlock()
			return
		}
		switch v := st.(type) {
		case goxmpp.Chat:
			if v.Text == "" {
				for _, e := range v.OtherElem {
					if e.XMLName.Space == "http://jabber.org/protocol/chatstates" {
						cl.mu.Lock()
						cl.states = append(cl.states, Message{From: v.Remote, Type: v.Type, Body: e.XMLName.Local})
						cl.mu.Unlock()
					}
				}
				continue
			}
			m := Message{From: v.Remote, Type: v.Type, Body: v.Text, Subject: v.Subject, Delayed: !v.Stamp.IsZero(), ID: v.OriginID}
			cl.mu.Lock()
			cl.got = append(cl.got, m)
			for _, ch := range cl.subs {
				select {
				case ch <- m:
				default: // a reader that fell behind loses messages, not the client
				}
			}
			cl.mu.Unlock()
		case goxmpp.Presence:
			room, nick, _ := strings.Cut(v.From, "/")
			if v.Type != "unavailable" && v.Type != "error" && nick != "" && (strings.HasSuffix(room, "@"+MUC) || strings.HasSuffix(room, "@"+AnonMUC)) {
				cl.mu.Lock()
				cl.joined[room+"/"+nick] = true
				cl.mu.Unlock()
			}
		}
	}
}

// Subscribe returns a channel that gets each message received from now on
// (benchmarks wait on it rather than poll; up to 4096 unread are kept).
func (cl *Client) Subscribe() <-chan Message {
	ch := make(chan Message, 4096)
	cl.mu.Lock()
	cl.subs = append(cl.subs, ch)
	cl.mu.Unlock()
	return ch
}

// Close ends the stream, waits for the reader to see the server end its
// side (go-xmpp's Close reads the stream, so it runs after Recv returned),
// and closes the connection.
func (cl *Client) Close() {
	cl.mu.Lock()
	c, done := cl.c, cl.done
	cl.mu.Unlock()
	_, _ = c.SendOrg("</stream:stream>")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	_ = c.Close()
}

func (cl *Client) conn() *goxmpp.Client {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.c
}

// Say sends a one-to-one chat message.
func (cl *Client) Say(to, text string) {
	cl.tb.Helper()
	if err := cl.Send(to, "chat", text); err != nil {
		cl.tb.Fatal(err)
	}
}

// SayRoom sends a message to a room.
func (cl *Client) SayRoom(room, text string) {
	cl.tb.Helper()
	if err := cl.Send(room, "groupchat", text); err != nil {
		cl.tb.Fatal(err)
	}
}

// Send sends a message of type typ (chat, groupchat) and reports an error.
func (cl *Client) Send(to, typ, text string) error {
	if _, err := cl.conn().Send(goxmpp.Chat{Remote: to, Type: typ, Text: text}); err != nil {
		return fmt.Errorf("%s sends to %s: %w", cl.JID, to, err)
	}
	return nil
}

// Join enters room as nick and waits until the room confirms it.
func (cl *Client) Join(room, nick string) {
	cl.tb.Helper()
	if err := cl.join(room, nick); err != nil {
		cl.tb.Fatal(err)
	}
}

func (cl *Client) join(room, nick string) error {
	if _, err := cl.conn().JoinMUCNoHistory(room, nick); err != nil {
		return err
	}
	cl.mu.Lock()
	cl.rooms[room] = nick
	cl.mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		cl.mu.Lock()
		ok := cl.joined[room+"/"+nick]
		cl.mu.Unlock()
		if ok {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s could not join %s as %s in 20 s", cl.JID, room, nick)
}

// WaitPresence waits until occupant (room/nick) is seen in a room.
func (cl *Client) WaitPresence(occupant string) {
	cl.tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		cl.mu.Lock()
		ok := cl.joined[occupant]
		cl.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	cl.tb.Fatalf("%s did not see %s in the room in 20 s", cl.JID, occupant)
}

// Messages returns the messages received from from (a bare JID, or a
// room: every occupant's messages), in order.
func (cl *Client) Messages(from string) []Message {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	var out []Message
	for _, m := range cl.got {
		if trimResource(m.From) == from || m.From == from {
			out = append(out, m)
		}
	}
	return out
}

// States returns the chat states (composing, active, ...) received from
// from in bodiless messages, in order.
func (cl *Client) States(from string) []string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	var out []string
	for _, m := range cl.states {
		if trimResource(m.From) == from {
			out = append(out, m.Body)
		}
	}
	return out
}

// Wait waits until n messages from from arrived and returns them.
func (cl *Client) Wait(from string, n int) []Message {
	cl.tb.Helper()
	return cl.WaitFor(from, n, 20*time.Second)
}

// WaitFor is Wait with a deadline.
func (cl *Client) WaitFor(from string, n int, d time.Duration) []Message {
	cl.tb.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if got := cl.Messages(from); len(got) >= n {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
	cl.mu.Lock()
	err := cl.readErr
	cl.mu.Unlock()
	cl.tb.Fatalf("%s waited %s for %d messages from %s, got %d: %+v (read error: %v)", cl.JID, d, n, from, len(cl.Messages(from)), cl.Messages(from), err)
	return nil
}
