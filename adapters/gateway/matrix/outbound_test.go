package matrix

import (
	"encoding/json"
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"

	"github.com/hermes-go/hermes/schema"
)

func TestRender(t *testing.T) {
	for _, tc := range []struct{ md, html string }{
		{"plain words", ""},
		{"**bold** and _it_ and `x<y`", "<strong>bold</strong> and <em>it</em> and <code>x&lt;y</code>"},
		{"<script>alert(1)</script> & co", "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"},
		{"```go\nif a < b {}\n```", "<pre><code class=\"language-go\">if a &lt; b {}\n</code></pre>"},
		{"line one\nline two", "line one<br>\nline two"},
		{"[docs](https://example.org/a?b=1&c=2)", `<a href="https://example.org/a?b=1&amp;c=2">docs</a>`},
	} {
		c := render(tc.md, event.MsgText)
		if c.Body != tc.md {
			t.Errorf("%q: body %q, want the Markdown", tc.md, c.Body)
		}
		if tc.html == "" {
			if c.Format != "" || c.FormattedBody != "" {
				t.Errorf("%q: plain text got HTML %q", tc.md, c.FormattedBody)
			}
			continue
		}
		if c.Format != event.FormatHTML || strings.TrimSpace(c.FormattedBody) != tc.html {
			t.Errorf("%q: HTML %q (%q), want %q", tc.md, c.FormattedBody, c.Format, tc.html)
		}
	}
	if c := render("x", event.MsgNotice); c.MsgType != event.MsgNotice || c.Mentions == nil {
		t.Fatalf("notice %+v", c)
	}
}

// Parts stay within MaxMessage, and within Matrix's event size when
// escaping would blow a part up.
func TestSplitLimits(t *testing.T) {
	if got := Split("short"); len(got) != 1 || got[0] != "short" {
		t.Fatalf("short: %q", got)
	}
	if got := Split(" \n "); len(got) != 0 {
		t.Fatalf("blank: %q", got)
	}
	prose := strings.Repeat("lorem ipsum dolor sit amet ", 2000) // 54,000 characters
	parts := Split(prose)
	if len(parts) != 4 {
		t.Fatalf("%d parts of prose, want 4", len(parts))
	}
	// Every '<' becomes &lt; in the HTML and \u003c in the JSON body: 15
	// bytes from one character. MaxMessage of them would be 240 KB.
	angles := strings.Repeat("<<<< ", 6000)
	parts = Split(angles)
	var total int
	for i, p := range parts {
		if n := len([]rune(p)); n > MaxMessage {
			t.Fatalf("part %d has %d characters", i, n)
		}
		b, _ := json.Marshal(render(p, event.MsgText))
		if len(b) > maxEventBytes {
			t.Fatalf("part %d is a %d byte event, over %d", i, len(b), maxEventBytes)
		}
		total += strings.Count(p, "<")
	}
	if total != strings.Count(angles, "<") || len(parts) < 3 {
		t.Fatalf("%d parts hold %d of %d characters", len(parts), total, strings.Count(angles, "<"))
	}
}

func TestNewChecksConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{AccessToken: "t"}, "MATRIX_HOMESERVER"},
		{Config{Homeserver: "matrix.org", AccessToken: "t"}, "http(s) URL"},
		{Config{Homeserver: "https://m.org"}, "access_token"},
		{Config{Homeserver: "https://m.org", Password: "p"}, "MATRIX_USER_ID"},
		{Config{Homeserver: "https://m.org", AccessToken: "t", UserID: "hermes"}, "@hermes:example.org"},
		{Config{Homeserver: "https://m.org", AccessToken: "t", AllowedUsers: []string{"alice"}}, "not a Matrix id"},
	} {
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := New(Config{Homeserver: "https://m.org/", AccessToken: "t", AllowedUsers: []string{"@a:m.org", " "}}); err != nil {
		t.Fatal(err)
	}
}

// A cron target "matrix:!room:server" arrives as chat "!room", thread
// "server"; thread ids ($event) are left alone.
func TestTarget(t *testing.T) {
	for _, tc := range []struct{ chat, thread, wantChat, wantThread string }{
		{"!abc", "example.org", "!abc:example.org", ""},
		{"!abc:example.org", "$root", "!abc:example.org", "$root"},
		{"!abc:example.org", "", "!abc:example.org", ""},
		{"!abc", "$root", "!abc", "$root"},
	} {
		got := target(schema.Outbound{Chat: tc.chat, Thread: tc.thread})
		if got.Chat != tc.wantChat || got.Thread != tc.wantThread {
			t.Errorf("%s + %s: %s + %s", tc.chat, tc.thread, got.Chat, got.Thread)
		}
	}
}
