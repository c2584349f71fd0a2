package acp

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/actors/tool"
)

// An editor that offers terminals (clientCapabilities.terminal) shows each
// command of the terminal tool live in its own terminal panel, embedded in
// the tool call. The command does not run in the editor: the editor runs
// `hermes acp attach SOCKET`, which only prints what Hermes sends it over a
// private Unix socket and exits with the command's exit code, while the
// command runs where it always runs (the session's sandbox). Containment
// therefore does not depend on the editor, and stopping the panel's process
// stops the command.

// TokenEnv carries the attach client's one-time token (never on argv,
// where other users' ps would see it).
const TokenEnv = "HERMES_ACP_TERMINAL_TOKEN"

// Frames from Hermes to the attach client: a kind byte, a big-endian
// uint32 length, the payload.
const (
	frameOutput = 'o' // payload: output bytes
	frameExit   = 'x' // payload: the exit code, 4 bytes big-endian
	maxFrame    = 1 << 20
)

// mirrorBuffer bounds the output queued for a slow editor: past it, the
// view drops output (the model's copy is kept by the terminal tool).
const mirrorBuffer = 4 << 20

// attachWait bounds how long Hermes waits for the editor to start the
// attach client, and for it to exit at the end.
const attachWait = 5 * time.Second

// MirrorTerminal implements tool.TerminalMirror: when the editor offers
// terminals, it creates one running the attach client for the tool call
// in flight, and returns the view that feeds it. nil when the editor
// offers none, or the session has no prompt in flight here.
func (a *Agent) MirrorTerminal(ctx context.Context, command, dir string) (tool.MirroredTerminal, error) {
	a.mu.Lock()
	offered := a.terminals
	a.mu.Unlock()
	conn := a.client()
	s := a.asking(tool.EnvFrom(ctx).SessionID)
	if !offered || conn == nil || s == nil {
		return nil, nil
	}
	exe := a.AttachCommand
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	tmp, err := os.MkdirTemp("", "hermes-acp-term-")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(tmp, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	defer func() {
		l.Close()
		os.RemoveAll(tmp) // the client is connected by then, or never will be
	}()
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(raw[:])
	req := sdk.CreateTerminalRequest{SessionId: sdk.SessionId(s.id), Command: exe, Args: []string{"acp", "attach", sock},
		Env: []sdk.EnvVariable{{Name: TokenEnv, Value: token}}, OutputByteLimit: sdk.Ptr(mirrorBuffer)}
	if dir != "" {
		req.Cwd = sdk.Ptr(dir)
	}
	cctx, cancel := context.WithTimeout(ctx, attachWait)
	defer cancel()
	resp, err := conn.CreateTerminal(cctx, req)
	if err != nil {
		return nil, fmt.Errorf("the editor's terminal: %w", err)
	}
	id := resp.TerminalId
	c, err := accept(cctx, l, token)
	if err != nil {
		_, _ = conn.ReleaseTerminal(context.WithoutCancel(ctx), sdk.ReleaseTerminalRequest{SessionId: sdk.SessionId(s.id), TerminalId: id})
		return nil, fmt.Errorf("the editor's terminal did not attach: %w", err)
	}
	// The tool call goes out before the terminal that belongs to it.
	callID := callFrom(ctx)
	a.mu.Lock()
	out := s.out
	if info, ok := s.calls[callID]; ok {
		info.terminal = id
		s.calls[callID] = info
	}
	a.mu.Unlock()
	if out != nil && callID != "" {
		out.push(sdk.UpdateToolCall(sdk.ToolCallId(callID), sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolTerminalRef(id)})))
		out.flush()
	}
	v := &view{c: c, queue: make(chan []byte, 256), gone: make(chan struct{}), pumped: make(chan struct{})}
	v.release = func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attachWait)
		defer cancel()
		_, _ = conn.WaitForTerminalExit(rctx, sdk.WaitForTerminalExitRequest{SessionId: sdk.SessionId(s.id), TerminalId: id})
		_, _ = conn.ReleaseTerminal(rctx, sdk.ReleaseTerminalRequest{SessionId: sdk.SessionId(s.id), TerminalId: id})
	}
	go v.pump()
	go v.watch()
	return v, nil
}

// accept takes the attach client's connection: the first one that
// presents the token (anything else is closed).
func accept(ctx context.Context, l net.Listener, token string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	got := make(chan result, 1)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				got <- result{nil, err}
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(attachWait))
			buf := make([]byte, len(token)+1)
			if _, err := io.ReadFull(c, buf); err != nil || buf[len(token)] != '\n' ||
				subtle.ConstantTimeCompare(buf[:len(token)], []byte(token)) != 1 {
				c.Close()
				continue
			}
			_ = c.SetReadDeadline(time.Time{})
			got <- result{c, nil}
			return
		}
	}()
	select {
	case r := <-got:
		return r.c, r.err
	case <-ctx.Done():
		l.Close()
		if r := <-got; r.c != nil {
			r.c.Close()
		}
		return nil, ctx.Err()
	}
}

// view is one mirrored command: Write queues output for pump, which sends
// it to the attach client.
type view struct {
	c       net.Conn
	mu      sync.Mutex
	closed  bool
	queue   chan []byte
	queued  atomic.Int64
	dropped atomic.Bool
	gone    chan struct{}
	goneOne sync.Once
	pumped  chan struct{}
	release func()
}

// Write implements io.Writer; it never blocks and never fails.
func (v *view) Write(p []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed || len(p) == 0 {
		return len(p), nil
	}
	if v.queued.Load()+int64(len(p)) > mirrorBuffer {
		v.dropped.Store(true)
		return len(p), nil
	}
	b := append([]byte(nil), p...)
	select {
	case v.queue <- b:
		v.queued.Add(int64(len(b)))
	default:
		v.dropped.Store(true)
	}
	return len(p), nil
}

// Gone implements tool.MirroredTerminal.
func (v *view) Gone() <-chan struct{} { return v.gone }

func (v *view) lost() { v.goneOne.Do(func() { close(v.gone) }) }

// pump sends the queued output; once the client is gone it only drains.
func (v *view) pump() {
	defer close(v.pumped)
	dead := false
	for b := range v.queue {
		v.queued.Add(-int64(len(b)))
		for !dead && len(b) > 0 {
			n := min(len(b), maxFrame)
			if err := writeFrame(v.c, frameOutput, b[:n]); err != nil {
				dead = true
				v.lost()
			}
			b = b[n:]
		}
	}
}

// watch notices the attach client ending before the command does (the
// person stopped it in the editor): it sends nothing after its token, so
// any read that returns means it is gone.
func (v *view) watch() {
	var b [1]byte
	_, _ = v.c.Read(b[:])
	v.mu.Lock()
	closed := v.closed
	v.mu.Unlock()
	if !closed {
		v.lost()
	}
}

// Close implements tool.MirroredTerminal: the rest of the output and the
// exit code go to the attach client, which then exits; the editor's
// terminal is released once it has.
func (v *view) Close(code int) {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return
	}
	v.closed = true
	close(v.queue)
	v.mu.Unlock()
	<-v.pumped
	if v.dropped.Load() {
		_ = writeFrame(v.c, frameOutput, []byte("\r\n[hermes: some output was not shown here; the agent read all of it]\r\n"))
	}
	var p [4]byte
	binary.BigEndian.PutUint32(p[:], uint32(int32(code)))
	_ = writeFrame(v.c, frameExit, p[:])
	v.c.Close()
	v.release()
}

func writeFrame(w io.Writer, kind byte, p []byte) error {
	hdr := [5]byte{kind}
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(p)
	return err
}

// Attach is the attach client (`hermes acp attach SOCKET`, run by the
// editor in its terminal): it connects to sock, presents token, copies the
// command's output to stdout and returns the command's exit code. A
// connection that ends without an exit code returns 1, saying so on
// stderr.
func Attach(sock, token string, stdout, stderr io.Writer) int {
	if token == "" {
		fmt.Fprintln(stderr, "hermes acp attach: "+TokenEnv+" is not set; this command is run by the editor for Hermes' terminal")
		return 2
	}
	c, err := net.DialTimeout("unix", sock, attachWait)
	if err != nil {
		fmt.Fprintf(stderr, "hermes acp attach: %v\n", err)
		return 1
	}
	defer c.Close()
	if _, err := io.WriteString(c, token+"\n"); err != nil {
		fmt.Fprintf(stderr, "hermes acp attach: %v\n", err)
		return 1
	}
	var hdr [5]byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			if !errors.Is(err, io.EOF) {
				fmt.Fprintf(stderr, "hermes acp attach: %v\n", err)
			} else {
				fmt.Fprintln(stderr, "hermes acp attach: Hermes ended the terminal without an exit code")
			}
			return 1
		}
		n := binary.BigEndian.Uint32(hdr[1:])
		if n > maxFrame {
			fmt.Fprintf(stderr, "hermes acp attach: a frame of %d bytes (at most %d)\n", n, maxFrame)
			return 1
		}
		switch hdr[0] {
		case frameOutput:
			if _, err := io.CopyN(stdout, c, int64(n)); err != nil {
				return 1
			}
		case frameExit:
			var p [4]byte
			if n != 4 {
				return 1
			}
			if _, err := io.ReadFull(c, p[:]); err != nil {
				return 1
			}
			return int(int32(binary.BigEndian.Uint32(p[:])))
		default:
			fmt.Fprintf(stderr, "hermes acp attach: unknown frame %q\n", hdr[0])
			return 1
		}
	}
}

var _ tool.TerminalMirror = (*Agent)(nil)
