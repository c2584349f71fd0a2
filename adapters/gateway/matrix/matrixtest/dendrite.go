// Package matrixtest runs a real Matrix homeserver — Dendrite, built by
// .ci/run from the pinned module in .ci/dendrite — for the Matrix
// adapter's tests and benchmarks: on a free loopback port, with SQLite
// databases in a temporary directory, federation off and shared-secret
// registration for the test's users. It also gives tests a Matrix client
// (mautrix-go) for each user, to play the people the bot talks to.
package matrixtest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
	"maunium.net/go/mautrix/synapseadmin"
)

// EnvBinary names the environment variable that points at the Dendrite
// binary (.ci/run exports it).
const EnvBinary = "HERMES_DENDRITE"

// ServerName is the test homeserver's name: users are @name:localhost.
const ServerName = "localhost"

// RateLimited is the one user the server rate-limits (everyone else is
// exempt, so that the tests' bursts are not refused).
const RateLimited = "limited"

// Rate limit of RateLimited: Threshold requests per Cooloff.
const (
	Threshold = 2
	Cooloff   = 5 * time.Second
)

// Server is a running Dendrite.
type Server struct {
	// URL is the client-server API's base URL.
	URL    string
	secret string
	dir    string
	bin    string
	cfg    string
	addr   string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	users  map[string]*User
}

// User is a registered account with a client logged in.
type User struct {
	ID     id.UserID
	Token  string
	Client *mautrix.Client
}

// Binary returns the Dendrite binary from $HERMES_DENDRITE, skipping the
// test when it is unset — or failing it under CI, where .ci/run must have
// built it.
func Binary(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv(EnvBinary)
	if bin == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s is not set under CI: .ci/run builds Dendrite into .ci/dendrite/bin and exports it", EnvBinary)
		}
		tb.Skipf("%s is not set: build Dendrite with `cd .ci/dendrite && go build -o bin/ github.com/matrix-org/dendrite/cmd/dendrite` and set it to that binary", EnvBinary)
	}
	if st, err := os.Stat(bin); err != nil || st.IsDir() {
		tb.Fatalf("%s=%s: not a Dendrite binary: %v", EnvBinary, bin, err)
	}
	return bin
}

// Start runs Dendrite on a free loopback port and stops it when the test
// ends. It skips the test when $HERMES_DENDRITE is unset (and CI is not).
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary(tb)
	dir := tb.TempDir()
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), secret: "hermes-test-" + rand.Text(), dir: dir, users: map[string]*User{}}
	if err := writeKey(filepath.Join(dir, "matrix_key.pem")); err != nil {
		tb.Fatal(err)
	}
	cfg := filepath.Join(dir, "dendrite.yaml")
	if err := os.WriteFile(cfg, []byte(config(dir, s.secret)), 0o600); err != nil {
		tb.Fatal(err)
	}
	s.bin, s.cfg, s.addr = bin, cfg, fmt.Sprintf("127.0.0.1:%d", port)
	tb.Cleanup(s.kill)
	s.run(tb)
	return s
}

// run starts the process and waits until it serves.
func (s *Server) run(tb testing.TB) {
	tb.Helper()
	logPath := filepath.Join(s.dir, "dendrite.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(s.bin, "-config", s.cfg, "-http-bind-address", s.addr)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		tb.Fatalf("start dendrite: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/_matrix/client/versions")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			tb.Fatalf("dendrite exited: %s", tail(log))
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			tb.Fatalf("dendrite did not answer in 60 s: %s", tail(log))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill stops the process and waits for it.
func (s *Server) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// Restart kills the server and starts it again on the same address and
// data, returning once it serves.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.kill()
	s.run(tb)
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// config is a minimal Dendrite configuration: what is not named keeps
// Dendrite's defaults.
func config(dir, secret string) string {
	db := func(name string) string {
		return fmt.Sprintf(`{connection_string: "file:%s"}`, filepath.Join(dir, name+".db"))
	}
	return fmt.Sprintf(`version: 2
global:
  server_name: %s
  private_key: %s
  disable_federation: true
  database: {connection_string: ""}
  jetstream: {in_memory: false, storage_path: %s}
  presence: {enable_inbound: false, enable_outbound: false}
  report_stats: {enabled: false}
client_api:
  registration_disabled: true
  registration_shared_secret: %q
  rate_limiting:
    enabled: true
    threshold: %d
    cooloff_ms: %d
    exempt_user_ids: []
federation_api:
  database: %s
  key_perspectives: []
key_server:
  database: %s
media_api:
  database: %s
  base_path: %s
mscs:
  database: %s
relay_api:
  database: %s
room_server:
  database: %s
sync_api:
  database: %s
  search: {enabled: false, index_path: %s, language: en}
user_api:
  bcrypt_cost: 4
  account_database: %s
logging:
  - {type: std, level: warn}
`, ServerName, filepath.Join(dir, "matrix_key.pem"), dir, secret, Threshold, Cooloff.Milliseconds(),
		db("federation"), db("keys"), db("media"), filepath.Join(dir, "media"), db("mscs"), db("relay"),
		db("rooms"), db("sync"), filepath.Join(dir, "searchindex"), db("users"))
}

// writeKey writes a signing key in Dendrite's PEM format.
func writeKey(path string) error {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return err
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "MATRIX PRIVATE KEY", Headers: map[string]string{"Key-ID": "ed25519:test"}, Bytes: seed})
	return os.WriteFile(path, b, 0o600)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Register creates the account name (with password name+"-password") via
// the shared-secret admin API and logs a client in. Everyone but
// RateLimited is an admin, whom Dendrite does not rate-limit.
func (s *Server) Register(tb testing.TB, name string) *User {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := mautrix.NewClient(s.URL, "", "")
	if err != nil {
		tb.Fatal(err)
	}
	admin := synapseadmin.Client{Client: cli}
	resp, err := admin.SharedSecretRegister(ctx, s.secret, synapseadmin.ReqSharedSecretRegister{
		Username: name, Password: Password(name), Admin: name != RateLimited})
	if err != nil {
		tb.Fatalf("register %s: %v", name, err)
	}
	c, err := mautrix.NewClient(s.URL, resp.UserID, resp.AccessToken)
	if err != nil {
		tb.Fatal(err)
	}
	c.DeviceID = resp.DeviceID
	u := &User{ID: resp.UserID, Token: resp.AccessToken, Client: c}
	s.mu.Lock()
	s.users[name] = u
	s.mu.Unlock()
	return u
}

// Password is the password Register gives name.
func Password(name string) string { return name + "-password" }

// UserID is the Matrix id of name on the test server.
func UserID(name string) id.UserID { return id.NewUserID(name, ServerName) }

// DM creates a direct chat of u with other (invited, is_direct) and
// returns its room id.
func (u *User) DM(tb testing.TB, other id.UserID) id.RoomID {
	tb.Helper()
	resp, err := u.Client.CreateRoom(context.Background(), &mautrix.ReqCreateRoom{Preset: "trusted_private_chat", IsDirect: true, Invite: []id.UserID{other}})
	if err != nil {
		tb.Fatalf("create a direct chat: %v", err)
	}
	return resp.RoomID
}

// Group creates a room of u with the others invited and returns its id.
func (u *User) Group(tb testing.TB, name string, invite ...id.UserID) id.RoomID {
	tb.Helper()
	resp, err := u.Client.CreateRoom(context.Background(), &mautrix.ReqCreateRoom{Preset: "private_chat", Name: name, Invite: invite})
	if err != nil {
		tb.Fatalf("create a room: %v", err)
	}
	return resp.RoomID
}

// Join joins room (after an invite).
func (u *User) Join(tb testing.TB, room id.RoomID) {
	tb.Helper()
	if _, err := u.Client.JoinRoomByID(context.Background(), room); err != nil {
		tb.Fatalf("%s joins %s: %v", u.ID, room, err)
	}
}

// Say sends content to room and returns the event's id.
func (u *User) Say(tb testing.TB, room id.RoomID, content *event.MessageEventContent) id.EventID {
	tb.Helper()
	resp, err := u.Client.SendMessageEvent(context.Background(), room, event.EventMessage, content)
	if err != nil {
		tb.Fatalf("%s says in %s: %v", u.ID, room, err)
	}
	return resp.EventID
}

// Text sends plain text to room.
func (u *User) Text(tb testing.TB, room id.RoomID, text string) id.EventID {
	tb.Helper()
	return u.Say(tb, room, &event.MessageEventContent{MsgType: event.MsgText, Body: text})
}

// Messages returns the m.room.message events in room, oldest first.
func (u *User) Messages(ctx context.Context, room id.RoomID) ([]*event.Event, error) {
	var out []*event.Event
	from := ""
	for range 50 {
		resp, err := u.Client.Messages(ctx, room, from, "", mautrix.DirectionBackward, nil, 100)
		if err != nil {
			return nil, err
		}
		for _, ev := range resp.Chunk {
			if ev.Type != event.EventMessage {
				continue
			}
			if ev.Content.Parsed == nil {
				if err := ev.Content.ParseRaw(ev.Type); err != nil && !errors.Is(err, event.ErrContentAlreadyParsed) {
					return nil, err
				}
			}
			out = append(out, ev)
		}
		if resp.End == "" || len(resp.Chunk) == 0 {
			break
		}
		from = resp.End
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// From returns the messages that sender sent in room, oldest first.
func (u *User) From(ctx context.Context, room id.RoomID, sender id.UserID) ([]*event.Event, error) {
	all, err := u.Messages(ctx, room)
	if err != nil {
		return nil, err
	}
	var out []*event.Event
	for _, ev := range all {
		if ev.Sender == sender {
			out = append(out, ev)
		}
	}
	return out, nil
}

// Shown is a message as a client shows it: the original event, the
// content of its latest edit (m.replace) or its own, and how many edits
// it had.
type Shown struct {
	ID      id.EventID
	Content *event.MessageEventContent
	Edits   int
}

// Shown returns sender's messages in room as a client shows them: edits
// applied to the messages they replace, not listed themselves.
func (u *User) Shown(ctx context.Context, room id.RoomID, sender id.UserID) ([]Shown, error) {
	evs, err := u.From(ctx, room, sender)
	if err != nil {
		return nil, err
	}
	var out []Shown
	at := map[id.EventID]int{}
	for _, ev := range evs {
		c := ev.Content.AsMessage()
		if c.RelatesTo != nil && c.RelatesTo.Type == event.RelReplace {
			if i, ok := at[c.RelatesTo.EventID]; ok && c.NewContent != nil {
				out[i].Content, out[i].Edits = c.NewContent, out[i].Edits+1
			}
			continue
		}
		at[ev.ID] = len(out)
		out = append(out, Shown{ID: ev.ID, Content: c})
	}
	return out, nil
}

// WaitFrom waits until sender sent at least n messages in room and
// returns them all.
func (u *User) WaitFrom(tb testing.TB, room id.RoomID, sender id.UserID, n int) []*event.Event {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var (
		got []*event.Event
		err error
	)
	for time.Now().Before(deadline) {
		got, err = u.From(context.Background(), room, sender)
		if err == nil && len(got) >= n {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
	var texts []string
	for _, ev := range got {
		texts = append(texts, ev.Content.AsMessage().Body)
	}
	tb.Fatalf("waited 30 s for %d messages of %s in %s: got %d (%v) %v", n, sender, room, len(got), strings.Join(texts, " | "), err)
	return nil
}

// WaitJoined waits until who has joined room.
func (u *User) WaitJoined(tb testing.TB, room id.RoomID, who id.UserID) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := u.Client.JoinedMembers(context.Background(), room)
		if err == nil {
			if _, ok := resp.Joined[who]; ok {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("waited 30 s for %s to join %s", who, room)
}
