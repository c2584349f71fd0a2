package irc_test

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircmsg"
	"github.com/ergochat/irc-go/ircreader"
)

// client is a test user: a plain IRC client connection speaking raw IRC
// to the server, keeping every PRIVMSG it is sent.
type client struct {
	t        testing.TB
	addr     string
	nick     string
	channels []string

	mu     sync.Mutex
	nc     net.Conn
	self   string // nick!user@host, from our own JOIN
	joined map[string]bool
	welcom bool
	got    []line
}

// line is a PRIVMSG the client received.
type line struct {
	from, target, text string
	size               int // the whole line's bytes, "\r\n" included
}

// dial connects nick to addr and joins channels.
func dial(t testing.TB, addr, nick string, channels ...string) *client {
	t.Helper()
	c := &client{t: t, addr: addr, nick: nick, channels: channels}
	if err := c.connect(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func (c *client) connect() error {
	nc, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.nc, c.joined, c.welcom = nc, map[string]bool{}, false
	c.mu.Unlock()
	go c.read(nc)
	if err := c.raw("NICK", c.nick); err != nil {
		return err
	}
	if err := c.raw("USER", c.nick, "0", "*", "Test user "+c.nick); err != nil {
		return err
	}
	if err := c.wait("registration", func() bool { return c.welcom }); err != nil {
		return err
	}
	for _, ch := range c.channels {
		if err := c.raw("JOIN", ch); err != nil {
			return err
		}
	}
	return c.wait("joins", func() bool {
		for _, ch := range c.channels {
			if !c.joined[strings.ToLower(ch)] {
				return false
			}
		}
		return true
	})
}

// wait polls cond (under the lock) for up to 10 s.
func (c *client) wait(what string, cond func() bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		ok := cond()
		c.mu.Unlock()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("test client %s: no %s in 10 s", c.nick, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *client) read(nc net.Conn) {
	r := ircreader.NewIRCReader(nc)
	for {
		raw, err := r.ReadLine()
		if err != nil {
			return
		}
		m, err := ircmsg.ParseLine(string(raw))
		if err != nil {
			continue
		}
		switch m.Command {
		case "PING":
			c.raw("PONG", m.Params...)
		case "001":
			c.mu.Lock()
			c.welcom = true
			c.mu.Unlock()
		case "JOIN":
			nuh, _ := m.NUH()
			if strings.EqualFold(nuh.Name, c.nick) {
				c.mu.Lock()
				c.joined[strings.ToLower(m.Params[0])] = true
				c.self = nuh.Canonical()
				c.mu.Unlock()
			}
		case "PRIVMSG":
			if len(m.Params) == 2 {
				c.mu.Lock()
				c.got = append(c.got, line{from: m.Nick(), target: m.Params[0], text: m.Params[1], size: len(strings.TrimRight(string(raw), "\r\n")) + 2})
				c.mu.Unlock()
			}
		}
	}
}

func (c *client) raw(cmd string, params ...string) error {
	m := ircmsg.MakeMessage(nil, "", cmd, params...)
	b, err := m.LineBytesStrict(true, 512)
	if err != nil {
		return err
	}
	c.mu.Lock()
	nc := c.nc
	c.mu.Unlock()
	_, err = nc.Write(b)
	return err
}

// say sends a PRIVMSG.
func (c *client) say(target, text string) error { return c.raw("PRIVMSG", target, text) }

// messages returns the PRIVMSGs to target from nicks starting with from.
func (c *client) messages(from, target string) []line {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []line
	for _, l := range c.got {
		if strings.HasPrefix(strings.ToLower(l.from), strings.ToLower(from)) && strings.EqualFold(l.target, target) {
			out = append(out, l)
		}
	}
	return out
}

// Self is the client's nick!user@host as the server shows it.
func (c *client) Self() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.self
}

// reconnect connects again (after a server restart), keeping what was
// received.
func (c *client) reconnect() error {
	c.Close()
	var err error
	for range 50 {
		if err = c.connect(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// Close quits.
func (c *client) Close() {
	c.mu.Lock()
	nc := c.nc
	c.mu.Unlock()
	if nc != nil {
		_ = c.raw("QUIT", "bye")
		nc.Close()
	}
}
