// Package telegramtest holds the Telegram peers of the adapter's tests:
// Emulator runs telegram-test-api (an npm package: a third-party emulator of
// the Bot API with a client API through which a test plays the user), and
// Server is an in-process fake of the Bot API for what that emulator does
// not do (rate limits, refusals, files, offsets that confirm updates). Both
// speak the Bot API's real wire format.
package telegramtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvModule names the environment variable that points at the installed
// telegram-test-api module (its directory, the one with package.json).
const EnvModule = "HERMES_TELEGRAM_TEST_API"

// Token is a bot token in the Bot API's format, for the emulator and the
// fake (the adapter checks the format).
const Token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0"

// BotUsername is the username the emulator's getMe reports.
const BotUsername = "TestNameBot"

// Emulator is a running telegram-test-api.
type Emulator struct {
	// URL is the Bot API root (what TELEGRAM_API_URL points at).
	URL  string
	cmd  *exec.Cmd
	mod  string
	port int
	http *http.Client

	mu   sync.Mutex
	seen map[int64][]BotMessage // bot messages read so far, by chat
}

// launcher starts the emulator the way its README shows for Node tests,
// on a given port. A webhook post that fails would otherwise end the
// process with an unhandled rejection.
const launcher = `
const TelegramServer = require(process.argv[1]);
const server = new TelegramServer({port: Number(process.argv[2]), host: '127.0.0.1', storeTimeout: 3600});
process.on('unhandledRejection', (e) => console.error('unhandled rejection:', e && e.message));
server.start().then(() => console.log('ready'), (e) => { console.error(e); process.exit(1); });
`

// Start runs the emulator from the module named by $HERMES_TELEGRAM_TEST_API
// on a free loopback port, and stops it when the test ends. It skips the
// test when the variable is unset.
func Start(t testing.TB) *Emulator {
	t.Helper()
	mod := os.Getenv(EnvModule)
	if mod == "" {
		t.Skipf("%s is not set: install telegram-test-api with `npm ci --prefix .ci/node` and set it to $PWD/.ci/node/node_modules/telegram-test-api", EnvModule)
	}
	if _, err := os.Stat(mod + "/package.json"); err != nil {
		t.Fatalf("%s=%s: not an installed npm module: %v", EnvModule, mod, err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	e := &Emulator{URL: fmt.Sprintf("http://127.0.0.1:%d", port), mod: mod, port: port, http: &http.Client{Timeout: 10 * time.Second},
		seen: map[int64][]BotMessage{}}
	t.Cleanup(e.stop)
	e.launch(t)
	return e
}

// Restart kills the emulator and starts it again on the same port. What
// it held (updates, the bot's messages not yet read by Received) is lost,
// as the emulator keeps it in memory only; messages Received already
// returned are kept.
func (e *Emulator) Restart(t testing.TB) {
	t.Helper()
	e.stop()
	e.launch(t)
}

// launch runs the emulator's process and waits until it is ready.
func (e *Emulator) launch(t testing.TB) {
	t.Helper()
	cmd := exec.Command("node", "-e", launcher, e.mod, strconv.Itoa(e.port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start telegram-test-api with node: %v", err)
	}
	e.cmd = cmd
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ok := false
		for sc.Scan() {
			if !ok && strings.TrimSpace(sc.Text()) == "ready" {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("telegram-test-api exited: %s", stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("telegram-test-api did not start in 30 s: %s", stderr.String())
	}
}

func (e *Emulator) stop() {
	if e.cmd != nil && e.cmd.Process != nil {
		_ = e.cmd.Process.Signal(syscall.SIGKILL)
		_ = e.cmd.Wait()
		e.cmd = nil
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// User is a Telegram user as messages carry it.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	Username  string `json:"username,omitempty"`
}

// Chat is a chat as messages carry it.
type Chat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"` // private, group, supergroup
	Title     string `json:"title,omitempty"`
	FirstName string `json:"first_name,omitempty"`
	Username  string `json:"username,omitempty"`
	IsForum   bool   `json:"is_forum,omitempty"`
}

// Entity is a message entity (offsets in UTF-16 code units).
type Entity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
}

// Message is what a user sends.
type Message struct {
	From            User     `json:"from"`
	Chat            Chat     `json:"chat"`
	Text            string   `json:"text"`
	Entities        []Entity `json:"entities,omitempty"`
	MessageThreadID int      `json:"message_thread_id,omitempty"`
	IsTopicMessage  bool     `json:"is_topic_message,omitempty"`
	// ReplyToMessage is the message replied to, as Telegram nests it.
	ReplyToMessage map[string]any `json:"reply_to_message,omitempty"`
}

// DM is a private chat's message from user.
func DM(user User, text string) Message {
	return Message{From: user, Chat: Chat{ID: user.ID, Type: "private", FirstName: user.FirstName, Username: user.Username}, Text: text}
}

// Send posts m as the user, through the emulator's client API; a text
// starting with / goes as a command (with its bot_command entity, as
// Telegram marks it).
func (e *Emulator) Send(ctx context.Context, token string, m Message) error {
	route := "/sendMessage"
	if strings.HasPrefix(m.Text, "/") && m.Entities == nil {
		head, _, _ := strings.Cut(m.Text, " ")
		m.Entities = []Entity{{Type: "bot_command", Offset: 0, Length: len([]rune(head))}}
		route = "/sendCommand"
	}
	body := map[string]any{}
	raw, _ := json.Marshal(m)
	_ = json.Unmarshal(raw, &body)
	body["botToken"] = token
	body["date"] = time.Now().Unix()
	return e.post(ctx, route, body, nil)
}

// Press presses an inline button of a bot message, as user.
func (e *Emulator) Press(ctx context.Context, token string, from User, msg BotMessage, data string) error {
	body := map[string]any{
		"botToken": token,
		"from":     from,
		"data":     data,
		"message": map[string]any{"message_id": msg.MessageID, "date": time.Now().Unix(), "text": msg.Message.Text,
			"chat": map[string]any{"id": msg.ChatID(), "type": "private"}},
	}
	return e.post(ctx, "/sendCallback", body, nil)
}

// BotMessage is a message the bot sent, as the emulator stored it.
type BotMessage struct {
	MessageID int `json:"messageId"`
	Message   struct {
		ChatID          json.RawMessage `json:"chat_id"`
		Text            string          `json:"text"`
		ParseMode       string          `json:"parse_mode"`
		MessageThreadID json.RawMessage `json:"message_thread_id"`
		ReplyParameters *struct {
			MessageID int `json:"message_id"`
		} `json:"reply_parameters"`
		ReplyMarkup *struct {
			InlineKeyboard [][]struct {
				Text         string `json:"text"`
				CallbackData string `json:"callback_data"`
			} `json:"inline_keyboard"`
		} `json:"reply_markup"`
	} `json:"message"`
}

// ChatID is the chat the message went to.
func (m BotMessage) ChatID() int64 { return number(m.Message.ChatID) }

// ThreadID is the forum topic the message went to (0: none).
func (m BotMessage) ThreadID() int64 { return number(m.Message.MessageThreadID) }

func number(raw json.RawMessage) int64 {
	s := strings.Trim(string(raw), `"`)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// Received returns every message the bot sent to chat so far (reading the
// emulator's unread ones and keeping them).
func (e *Emulator) Received(ctx context.Context, token string, chat int64) ([]BotMessage, error) {
	var res struct {
		Result []BotMessage `json:"result"`
	}
	if err := e.post(ctx, "/getUpdates", map[string]any{"token": token, "chatId": chat}, &res); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen[chat] = append(e.seen[chat], res.Result...)
	return append([]BotMessage(nil), e.seen[chat]...), nil
}

// WaitReceived waits until the bot sent at least n messages to chat.
func (e *Emulator) WaitReceived(t testing.TB, token string, chat int64, n int, timeout time.Duration) []BotMessage {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var got []BotMessage
	for {
		var err error
		got, err = e.Received(context.Background(), token, chat)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(got) < n {
		t.Fatalf("waited %s for %d bot messages in chat %d, got %d: %s", timeout, n, chat, len(got), texts(got))
	}
	return got
}

func texts(ms []BotMessage) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "\n  %q", m.Message.Text)
	}
	return b.String()
}

// BotMessages returns the messages the bot sent to chat as they read now
// (edits applied, as editMessageText left them), in the order sent, read
// or not.
func (e *Emulator) BotMessages(ctx context.Context, token string, chat int64) ([]BotMessage, error) {
	var res struct {
		Result []json.RawMessage `json:"result"`
	}
	if err := e.post(ctx, "/getUpdatesHistory", map[string]any{"token": token}, &res); err != nil {
		return nil, err
	}
	var out []BotMessage
	for _, raw := range res.Result {
		var probe struct {
			Message struct {
				From *User `json:"from"`
			} `json:"message"`
		}
		var m BotMessage
		if json.Unmarshal(raw, &probe) != nil || probe.Message.From != nil || json.Unmarshal(raw, &m) != nil {
			continue
		}
		if m.ChatID() == chat {
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].MessageID < out[j].MessageID })
	return out, nil
}

// UserMessageIDs returns the message ids the emulator gave what users sent
// to the bot, in order.
func (e *Emulator) UserMessageIDs(ctx context.Context, token string) ([]int, error) {
	var res struct {
		Result []struct {
			MessageID int             `json:"messageId"`
			Message   json.RawMessage `json:"message"`
			Callback  json.RawMessage `json:"callbackQuery"`
		} `json:"result"`
	}
	if err := e.post(ctx, "/getUpdatesHistory", map[string]any{"token": token}, &res); err != nil {
		return nil, err
	}
	var ids []int
	for _, r := range res.Result {
		var m struct {
			From *User `json:"from"`
		}
		_ = json.Unmarshal(r.Message, &m)
		if m.From != nil && !m.From.IsBot && len(r.Callback) == 0 {
			ids = append(ids, r.MessageID)
		}
	}
	return ids, nil
}

func (e *Emulator) post(ctx context.Context, route string, body any, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+route, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.http.Do(req)
	if err != nil {
		return fmt.Errorf("telegram-test-api %s: %w", route, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("telegram-test-api %s: HTTP %d: %s", route, resp.StatusCode, data)
	}
	var ok struct {
		OK bool `json:"ok"`
	}
	if err := json.Unmarshal(data, &ok); err != nil || !ok.OK {
		return errors.Join(fmt.Errorf("telegram-test-api %s: %s", route, data), err)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}
