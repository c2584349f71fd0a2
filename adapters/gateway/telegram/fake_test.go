package telegram_test

// These tests use telegramtest.Server, our in-process fake of the Bot API,
// for what telegram-test-api cannot do: answer 429 with retry_after, refuse
// a token or a chat, fail with a 5xx, serve files, and confirm updates by
// offset the way Telegram does.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/adapters/bus"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/telegram"
	"github.com/hermes-go/hermes/adapters/gateway/telegram/telegramtest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

func dmUpdate(from telegramtest.User, msgID int, text string) map[string]any {
	return map[string]any{"message": map[string]any{"message_id": msgID, "date": time.Now().Unix(), "text": text,
		"from": from, "chat": map[string]any{"id": from.ID, "type": "private", "first_name": from.FirstName}}}
}

// A 429 from Telegram is retried after its retry_after, and the reply is
// delivered once.
func TestFakeRetryAfter429(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.Token)
	defer srv.Close()
	srv.Fail("sendMessage", telegramtest.Failure{Code: 429, Description: "Too Many Requests: retry after 1", RetryAfter: 1})
	r := newRig(t, rigOptions{apiURL: srv.URL}, allow("111"), llmtest.Reply{Content: "after the flood"})
	srv.Push(dmUpdate(alice, 5, "hi"))
	waitFor(t, "the reply to be delivered", func() bool { return countTypes(t, r.store, "GatewayMessageDelivered") == 1 })
	calls := srv.Calls("sendMessage")
	if len(calls) != 2 || calls[0].Status != 429 || calls[1].Status != 0 {
		t.Fatalf("sendMessage calls: %+v", calls)
	}
	if gap := calls[1].At.Sub(calls[0].At); gap < time.Second {
		t.Fatalf("retried %s after a 429 asking for 1 s", gap)
	}
	if calls[1].Params["text"] != "after the flood" {
		t.Fatalf("sent %v", calls[1].Params["text"])
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(srv.Calls("sendMessage")); n != 2 {
		t.Fatalf("%d sendMessage calls", n)
	}
}

// A token Telegram refuses stops the adapter for good: Run returns a
// PermanentError, the status says so, and no retry follows.
func TestFakeBadTokenIsPermanent(t *testing.T) {
	srv := telegramtest.NewServer("999:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	defer srv.Close()
	ad, err := telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: srv.URL, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	err = ad.Run(context.Background(), func(context.Context, schema.Inbound) error { return nil })
	var perm *gw.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "TELEGRAM_BOT_TOKEN") {
		t.Fatalf("Run: %v", err)
	}
	if strings.Contains(err.Error(), telegramtest.Token) {
		t.Fatalf("the error shows the token: %v", err)
	}

	// Through the plumbing: reported, not restarted.
	b, err := bus.Open("", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	served := gw.NewServed(ad, b, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- served.Serve(ctx) }()
	waitFor(t, "the error in the status", func() bool { return served.Status().LastError != "" })
	time.Sleep(2500 * time.Millisecond) // Served would have retried after 1 s
	if n := len(srv.Calls("getMe")); n != 2 {
		t.Fatalf("getMe called %d times: a refused token was retried", n)
	}
	if st := served.Status(); st.Connected || !strings.Contains(st.LastError, "refused the bot token") {
		t.Fatalf("status %+v", st)
	}
	cancel()
	<-done
}

// Send maps Telegram's refusals onto the gateway's retry policy.
func TestFakeSendErrors(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.Token)
	defer srv.Close()
	ad, err := telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: srv.URL, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out := schema.Outbound{Kind: "reply", Platform: "telegram", Chat: "111", ReplyID: "r1", Text: "hello"}
	for _, tc := range []struct {
		name    string
		fail    telegramtest.Failure
		perm    bool
		retryIn time.Duration
	}{
		{"blocked by the user", telegramtest.Failure{Code: 403, Description: "Forbidden: bot was blocked by the user"}, true, 0},
		{"chat not found", telegramtest.Failure{Code: 400, Description: "Bad Request: chat not found"}, true, 0},
		{"flood", telegramtest.Failure{Code: 429, Description: "Too Many Requests: retry after 3", RetryAfter: 3}, false, 3 * time.Second},
		{"bad gateway", telegramtest.Failure{Code: 502, Description: "Bad Gateway"}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.Fail("sendMessage", tc.fail)
			_, err := ad.Send(context.Background(), out)
			var perm *gw.PermanentError
			var ra *gw.RetryAfterError
			switch {
			case err == nil:
				t.Fatal("no error")
			case errors.As(err, &perm) != tc.perm:
				t.Fatalf("permanent: %v, want %v (%v)", !tc.perm, tc.perm, err)
			case tc.retryIn > 0 && (!errors.As(err, &ra) || ra.After != tc.retryIn):
				t.Fatalf("want retry after %s: %v", tc.retryIn, err)
			case tc.retryIn == 0 && errors.As(err, &ra):
				t.Fatalf("a retry-after error: %v", err)
			}
		})
	}
	// Telegram unreachable: a plain error (retried), without the token.
	srv.Close()
	_, err = ad.Send(context.Background(), out)
	var perm *gw.PermanentError
	if err == nil || errors.As(err, &perm) {
		t.Fatalf("unreachable: %v", err)
	}
	if strings.Contains(err.Error(), telegramtest.Token) {
		t.Fatalf("the error shows the token: %v", err)
	}
	if _, err := ad.Send(context.Background(), schema.Outbound{Kind: "reply", Chat: "not-a-chat", Text: "x"}); !errors.As(err, &perm) {
		t.Fatalf("a bad chat id: %v", err)
	}
}

// When Telegram cannot parse the HTML, the part goes again as plain text.
func TestFakeUnparsableHTMLFallsBackToPlainText(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.Token)
	defer srv.Close()
	ad, err := telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: srv.URL, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv.Fail("sendMessage", telegramtest.Failure{Code: 400, Description: "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 3"})
	ids, err := ad.Send(context.Background(), schema.Outbound{Kind: "reply", Chat: "111", InReplyTo: "111:7", Text: "**bold** <x>"})
	if err != nil || len(ids) != 1 {
		t.Fatalf("Send: %v %v", ids, err)
	}
	calls := srv.Calls("sendMessage")
	if len(calls) != 2 || calls[0].Params["parse_mode"] != "HTML" || calls[1].Params["parse_mode"] != nil || calls[1].Params["text"] != "**bold** <x>" {
		t.Fatalf("calls %+v", calls)
	}
	if rp, _ := calls[1].Params["reply_parameters"].(map[string]any); rp == nil || rp["message_id"] != float64(7) || rp["chat_id"] != float64(111) {
		t.Fatalf("the plain resend does not reply: %+v", calls[1].Params)
	}
}

// A reply whose second part failed is sent again from that part on: the
// user does not see the first part twice.
func TestFakePartialDeliveryResumes(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.Token)
	defer srv.Close()
	ad, err := telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: srv.URL, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	long, _ := gatewaytest.LongAnswer(24, 40, 50)
	out := schema.Outbound{Kind: "reply", Chat: "111", ReplyID: "r-long", Text: long}
	// The first part goes through, the second fails.
	srv.Fail("sendMessage", telegramtest.Failure{}, telegramtest.Failure{Code: 502, Description: "Bad Gateway"})
	if ids, err := ad.Send(context.Background(), out); err == nil || ids != nil {
		t.Fatalf("first attempt: %v %v", ids, err)
	}
	ids, err := ad.Send(context.Background(), out)
	if err != nil || len(ids) != 3 {
		t.Fatalf("second attempt: %v %v", ids, err)
	}
	var texts []string
	for _, c := range srv.Calls("sendMessage") {
		if c.Status == 0 {
			texts = append(texts, c.Params["text"].(string))
		}
	}
	if len(texts) != 3 || texts[0] == texts[1] || texts[1] == texts[2] {
		t.Fatalf("%d parts delivered in all (want 3, each once)", len(texts))
	}
	if !strings.HasPrefix(ids[0], "111:") {
		t.Fatalf("ids %v", ids)
	}
}

// The offset that confirms an update moves past it only once the inbox
// took it: a refused update is handed over again, and an adapter that
// stops (or dies) before then gets it again from Telegram when it starts.
func TestFakeOffsetMovesOnlyAfterTheInbox(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.Token)
	defer srv.Close()
	newAdapter := func() *telegram.Adapter {
		ad, err := telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: srv.URL, CacheDir: t.TempDir(), PollTimeout: time.Second, PollInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return ad
	}
	first := srv.Push(dmUpdate(alice, 1, "one"))
	second := srv.Push(dmUpdate(alice, 2, "two"))

	var mu sync.Mutex
	var seen []string
	refusals := 2
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- newAdapter().Run(ctx, func(ictx context.Context, in schema.Inbound) error {
			mu.Lock()
			seen = append(seen, in.MessageID)
			mu.Unlock()
			if in.MessageID == "111:1" && refusals > 0 {
				refusals--
				return errors.New("router not ready")
			}
			if in.MessageID == "111:2" {
				<-ictx.Done() // the process goes away while recording this one
				return ictx.Err()
			}
			return nil
		})
	}()
	waitFor(t, "the second update to be handed over", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 4
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	mu.Lock()
	if fmt.Sprint(seen) != "[111:1 111:1 111:1 111:2]" {
		t.Fatalf("handed over %v", seen)
	}
	mu.Unlock()
	for _, c := range srv.Calls("getUpdates") {
		if off, _ := c.Params["offset"].(float64); int(off) > first {
			t.Fatalf("getUpdates asked past update %d before the restart: %+v", first, c.Params)
		}
	}
	if srv.Pending() != 2 {
		t.Fatalf("%d updates pending at Telegram, want both", srv.Pending())
	}

	// Started again, the adapter gets both again (the router knows the
	// first by its message id), and confirms them this time.
	var again []string
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go func() {
		_ = newAdapter().Run(ctx2, func(_ context.Context, in schema.Inbound) error {
			mu.Lock()
			again = append(again, in.MessageID)
			mu.Unlock()
			return nil
		})
	}()
	waitFor(t, "both updates confirmed", func() bool { return srv.Pending() == 0 })
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(again) != "[111:1 111:2]" {
		t.Fatalf("after the restart: %v", again)
	}
	last := srv.Calls("getUpdates")
	if off, _ := last[len(last)-1].Params["offset"].(float64); int(off) != second+1 {
		t.Fatalf("last offset %v, want %d", off, second+1)
	}
}

// Photos (the largest size), documents and voice notes are downloaded into
// the cache and named in the text; a file over the limit is a note, and a
// download that fails for a moment is tried again.
func TestFakeAttachments(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.Token)
	defer srv.Close()
	cache := filepath.Join(t.TempDir(), "cache", "telegram")
	ad, err := telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: srv.URL, CacheDir: cache, MaxDownload: 1 << 20,
		PollTimeout: time.Second, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	photo := bytes.Repeat([]byte{0xff, 0xd8}, 500)
	srv.AddFile("p3", "photos/file_3.jpg", photo)
	srv.AddFile("doc", "documents/file_9.pdf", []byte("%PDF-1.4 report"))
	srv.AddFile("voice", "voice/file_4.oga", []byte("OggS voice"))
	srv.Fail("download", telegramtest.Failure{Code: 502, Description: "Bad Gateway"})
	msg := func(id int, extra map[string]any) map[string]any {
		u := dmUpdate(alice, id, "")
		m := u["message"].(map[string]any)
		delete(m, "text")
		for k, v := range extra {
			m[k] = v
		}
		return u
	}
	srv.Push(msg(1, map[string]any{"caption": "look at this", "photo": []map[string]any{
		{"file_id": "p1", "file_unique_id": "u1", "width": 90, "height": 90, "file_size": 100},
		{"file_id": "p3", "file_unique_id": "u3", "width": 1280, "height": 960, "file_size": 1000},
		{"file_id": "p2", "file_unique_id": "u2", "width": 320, "height": 240, "file_size": 400}}}))
	srv.Push(msg(2, map[string]any{"document": map[string]any{"file_id": "doc", "file_unique_id": "ud", "file_name": "report.pdf", "mime_type": "application/pdf", "file_size": 15}}))
	srv.Push(msg(3, map[string]any{"voice": map[string]any{"file_id": "voice", "file_unique_id": "uv", "duration": 2, "mime_type": "audio/ogg", "file_size": 10}}))
	srv.Push(msg(4, map[string]any{"caption": "big one", "video": map[string]any{"file_id": "vid", "file_unique_id": "uvid", "width": 1, "height": 1, "duration": 1, "file_size": 30 << 20}}))

	var mu sync.Mutex
	var got []schema.Inbound
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_ = ad.Run(ctx, func(_ context.Context, in schema.Inbound) error {
			mu.Lock()
			got = append(got, in)
			mu.Unlock()
			return nil
		})
	}()
	waitFor(t, "four messages", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 4 })
	mu.Lock()
	defer mu.Unlock()

	p := got[0]
	if len(p.Attachments) != 1 || p.Attachments[0].Kind != "photo" || p.Attachments[0].Size != int64(len(photo)) || !filepath.IsAbs(p.Attachments[0].Path) {
		t.Fatalf("photo %+v", p.Attachments)
	}
	if data, err := os.ReadFile(p.Attachments[0].Path); err != nil || !bytes.Equal(data, photo) {
		t.Fatalf("the photo on disk: %v", err)
	}
	if p.Text != "look at this\n\n[attached photo: "+p.Attachments[0].Path+"]" {
		t.Fatalf("photo text %q", p.Text)
	}
	if downloads := srv.Calls("download"); len(downloads) != 4 || downloads[1].Params["path"] != "photos/file_3.jpg" {
		t.Fatalf("downloads %+v (the first fails and is tried again; the largest size is the one fetched)", downloads)
	}
	d := got[1].Attachments
	if len(d) != 1 || d[0].Name != "report.pdf" || d[0].MimeType != "application/pdf" || filepath.Dir(d[0].Path) != cache ||
		!strings.HasSuffix(d[0].Path, ".pdf") || !strings.Contains(got[1].Text, `[attached document "report.pdf": `) {
		t.Fatalf("document %+v %q", d, got[1].Text)
	}
	if v := got[2].Attachments; len(v) != 1 || v[0].Kind != "voice" || !strings.HasSuffix(v[0].Path, ".oga") {
		t.Fatalf("voice %+v", v)
	}
	big := got[3]
	if len(big.Attachments) != 0 || !strings.Contains(big.Text, "big one\n\n[attached video: not downloaded: 30.0 MB is over the 1.0 MB limit]") {
		t.Fatalf("oversized video %+v %q", big.Attachments, big.Text)
	}
	for _, c := range srv.Calls("getFile") {
		if c.Params["file_id"] == "vid" {
			t.Fatal("getFile was asked for a file known to be too large")
		}
	}
}

// typing becomes a chat action in the right topic; deltas are dropped.
func TestFakeTypingAndDeltas(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.Token)
	defer srv.Close()
	ad, err := telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: srv.URL, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ad.Send(context.Background(), schema.Outbound{Kind: "typing", Chat: "-100777", Thread: "42"}); err != nil {
		t.Fatal(err)
	}
	if ids, err := ad.Send(context.Background(), schema.Outbound{Kind: "delta", Chat: "-100777", Text: "par"}); err != nil || ids != nil {
		t.Fatalf("delta: %v %v", ids, err)
	}
	calls := srv.Calls("")
	if len(calls) != 1 || calls[0].Method != "sendChatAction" || calls[0].Params["action"] != "typing" ||
		calls[0].Params["chat_id"] != float64(-100777) || calls[0].Params["message_thread_id"] != float64(42) {
		t.Fatalf("calls %+v", calls)
	}
}

// Telegram down when the gateway starts: Run returns a plain error, the
// plumbing reports it and starts the adapter again, and it connects once
// Telegram answers.
func TestFakeDownAtStartRecovers(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.Token)
	defer srv.Close()
	srv.Fail("getMe", telegramtest.Failure{Code: 502, Description: "Bad Gateway"})
	ad, err := telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: srv.URL, CacheDir: t.TempDir(), PollTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b, err := bus.Open("", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	served := gw.NewServed(ad, b, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- served.Serve(ctx) }()
	waitFor(t, "the failure reported", func() bool { return strings.Contains(served.Status().LastError, "502") })
	if served.Status().Connected {
		t.Fatal("connected while Telegram is down")
	}
	waitFor(t, "the adapter to connect", func() bool { return served.Status().Connected })
	waitFor(t, "polling", func() bool { return len(srv.Calls("getUpdates")) > 0 })
	cancel()
	<-done
}
