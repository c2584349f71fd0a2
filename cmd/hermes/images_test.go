package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/gateway/email/emailtest"
	"github.com/hermes-go/hermes/adapters/gateway/telegram/telegramtest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

// dotPNG is a real 1×1 PNG.
var dotPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

func sentImage(t *testing.T, req llmtest.Request) bool {
	t.Helper()
	return bytes.Contains(req.Raw, []byte(`"url":"data:image/png;base64,`+base64.StdEncoding.EncodeToString(dotPNG)+`"`))
}

// TestChatImage: chat --image sends the file's bytes to the model as an
// image part; the bytes are kept once in the home's blob store and the
// event names them; the session replays, and export and import into
// another home carry the image.
func TestChatImage(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "A dot."}, llmtest.Reply{Content: "Still a dot."})
	defer srv.Close()
	home, wd := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(wd, "dot.png"), dotPNG, 0o644)
	out, errOut, code := hermesIn(t, wd, chatEnv(srv), "", "--home", home, "chat", "--model", "gpt-4o-mini", "-q", "what is this?", "--image", "dot.png")
	if code != 0 || out != "A dot.\n" {
		t.Fatalf("exit %d %q %s", code, out, errOut)
	}
	if !sentImage(t, srv.Requests()[0]) {
		t.Fatalf("the request carries no image part with the file's bytes: %s", srv.Requests()[0].Raw)
	}
	sum := sha256.Sum256(dotPNG)
	hash := hex.EncodeToString(sum[:])
	if b, err := os.ReadFile(filepath.Join(home, "blobs", "sha256", hash[:2], hash[2:])); err != nil || !bytes.Equal(b, dotPNG) {
		t.Fatalf("blob: %v", err)
	}
	id := sessionIDFrom(t, errOut)
	events := mustRun(t, home, "sessions", "events", id)
	if strings.Contains(events, base64.StdEncoding.EncodeToString(dotPNG)) || !strings.Contains(events, hash) {
		t.Fatalf("the events must name the image, never hold it:\n%s", events)
	}
	if out := mustRun(t, home, "sessions", "replay", id); !strings.Contains(out, "matches the record") {
		t.Fatal(out)
	}
	if out := mustRun(t, home, "sessions", "show", id); !strings.Contains(out, "[image dot.png: image/png, "+strconv.Itoa(len(dotPNG))+" bytes, sha256 "+hash[:12]+"]") {
		t.Fatalf("show:\n%s", out)
	}

	// A bare image path in a piped line attaches it too.
	out, errOut, code = hermesIn(t, wd, chatEnv(srv), "look again at dot.png\n", "--home", home, "chat", "--model", "gpt-4o-mini", "--resume", id)
	if code != 0 || !strings.Contains(out+errOut, "Still a dot.") {
		t.Fatalf("exit %d %q %s", code, out, errOut)
	}
	var last map[string]any
	msgs := srv.Requests()[1].Body["messages"].([]any)
	last = msgs[len(msgs)-1].(map[string]any)
	if !sentImage(t, srv.Requests()[1]) || !strings.Contains(string(mustJSON(last)), "look again at dot.png") {
		t.Fatalf("second request %s", srv.Requests()[1].Raw)
	}

	exported := mustRun(t, home, "sessions", "export", id)
	f := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(f, []byte(exported), 0o600)
	other := t.TempDir()
	mustRun(t, other, "sessions", "import", f)
	if b, err := os.ReadFile(filepath.Join(other, "blobs", "sha256", hash[:2], hash[2:])); err != nil || !bytes.Equal(b, dotPNG) {
		t.Fatalf("the image did not come with the import: %v", err)
	}
	var a, b []schema.Message
	json.Unmarshal([]byte(mustRun(t, home, "sessions", "show", id, "--json")), &a)
	json.Unmarshal([]byte(mustRun(t, other, "sessions", "show", id, "--json")), &b)
	if len(a) == 0 || len(a[1].Images) != 1 || a[1].Images[0].SHA256 != hash || string(mustJSON(a)) != string(mustJSON(b)) {
		t.Fatalf("history after import: %+v vs %+v", a, b)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestChatImageRefusals: a file that is not an image, or is too large, is
// refused with the reason before anything is recorded or sent.
func TestChatImageRefusals(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "never"})
	defer srv.Close()
	home, wd := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(wd, "notes.png"), []byte("these are notes, not pixels"), 0o644)
	big := filepath.Join(wd, "big.png")
	os.WriteFile(big, append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 21<<20)...), 0o644)
	for file, want := range map[string]string{"notes.png": "not a PNG, JPEG, GIF or WebP image", "big.png": "larger than 20 MiB", "gone.png": "no such file"} {
		_, errOut, code := hermesIn(t, wd, chatEnv(srv), "", "--home", home, "chat", "--model", "gpt-4o-mini", "-q", "look", "--image", file)
		if code == 0 || !strings.Contains(errOut, want) || !strings.Contains(errOut, file) || !strings.Contains(errOut, "nothing was sent") {
			t.Fatalf("%s: exit %d %s", file, code, errOut)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	if out := mustRun(t, home, "sessions", "list"); strings.Count(strings.TrimSpace(out), "\n") > 0 {
		t.Fatalf("a refused image left a session:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(home, "blobs", "sha256")); err == nil {
		entries, _ := os.ReadDir(filepath.Join(home, "blobs", "sha256"))
		if len(entries) > 0 {
			t.Fatal("a refused image left a blob")
		}
	}
	// In a chat, the line is refused and the chat goes on.
	srv.Add(llmtest.Reply{Content: "fine"})
	out, errOut, code := hermesIn(t, wd, chatEnv(srv), "what is @notes.png\nhello\n", "--home", home, "chat", "--model", "gpt-4o-mini")
	if code != 0 || !strings.Contains(errOut, "notes.png: not a PNG") || !strings.Contains(out+errOut, "never") {
		t.Fatalf("exit %d %q %s", code, out, errOut)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || bytes.Contains(reqs[0].Raw, []byte("notes.png")) {
		t.Fatalf("the refused line was sent: %d requests", len(reqs))
	}
}

// TestChatImageBlindModel: a model known not to see images gets a note,
// and the person is told what to set.
func TestChatImageBlindModel(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "I cannot see it."})
	defer srv.Close()
	home, wd := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(wd, "dot.png"), dotPNG, 0o644)
	_, errOut, code := hermesIn(t, wd, chatEnv(srv), "", "--home", home, "chat", "--model", "deepseek-chat", "-q", "what is this?", "--image", "dot.png")
	if code != 0 || !strings.Contains(errOut, "deepseek-chat cannot see images: set auxiliary.vision") {
		t.Fatalf("exit %d %s", code, errOut)
	}
	if raw := srv.Requests()[0].Raw; bytes.Contains(raw, []byte("image_url")) || !bytes.Contains(raw, []byte("cannot see images")) {
		t.Fatalf("request %s", raw)
	}
}

// TestTelegramPhotoReachesTheModel: a photo sent to the bot (through the
// in-process Bot API fake: the telegram-test-api emulator has no files)
// reaches the model as an image part with the photo's bytes, through the
// real gateway process.
func TestTelegramPhotoReachesTheModel(t *testing.T) {
	tg := telegramtest.NewServer(telegramtest.Token)
	defer tg.Close()
	srv := llmtest.New(llmtest.Reply{Content: "A black dot."})
	defer srv.Close()
	home := t.TempDir()
	env := chatEnv(srv, "TELEGRAM_BOT_TOKEN="+telegramtest.Token, "TELEGRAM_API_URL="+tg.URL, "TELEGRAM_ALLOWED_USERS=111")
	g := startGateway(t, home, env)
	defer g.kill()
	tg.AddFile("big", "photos/file_7.png", dotPNG)
	tg.Push(map[string]any{"message": map[string]any{"message_id": 9, "date": time.Now().Unix(), "caption": "what is this?",
		"from": map[string]any{"id": 111, "is_bot": false, "first_name": "Alice"}, "chat": map[string]any{"id": 111, "type": "private", "first_name": "Alice"},
		"photo": []map[string]any{{"file_id": "small", "file_unique_id": "us", "width": 1, "height": 1, "file_size": 10},
			{"file_id": "big", "file_unique_id": "ub", "width": 1, "height": 1, "file_size": len(dotPNG)}}}})
	waitUntil(t, "the answer to be sent", func() bool { return len(tg.Calls("sendMessage")) > 0 })
	if text := tg.Calls("sendMessage")[0].Params["text"]; text != "A black dot." {
		t.Fatalf("sent %v\n%s", text, g.stderr.String())
	}
	req := srv.Requests()[0]
	if !sentImage(t, req) || !bytes.Contains(req.Raw, []byte("what is this?")) {
		t.Fatalf("the model got no image part with the photo's bytes: %s", req.Raw)
	}
}

// TestStoreCopyCarriesImages: a copy into an events.db in another
// directory takes the images its log names into that directory's blobs/,
// so that a home made of it shows and sends them.
func TestStoreCopyCarriesImages(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "A dot."})
	defer srv.Close()
	home, wd := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(wd, "dot.png"), dotPNG, 0o644)
	if _, errOut, code := hermesIn(t, wd, chatEnv(srv), "", "--home", home, "chat", "--model", "gpt-4o-mini", "-q", "what is this?", "--image", "dot.png"); code != 0 {
		t.Fatal(errOut)
	}
	other := t.TempDir()
	out := mustRun(t, home, "store", "copy", "--to", "embedded:"+filepath.Join(other, "events.db"))
	if !strings.Contains(out, "images: 1 copied to "+filepath.Join(other, "blobs")) {
		t.Fatalf("copy said:\n%s", out)
	}
	sum := sha256.Sum256(dotPNG)
	hash := hex.EncodeToString(sum[:])
	if b, err := os.ReadFile(filepath.Join(other, "blobs", "sha256", hash[:2], hash[2:])); err != nil || !bytes.Equal(b, dotPNG) {
		t.Fatalf("the image was not copied: %v", err)
	}
	// Run again: the copy resumes, the image is there already.
	if out := mustRun(t, home, "store", "copy", "--to", "embedded:"+filepath.Join(other, "events.db")); !strings.Contains(out, "images: 0 copied") {
		t.Fatalf("second copy said:\n%s", out)
	}
}

// TestEmailImageReachesTheModel: a PNG attached to a mail reaches the
// model as an image part with its bytes, through the real gateway reading
// Dovecot.
func TestEmailImageReachesTheModel(t *testing.T) {
	const bot, pass = "hermes@example.test", "s3cret-mail-pass"
	dv := emailtest.StartDovecot(t, emailtest.DovecotOptions{Users: map[string]string{bot: pass}})
	md := emailtest.StartMaildev(t, bot, pass)
	srv := llmtest.New(llmtest.Reply{Content: "A dot, attached."})
	defer srv.Close()
	home := t.TempDir()
	env := chatEnv(srv, "EMAIL_ADDRESS="+bot, "EMAIL_PASSWORD="+pass, "EMAIL_IMAP_HOST=127.0.0.1", "EMAIL_IMAP_PORT="+strconv.Itoa(dv.IMAPPort),
		"EMAIL_SMTP_HOST=127.0.0.1", "EMAIL_SMTP_PORT="+strconv.Itoa(md.SMTPPort), "EMAIL_POLL_INTERVAL=1", "EMAIL_ALLOWED_USERS=alice@example.test")
	g := startGateway(t, home, env)
	defer g.kill()
	body := "--b1\nContent-Type: text/plain; charset=utf-8\n\nWhat is in the picture?\n--b1\nContent-Type: image/png; name=\"dot.png\"\n" +
		"Content-Disposition: attachment; filename=\"dot.png\"\nContent-Transfer-Encoding: base64\n\n" + base64.StdEncoding.EncodeToString(dotPNG) + "\n--b1--\n"
	dv.Deliver(t, "alice@example.test", []string{bot}, emailtest.Compose([]string{"From: Alice <alice@example.test>", "To: " + bot,
		"Subject: a picture", "Message-ID: <img1@example.test>", "MIME-Version: 1.0", `Content-Type: multipart/mixed; boundary="b1"`}, body))
	got := md.Wait(t, 1)
	if strings.TrimSpace(got[0].Text) != "A dot, attached." {
		t.Fatalf("answer %q", got[0].Text)
	}
	if req := srv.Requests()[0]; !sentImage(t, req) || !bytes.Contains(req.Raw, []byte("What is in the picture?")) {
		t.Fatalf("the model got no image part with the attachment's bytes: %s", req.Raw)
	}
}
