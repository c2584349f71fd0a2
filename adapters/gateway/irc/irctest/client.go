// Package irctest holds the IRC peers of the adapter's tests: a real
// ngIRCd (Debian's ngircd) started on a loopback port with its own
// configuration, and Client, a plain IRC client connection that plays a
// user.
package irctest

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

// Client is a test user: a plain IRC client connection speaking raw IRC
// to the server, keeping every PRIVMSG it is sent.
type Client struct {
	t        testing.TB
	addr     string
	nick     string
	password string
	channels []string

	mu     sync.Mutex
	nc     net.Conn
	self   string // nick!user@host, from our own JOIN
	joined map[string]bool
	welcom bool
	got    []Line
	joins  []string // "nick channel" of every JOIN seen
	notify chan struct{}
}

// Line is a PRIVMSG or NOTICE the client received.
type Line struct {
	Command            string
	From, Target, Text string
	// Size is the whole line's bytes, "\r\n" included.
	Size int
}

// Dial connects nick to addr and joins channels.
func Dial(t testing.TB, addr, nick string, channels ...string) *Client {
	t.Helper()
	return DialPassword(t, addr, "", nick, channels...)
}

// DialPassword is Dial to a server that wants a password.
func DialPassword(t testing.TB, addr, password, nick string, channels ...string) *Client {
	t.Helper()
	c := &Client{t: t, addr: addr, nick: nick, password: password, channels: channels, notify: make(chan struct{}, 1)}
	if err := c.connect(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func (c *Client) connect() error {
	nc, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.nc, c.joined, c.welcom = nc, map[string]bool{}, false
	c.mu.Unlock()
	go c.read(nc)
	if c.password != "" {
		if err := c.raw("PASS", c.password); err != nil {
			return err
		}
	}
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
func (c *Client) wait(what string, cond func() bool) error {
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

func (c *Client) read(nc net.Conn) {
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
			c.mu.Lock()
			c.joins = append(c.joins, strings.ToLower(nuh.Name+" "+m.Params[0]))
			c.mu.Unlock()
			if strings.EqualFold(nuh.Name, c.nick) {
				c.mu.Lock()
				c.joined[strings.ToLower(m.Params[0])] = true
				c.self = nuh.Canonical()
				c.mu.Unlock()
			}
		case "PRIVMSG", "NOTICE":
			if len(m.Params) == 2 {
				c.mu.Lock()
				c.got = append(c.got, Line{Command: m.Command, From: m.Nick(), Target: m.Params[0], Text: m.Params[1], Size: len(strings.TrimRight(string(raw), "\r\n")) + 2})
				c.mu.Unlock()
				select {
				case c.notify <- struct{}{}:
				default:
				}
			}
		}
	}
}

func (c *Client) raw(cmd string, params ...string) error {
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

// Joins counts the JOINs of nick to channel this client has seen.
func (c *Client) Joins(nick, channel string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, j := range c.joins {
		if j == strings.ToLower(nick+" "+channel) {
			n++
		}
	}
	return n
}

// Raw sends any command.
func (c *Client) Raw(cmd string, params ...string) error { return c.raw(cmd, params...) }

// Say sends a PRIVMSG.
func (c *Client) Say(target, text string) error { return c.raw("PRIVMSG", target, text) }

// Messages returns the PRIVMSGs to target from nicks starting with from.
func (c *Client) Messages(from, target string) []Line {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Line
	for _, l := range c.got {
		if l.Command == "PRIVMSG" && strings.HasPrefix(strings.ToLower(l.From), strings.ToLower(from)) && strings.EqualFold(l.Target, target) {
			out = append(out, l)
		}
	}
	return out
}

// WaitMessages waits until n PRIVMSGs to target from nicks starting with
// from have arrived, and returns them (without polling: for benchmarks).
func (c *Client) WaitMessages(from, target string, n int, timeout time.Duration) ([]Line, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if ls := c.Messages(from, target); len(ls) >= n {
			return ls, nil
		}
		select {
		case <-c.notify:
		case <-deadline.C:
			return nil, fmt.Errorf("test client %s: %d messages from %s to %s in %s, want %d", c.nick, len(c.Messages(from, target)), from, target, timeout, n)
		}
	}
}

// Nick is the client's nick.
func (c *Client) Nick() string { return c.nick }

// Notices returns the NOTICEs from nicks starting with from.
func (c *Client) Notices(from string) []Line {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Line
	for _, l := range c.got {
		if l.Command == "NOTICE" && strings.HasPrefix(strings.ToLower(l.From), strings.ToLower(from)) {
			out = append(out, l)
		}
	}
	return out
}

// Self is the client's nick!user@host as the server shows it.
func (c *Client) Self() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.self
}

// Reconnect connects again (after a server restart), keeping what was
// received.
func (c *Client) Reconnect() error {
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
func (c *Client) Close() {
	c.mu.Lock()
	nc := c.nc
	c.mu.Unlock()
	if nc != nil {
		_ = c.raw("QUIT", "bye")
		nc.Close()
	}
}
