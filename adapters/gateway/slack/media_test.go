package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack/slacktest"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/slack"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

// uploads serves Slack's external file upload flow on slacktest, which has
// none of it. These are stand-ins, not Slack: files.getUploadURLExternal
// (form filename and length; answers upload_url and file_id), the upload
// URL it returns (a multipart POST whose "file" part is the bytes; answers
// 200 "OK - <length>"), and files.completeUploadExternal (form files, a
// JSON array of {id, title}, channel_id and thread_ts; answers the files
// shared), each in the Web API's documented format. They keep what was
// uploaded and shared.
type uploads struct {
	mu     sync.Mutex
	seq    int
	asked  map[string]int    // file id → the length asked for
	names  map[string]string // file id → the upload's file name
	data   map[string][]byte // file id → the bytes posted to its URL
	shares []share
	// fail makes the next fail[name] POSTs of that file to its upload URL
	// answer 500 (Slack's file servers failing).
	fail map[string]int
	// posts counts the chat.postMessage calls so far (set by the test).
	posts func() int
}

// share is one file shared by files.completeUploadExternal.
type share struct {
	ID, Name, Title, Channel, Thread string
	Data                             []byte
	// PostsBefore is how many messages had been posted when it was shared.
	PostsBefore int
}

func newUploads() *uploads {
	return &uploads{asked: map[string]int{}, names: map[string]string{}, data: map[string][]byte{}, fail: map[string]int{}}
}

func (u *uploads) bind(c slacktest.Customize) {
	answer := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	c.Handle("/files.getUploadURLExternal", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		var n int
		if _, err := fmt.Sscan(r.FormValue("length"), &n); err != nil || n <= 0 || r.FormValue("filename") == "" {
			answer(w, map[string]any{"ok": false, "error": "invalid_arguments"})
			return
		}
		u.mu.Lock()
		u.seq++
		id := fmt.Sprintf("F0UP%05d", u.seq)
		u.asked[id] = n
		u.mu.Unlock()
		answer(w, map[string]any{"ok": true, "upload_url": "http://" + r.Host + "/upload/v1/" + id, "file_id": id})
	})
	c.Handle("/upload/v1/", func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, "/upload/v1/")
		f, h, err := r.FormFile("file")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		data, _ := io.ReadAll(f)
		u.mu.Lock()
		defer u.mu.Unlock()
		if _, ok := u.asked[id]; !ok {
			http.Error(w, "no such upload", http.StatusNotFound)
			return
		}
		if u.fail[h.Filename] > 0 {
			u.fail[h.Filename]--
			http.Error(w, "upstream failure", http.StatusInternalServerError)
			return
		}
		u.data[id], u.names[id] = data, h.Filename
		_, _ = fmt.Fprintf(w, "OK - %d", len(data))
	})
	c.Handle("/files.completeUploadExternal", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		var files []struct{ ID, Title string }
		if err := json.Unmarshal([]byte(r.FormValue("files")), &files); err != nil || len(files) == 0 {
			answer(w, map[string]any{"ok": false, "error": "invalid_arguments"})
			return
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		var out []map[string]string
		for _, f := range files {
			data, ok := u.data[f.ID]
			if !ok || len(data) != u.asked[f.ID] {
				answer(w, map[string]any{"ok": false, "error": "file_upload_size_mismatch"})
				return
			}
			before := 0
			if u.posts != nil {
				before = u.posts()
			}
			u.shares = append(u.shares, share{ID: f.ID, Name: u.names[f.ID], Title: f.Title, Channel: r.FormValue("channel_id"),
				Thread: r.FormValue("thread_ts"), Data: data, PostsBefore: before})
			out = append(out, map[string]string{"id": f.ID, "title": f.Title})
		}
		answer(w, map[string]any{"ok": true, "files": out})
	})
}

func (u *uploads) shared() []share {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]share(nil), u.shares...)
}

// posted reports whether any bytes posted to an upload URL contain s.
func (u *uploads) posted(s string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, d := range u.data {
		if bytes.Contains(d, []byte(s)) {
			return true
		}
	}
	return false
}

// mediaRig is slacktest with the upload stand-ins, and the media roots
// with a picture and a voice note in them.
type mediaRig struct {
	p         *peer
	u         *uploads
	upd       *updates
	roots     []string
	png, ogg  string
	secret    string
	oggData   []byte
	secretMsg string
}

func startMedia(t *testing.T) *mediaRig {
	t.Helper()
	m := &mediaRig{u: newUploads(), upd: &updates{}, oggData: []byte("OggS\x00\x02 a voice note"), secretMsg: "TOP SECRET 4242"}
	m.p = startPeer(t, m.u.bind, m.upd.bind)
	m.p.rec.uniqueTS.Store(true)
	m.u.posts = func() int { return len(m.p.rec.posts()) }
	images, audio := t.TempDir(), t.TempDir()
	m.roots = []string{images, audio}
	m.png, m.ogg = filepath.Join(images, "dot.png"), filepath.Join(audio, "reply.ogg")
	m.secret = filepath.Join(t.TempDir(), "secret.txt")
	for f, b := range map[string][]byte{m.png: dotPNG, m.ogg: m.oggData, m.secret: []byte(m.secretMsg)} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func (m *mediaRig) adapter(t *testing.T) *slack.Adapter {
	t.Helper()
	ad, err := slack.New(slack.Config{BotToken: botToken, AppToken: appToken, APIURL: m.p.url(), HTTPClient: m.p.client(),
		PingInterval: time.Hour, MediaRoots: m.roots, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

// The files an answer names as MEDIA: are uploaded through the whole
// gateway into the thread the answer is posted in, after its text, which
// carries no tag; a file outside the media roots is not read: the text
// says it was not sent, and its bytes reach no upload.
func TestReplyUploadsMediaInThread(t *testing.T) {
	m := startMedia(t)
	rig := gatewaytest.Start(t, gatewaytest.Options{
		Script: []llmtest.Reply{{Content: "Here is your picture.\nMEDIA:" + m.png + "\nMEDIA:" + m.secret}},
		Config: gateway.Config{Auth: gateway.Auth{Platform: map[string][]string{"slack": {alice}}}, TypingEvery: time.Hour}})
	ad := m.adapter(t)
	if !ad.SendsMedia() {
		t.Fatal("an adapter with media roots does not send media")
	}
	rig.Serve(ad, nil)
	gatewaytest.WaitFor(t, "the adapter to connect", ad.Connected)
	t1 := m.p.ts()
	m.p.envelope("events_api", mentionEvent(alice, channel, "draw me a dot", t1, ""))
	gatewaytest.WaitFor(t, "the reply delivered", func() bool { return gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered") == 1 })
	ps := m.p.rec.to(channel)
	if len(ps) != 1 || ps[0].ThreadTS != t1 || strings.Contains(ps[0].Text, "MEDIA:") || !strings.HasPrefix(ps[0].Text, "Here is your picture.") ||
		!strings.Contains(ps[0].Text, "(secret.txt was not sent:") || strings.Contains(ps[0].Text, m.png) {
		t.Fatalf("the text posted %+v: want one post in thread %s, no MEDIA: tag, a note for secret.txt", ps, t1)
	}
	sh := m.u.shared()
	if len(sh) != 1 || sh[0].Name != "dot.png" || sh[0].Title != "dot.png" || !bytes.Equal(sh[0].Data, dotPNG) ||
		sh[0].Channel != channel || sh[0].Thread != t1 || sh[0].PostsBefore != 1 {
		t.Fatalf("shared %+v: want dot.png's bytes in %s thread %s, after the text", sh, channel, t1)
	}
	if m.u.posted(m.secretMsg) {
		t.Fatal("the file outside the media roots was uploaded")
	}
}

// A reply whose second upload fails is retried with only that file (its
// text and first file are not sent again); the same reply sent once more
// afterwards posts and uploads nothing and answers the same ids. Without
// media roots the adapter sends no media (the gateway names the files).
func TestMediaRetryAndResendShowNothingTwice(t *testing.T) {
	m := startMedia(t)
	ad := m.adapter(t)
	m.u.fail["reply.ogg"] = 1
	ctx := context.Background()
	thread := "1700000000.000100"
	out := schema.Outbound{Kind: schema.OutboundReply, Chat: channel, Thread: thread, ReplyID: "r-media-1",
		Text: "Two files.\nMEDIA:" + m.png + "\nMEDIA:" + m.ogg}
	_, err := ad.Send(ctx, out)
	var perm *gw.PermanentError
	if err == nil || errors.As(err, &perm) {
		t.Fatalf("the failed upload: %v, want an error worth retrying", err)
	}
	if sh := m.u.shared(); len(sh) != 1 || sh[0].Name != "dot.png" {
		t.Fatalf("after the failure shared %+v, want dot.png", sh)
	}
	ids, err := ad.Send(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	ps := m.p.rec.to(channel)
	if len(ps) != 1 || ps[0].Text != "Two files." || ps[0].ThreadTS != thread {
		t.Fatalf("posts %+v: want the text once, in the thread", ps)
	}
	if len(ids) != 1 || ids[0] != channel+":"+ps[0].TS {
		t.Fatalf("ids %v, want the text's", ids)
	}
	sh := m.u.shared()
	if len(sh) != 2 || sh[0].Name != "dot.png" || sh[1].Name != "reply.ogg" || !bytes.Equal(sh[1].Data, m.oggData) || sh[1].Thread != thread {
		t.Fatalf("after the retry shared %+v: want dot.png, then reply.ogg only", sh)
	}
	again, err := ad.Send(ctx, out)
	if err != nil || strings.Join(again, ",") != strings.Join(ids, ",") {
		t.Fatalf("the resend answered %v, %v: want %v", again, err, ids)
	}
	if n, k := len(m.p.rec.to(channel)), len(m.u.shared()); n != 1 || k != 2 {
		t.Fatalf("the resend posted (%d posts) or uploaded (%d shares) again", n, k)
	}

	// A reply of files alone posts no text.
	if _, err := ad.Send(ctx, schema.Outbound{Kind: schema.OutboundReply, Chat: dm, ReplyID: "r-media-2", Text: "MEDIA:" + m.png}); err != nil {
		t.Fatal(err)
	}
	if ps, sh := m.p.rec.to(dm), m.u.shared(); len(ps) != 0 || len(sh) != 3 || sh[2].Channel != dm || sh[2].Thread != "" {
		t.Fatalf("files alone: posts %+v, shares %+v", ps, sh)
	}

	plain, err := slack.New(slack.Config{BotToken: botToken, AppToken: appToken, APIURL: m.p.url(), HTTPClient: m.p.client(), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if plain.SendsMedia() {
		t.Fatal("an adapter without media roots sends media")
	}
}

// An answer edited into its preview shows no MEDIA: tag; its files are
// uploaded after the edit, in the thread, once across a retry. An answer
// of files alone is not edited in (gateway.ErrNoEdit).
func TestEditedAnswerUploadsMedia(t *testing.T) {
	m := startMedia(t)
	ad := m.adapter(t)
	ctx := context.Background()
	thread := "1700000000.000200"
	prev, err := ad.Edit(ctx, schema.Outbound{Kind: schema.OutboundPreview, Chat: channel, Thread: thread, Text: "Drawing"}, nil)
	if err != nil || len(prev) != 1 {
		t.Fatalf("preview %v: %v", prev, err)
	}
	m.u.fail["dot.png"] = 1
	out := schema.Outbound{Kind: schema.OutboundReply, Chat: channel, Thread: thread, ReplyID: "r-edit-1", Replace: true,
		Text: "Drawn.\nMEDIA:" + m.png}
	if _, err := ad.Edit(ctx, out, prev); err == nil {
		t.Fatal("the failed upload went unreported")
	}
	got, err := ad.Edit(ctx, out, prev)
	if err != nil || strings.Join(got, ",") != strings.Join(prev, ",") {
		t.Fatalf("the retried edit %v: %v, want %v", got, err, prev)
	}
	for _, up := range m.upd.all() {
		if strings.Contains(up.Text, "MEDIA:") {
			t.Fatalf("an update shows a MEDIA: tag: %q", up.Text)
		}
	}
	if r := reads(m.p, m.upd, channel); len(r) != 1 || r[0] != "Drawn." {
		t.Fatalf("the channel reads %q, want the answer edited into the preview", r)
	}
	sh := m.u.shared()
	if len(sh) != 1 || sh[0].Name != "dot.png" || sh[0].Thread != thread || sh[0].Channel != channel {
		t.Fatalf("shared %+v: want dot.png once, in the thread", sh)
	}
	if _, err := ad.Edit(ctx, out, prev); err != nil || len(m.u.shared()) != 1 {
		t.Fatalf("the answer edited in again uploaded again (%d shares): %v", len(m.u.shared()), err)
	}
	_, err = ad.Edit(ctx, schema.Outbound{Kind: schema.OutboundReply, Chat: channel, Thread: thread, ReplyID: "r-edit-2", Text: "MEDIA:" + m.ogg}, prev)
	if !errors.Is(err, gw.ErrNoEdit) {
		t.Fatalf("files alone edited in: %v, want ErrNoEdit", err)
	}
}

// Streamed through the whole gateway, an answer naming a file reads, in
// its preview edited into the answer, without the tag; the file follows in
// the DM.
func TestStreamedAnswerUploadsMedia(t *testing.T) {
	m := startMedia(t)
	cfg := gateway.Config{Auth: gateway.Auth{Platform: map[string][]string{"slack": {alice}}}, TypingEvery: time.Hour,
		Display: func(string) gateway.Display { return gateway.Display{Streaming: true} }}
	answer := "Here is the dot you asked for, drawn slowly.\nMEDIA:" + m.png
	rig := gatewaytest.Start(t, gatewaytest.Options{Config: cfg, EditEvery: 50 * time.Millisecond, Script: []llmtest.Reply{
		{Content: answer, Pieces: 8, PieceEvery: 40 * time.Millisecond},
	}})
	ad := m.adapter(t)
	rig.Serve(ad, nil)
	gatewaytest.WaitFor(t, "the adapter to connect", ad.Connected)
	m.p.envelope("events_api", messageEvent(alice, dm, "im", "draw a dot", m.p.ts(), ""))
	gatewaytest.WaitFor(t, "the answer delivered", func() bool { return gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered") == 1 })
	if r := reads(m.p, m.upd, dm); len(r) != 1 || r[0] != "Here is the dot you asked for, drawn slowly." {
		t.Fatalf("the DM reads %q", r)
	}
	if len(m.upd.all()) == 0 {
		t.Fatal("the answer was not streamed (no chat.update)")
	}
	for _, up := range m.upd.all() {
		if strings.Contains(up.Text, "MEDIA") {
			t.Fatalf("an update shows the tag: %q", up.Text)
		}
	}
	for _, ps := range m.p.rec.to(dm) {
		if strings.Contains(ps.Text, "MEDIA") {
			t.Fatalf("a post shows the tag: %q", ps.Text)
		}
	}
	if sh := m.u.shared(); len(sh) != 1 || sh[0].Name != "dot.png" || sh[0].Channel != dm || !bytes.Equal(sh[0].Data, dotPNG) {
		t.Fatalf("shared %+v: want dot.png in the DM once", sh)
	}
}
