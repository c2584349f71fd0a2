package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/gateway/telegram/telegramtest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events/embedded"
)

// gatewayProc is a `hermes gateway run` process.
type gatewayProc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startGateway runs the gateway on home against the emulator and the
// scripted model, and waits until Telegram is connected.
func startGateway(t *testing.T, home string, env []string) *gatewayProc {
	t.Helper()
	cmd := exec.Command(bin, "--home", home, "--log-level", "info", "gateway", "run", "--model", "gpt-4o-mini")
	cmd.Env = env
	p := &gatewayProc{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, _ := hermes(t, env, "", "--home", home, "gateway", "status", "--json")
		var st struct {
			Running bool
			Status  gatewayStatus
		}
		if json.Unmarshal([]byte(out), &st) == nil && st.Running && st.Status.PID == cmd.Process.Pid &&
			len(st.Status.Platforms) == 1 && st.Status.Platforms[0].Connected {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not connect to Telegram in 30 s; status %s\nstderr:\n%s", out, p.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill ends the process the hard way: no drain, no clean shutdown.
func (p *gatewayProc) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

func telegramEnv(emu *telegramtest.Emulator, srv *llmtest.Server, extra ...string) []string {
	return chatEnv(srv, append([]string{"TELEGRAM_BOT_TOKEN=" + telegramtest.Token, "TELEGRAM_API_URL=" + emu.URL,
		"TELEGRAM_ALLOWED_USERS=111"}, extra...)...)
}

// countGatewayEvents counts events of typ in home's store, opened beside
// the running gateway as another process would.
func countGatewayEvents(t *testing.T, home, typ string) int {
	t.Helper()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rs, err := s.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rs {
		if r.Type == typ {
			n++
		}
	}
	return n
}

// The gateway is killed with SIGKILL while the model is still answering;
// started again, it finishes the turn and the user gets the answer once.
// Killed again after that answer was delivered, it sends nothing twice.
func TestTelegramGatewayKilledMidTurnAnswersOnce(t *testing.T) {
	emu := telegramtest.Start(t)
	srv := llmtest.New(
		llmtest.Reply{Content: "never seen: the process dies first", Delay: 2 * time.Minute},
		llmtest.Reply{Content: "the one answer"},
		llmtest.Reply{Content: "still here"})
	defer srv.Close()
	home := t.TempDir()
	env := telegramEnv(emu, srv)
	alice := telegramtest.User{ID: 111, FirstName: "Alice", Username: "alice"}
	ctx := context.Background()
	tok := telegramtest.Token

	g := startGateway(t, home, env)
	if err := emu.Send(ctx, tok, telegramtest.DM(alice, "what is the answer?")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the model call", func() bool { return len(srv.Requests()) == 1 })
	g.kill()

	g = startGateway(t, home, env)
	got := emu.WaitReceived(t, tok, alice.ID, 1, 30*time.Second)
	if got[0].Message.Text != "the one answer" {
		t.Fatalf("after the restart: %q", got[0].Message.Text)
	}
	waitUntil(t, "the delivery recorded", func() bool { return countGatewayEvents(t, home, "GatewayMessageDelivered") == 1 })
	time.Sleep(time.Second)
	if got, _ = emu.Received(ctx, tok, alice.ID); len(got) != 1 {
		t.Fatalf("%d answers after the restart, want 1", len(got))
	}
	if n := countGatewayEvents(t, home, "UserMessageAdded"); n != 1 {
		t.Fatalf("the question entered the session %d times", n)
	}

	// Killed after the delivery was recorded: nothing is sent again.
	g.kill()
	g = startGateway(t, home, env)
	time.Sleep(1500 * time.Millisecond)
	if got, _ = emu.Received(ctx, tok, alice.ID); len(got) != 1 {
		t.Fatalf("%d answers after the second restart, want 1: %q", len(got), got[len(got)-1].Message.Text)
	}
	// And it still answers.
	if err := emu.Send(ctx, tok, telegramtest.DM(alice, "are you there?")); err != nil {
		t.Fatal(err)
	}
	got = emu.WaitReceived(t, tok, alice.ID, 2, 30*time.Second)
	if got[1].Message.Text != "still here" {
		t.Fatalf("after the second restart: %q", got[1].Message.Text)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d model calls, want 3 (the killed one, its continuation, the new question)", n)
	}
	g.kill()
	if strings.Contains(g.stderr.String(), telegramtest.Token) {
		t.Fatal("the gateway logged the bot token")
	}
}

// An unknown user gets a pairing code; `hermes pairing approve CODE`, run
// beside the gateway, lets them in.
func TestTelegramGatewayPairingThroughTheCLI(t *testing.T) {
	emu := telegramtest.Start(t)
	srv := llmtest.New(llmtest.Reply{Content: "welcome, Bob"})
	defer srv.Close()
	home := t.TempDir()
	env := telegramEnv(emu, srv)
	bob := telegramtest.User{ID: 222, FirstName: "Bob"}
	ctx := context.Background()
	tok := telegramtest.Token
	startGateway(t, home, env)
	if err := emu.Send(ctx, tok, telegramtest.DM(bob, "hello?")); err != nil {
		t.Fatal(err)
	}
	got := emu.WaitReceived(t, tok, bob.ID, 1, 30*time.Second)
	text := got[0].Message.Text
	if !strings.Contains(text, "hermes pairing approve ") {
		t.Fatalf("notice %q", text)
	}
	code := strings.Fields(strings.SplitAfter(text, "approve ")[1])[0]
	if out, errOut, rc := hermes(t, env, "", "--home", home, "pairing", "approve", code); rc != 0 {
		t.Fatalf("pairing approve: %d %s %s", rc, out, errOut)
	}
	if err := emu.Send(ctx, tok, telegramtest.DM(bob, "and now?")); err != nil {
		t.Fatal(err)
	}
	got = emu.WaitReceived(t, tok, bob.ID, 2, 30*time.Second)
	if got[1].Message.Text != "welcome, Bob" || len(srv.Requests()) != 1 {
		t.Fatalf("after approval: %q (%d model calls)", got[1].Message.Text, len(srv.Requests()))
	}
}

func waitUntil(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
