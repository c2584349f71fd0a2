package xmpptest

import (
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

	tb testing.TB
	c  *goxmpp.Client

	mu      sync.Mutex
	got     []Message
	joined  map[string]bool
	done    chan struct{}
	readErr error
}

// Connect logs user in (registered with Register) and starts reading.
func (s *Server) Connect(user, password string) *Client {
	s.tb.Helper()
	jid := user + "@" + Domain
	opts := goxmpp.Options{Host: s.Addr, User: jid, Password: password, Resource: "test",
		NoTLS: true, StartTLS: true, TLSConfig: s.TLS(), DialTimeout: 10 * time.Second}
	c, err := opts.NewClient()
	if err != nil {
		s.tb.Fatalf("%s logs in: %v", jid, err)
	}
	cl := &Client{JID: jid, tb: s.tb, c: c, joined: map[string]bool{}, done: make(chan struct{})}
	go cl.read()
	s.tb.Cleanup(cl.Close)
	return cl
}

func (cl *Client) read() {
	defer close(cl.done)
	for {
		st, err := cl.c.Recv()
		if err != nil {
			cl.mu.Lock()
			cl.readErr = err
			cl.mu.Unlock()
			return
		}
		switch v := st.(type) {
		case goxmpp.Chat:
			if v.Text == "" {
				continue
			}
			cl.mu.Lock()
			cl.got = append(cl.got, Message{From: v.Remote, Type: v.Type, Body: v.Text, Subject: v.Subject,
				Delayed: !v.Stamp.IsZero(), ID: v.OriginID})
			cl.mu.Unlock()
		case goxmpp.Presence:
			room, nick, _ := strings.Cut(v.From, "/")
			if v.Type != "unavailable" && v.Type != "error" && nick != "" && strings.HasSuffix(room, "@"+MUC) {
				cl.mu.Lock()
				cl.joined[room+"/"+nick] = true
				cl.mu.Unlock()
			}
		}
	}
}

// Close ends the stream, waits for the reader to see the server end its
// side (go-xmpp's Close reads the stream, so it runs after Recv returned),
// and closes the connection.
func (cl *Client) Close() {
	_, _ = cl.c.SendOrg("</stream:stream>")
	select {
	case <-cl.done:
	case <-time.After(10 * time.Second):
	}
	_ = cl.c.Close()
}

// Say sends a one-to-one chat message.
func (cl *Client) Say(to, text string) {
	cl.tb.Helper()
	if _, err := cl.c.Send(goxmpp.Chat{Remote: to, Type: "chat", Text: text}); err != nil {
		cl.tb.Fatalf("%s says: %v", cl.JID, err)
	}
}

// SayRoom sends a message to a room.
func (cl *Client) SayRoom(room, text string) {
	cl.tb.Helper()
	if _, err := cl.c.Send(goxmpp.Chat{Remote: room, Type: "groupchat", Text: text}); err != nil {
		cl.tb.Fatalf("%s says in %s: %v", cl.JID, room, err)
	}
}

// Join enters room as nick and waits until the room confirms it.
func (cl *Client) Join(room, nick string) {
	cl.tb.Helper()
	if _, err := cl.c.JoinMUCNoHistory(room, nick); err != nil {
		cl.tb.Fatal(err)
	}
	cl.WaitPresence(room + "/" + nick)
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
