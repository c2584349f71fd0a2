package allplatforms_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack/slacktest"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/gateway/email"
	"github.com/hermes-go/hermes/adapters/gateway/email/emailtest"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/irc"
	"github.com/hermes-go/hermes/adapters/gateway/irc/irctest"
	"github.com/hermes-go/hermes/adapters/gateway/matrix"
	"github.com/hermes-go/hermes/adapters/gateway/matrix/matrixtest"
	"github.com/hermes-go/hermes/adapters/gateway/slack"
	"github.com/hermes-go/hermes/adapters/gateway/telegram"
	"github.com/hermes-go/hermes/adapters/gateway/telegram/telegramtest"
	"github.com/hermes-go/hermes/adapters/gateway/webhook"
	"github.com/hermes-go/hermes/adapters/gateway/xmpp"
	"github.com/hermes-go/hermes/adapters/gateway/xmpp/xmpptest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// How the 1,000 idle sessions are made: most through the in-process test
// platform, the rest through real peers (a user each, a DM each).
const (
	sessions      = 1000
	viaIRC        = 100
	viaTelegram   = 100
	viaEmail      = 100
	viaChat       = sessions - viaIRC - viaTelegram - viaEmail
	sessionsWait  = 3 * time.Minute
	connectWait   = time.Minute
	botNick       = "hermes"
	botPassword   = "bot-secret"
	mailPassword  = "bench-secret"
	mailBot       = "bot@example.test"
	slackBotToken = "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy"
	slackAppToken = "xapp-1-A0123456789-1234567890123-0123456789abcdef0123456789abcdef"
)

// stage is the process's memory at one point of the run, after two
// collections and a return of free pages to the OS.
type stage struct {
	name       string
	heapInuse  uint64
	heapAlloc  uint64
	rss        uint64
	goroutines int
}

func measure(tb testing.TB, name string) stage {
	tb.Helper()
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return stage{name: name, heapInuse: m.HeapInuse, heapAlloc: m.HeapAlloc, rss: vmRSS(tb), goroutines: runtime.NumGoroutine()}
}

// vmRSS is the process's resident set in bytes, from /proc/self/status.
func vmRSS(tb testing.TB) uint64 {
	tb.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Fatalf("reading the RSS: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				tb.Fatalf("VmRSS %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// BenchmarkAllPlatformsMemory is the gateway's memory with every platform
// connected and 1,000 idle sessions, measured in one run in four stages:
//
//  1. baseline: the whole gateway in-process (gatewaytest: router, session
//     manager, embedded store, bus, an instant scripted model server that
//     keeps no record) with the in-process test platform, after one
//     warm-up turn;
//  2. peers: every platform's real peer started — telegram-test-api,
//     slacktest (slack-go's test server, the one peer that runs in this
//     process), ngIRCd, Dendrite, Prosody, Dovecot and maildev — and the
//     peers' users that live in this process (100 IRC client connections,
//     the Matrix bot's registration);
//  3. platforms: the Telegram, Slack (Socket Mode), IRC, Matrix, XMPP and
//     email adapters plus the API server and the webhook front door, all
//     served to the one gateway and each reporting Connected;
//  4. sessions: 1,000 new chats, each one DM answered once by the model
//     and then idle — 700 through the test platform, 100 IRC users
//     through ngIRCd, 100 Telegram users through the emulator, 100 mail
//     threads through Dovecot.
//
// Reported: the baseline, what the platforms add (heap in use and RSS, in
// MiB, the peers' in-process share excluded), and what an idle session
// keeps (KiB). The figures are of this process; the peers that run as
// processes of their own are not in them.
//
//	HERMES_TELEGRAM_TEST_API=$PWD/.ci/node/node_modules/telegram-test-api \
//	HERMES_NODE_MODULES=$PWD/.ci/node/node_modules \
//	HERMES_DENDRITE=$PWD/.ci/dendrite/bin/dendrite \
//	go test -run '^$' -bench AllPlatformsMemory -benchtime 1x ./adapters/gateway/allplatforms/
func BenchmarkAllPlatformsMemory(b *testing.B) {
	llm := llmtest.New()
	llm.Cycle = []llmtest.Reply{{Content: "pong", Prompt: 10, Completion: 1}}
	llm.NoRecord = true
	b.Cleanup(llm.Close)
	dir := ""
	if d := os.Getenv("HERMES_BENCH_DIR"); d != "" {
		var err error
		if dir, err = os.MkdirTemp(d, "hermes-bench-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	rig := gatewaytest.Start(b, gatewaytest.Options{Dir: dir, LLM: llm,
		Config: gateway.Config{TypingEvery: time.Hour, Auth: gateway.Auth{AllowAll: true}}})
	var chatReplies atomic.Int64
	chat := gatewaytest.NewChat("bench")
	chat.OnSend = func(o schema.Outbound) {
		if o.Kind == "reply" {
			chatReplies.Add(1)
		}
	}
	rig.Serve(chat, nil)
	chat.Post(b, gatewaytest.DM("warmup", "w1", "ping"))
	waitUntil(b, "the warm-up reply", time.Minute, func() bool { return chatReplies.Load() == 1 })
	stages := []stage{measure(b, "baseline")}

	// The peers. Each starter skips the benchmark (or fails it under CI)
	// when its server is not installed.
	tg := telegramtest.Start(b)
	sl := startSlack(b)
	ircd := irctest.Start(b)
	dendrite := matrixtest.Start(b)
	mxBot := dendrite.Register(b, "hermes")
	prosody := xmpptest.Start(b)
	prosody.Register(botNick, botPassword)
	dovecot := emailtest.StartDovecot(b, emailtest.DovecotOptions{AnyUser: mailPassword})
	maildev := emailtest.StartOpenMaildev(b)
	ircUsers := make([]*irctest.Client, viaIRC)
	for k := range ircUsers {
		ircUsers[k] = irctest.Dial(b, ircd.Addr(), fmt.Sprintf("user%d", k))
	}
	stages = append(stages, measure(b, "peers"))

	// Every platform on the one gateway.
	must := func(p gw.Platform, err error) gw.Platform {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	platforms := []gw.Platform{
		must(telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: tg.URL, CacheDir: b.TempDir(),
			PollTimeout: 2 * time.Second, PollInterval: 50 * time.Millisecond, Log: zerolog.Nop()})),
		must(slack.New(slack.Config{BotToken: slackBotToken, AppToken: slackAppToken, APIURL: sl.GetAPIURL(),
			PingInterval: time.Hour, Log: zerolog.Nop()})),
		must(irc.New(irc.Config{Server: "127.0.0.1", Port: ircd.Port, Nick: botNick,
			LinesPerSecond: 1e6, Burst: 1000, Log: zerolog.Nop()})),
		must(matrix.New(matrix.Config{Homeserver: dendrite.URL, UserID: string(mxBot.ID), AccessToken: mxBot.Token,
			StateDir: b.TempDir(), SyncTimeout: 2 * time.Second, Log: zerolog.Nop()})),
		must(xmpp.New(xmpp.Config{JID: botNick + "@" + xmpptest.Domain, Password: botPassword, Server: prosody.Addr,
			TLS: prosody.TLS(), MaxBackoff: 500 * time.Millisecond, Log: zerolog.Nop()})),
		must(email.New(email.Config{Address: mailBot, Password: mailPassword, IMAPHost: "127.0.0.1", IMAPPort: dovecot.IMAPPort,
			SMTPHost: "127.0.0.1", SMTPPort: maildev.SMTPPort, StateDir: b.TempDir(), CacheDir: b.TempDir(),
			PollInterval: 100 * time.Millisecond, Log: zerolog.Nop()})),
		must(apiserver.New(apiserver.Options{Host: "127.0.0.1", Log: zerolog.Nop()})),
		must(webhook.New(webhook.Config{Addr: "127.0.0.1:0", Routes: []webhook.Route{{Name: "ci", Secret: "webhook-secret"}},
			Log: zerolog.Nop()})),
	}
	for _, p := range platforms {
		rig.Serve(p, nil)
	}
	for _, p := range platforms {
		c, ok := p.(gw.Connector)
		if !ok {
			b.Fatalf("%s cannot say whether it is connected", p.Name())
		}
		waitUntil(b, p.Name()+" to connect", connectWait, c.Connected)
	}
	stages = append(stages, measure(b, "platforms"))

	// 1,000 idle sessions.
	ctx := context.Background()
	for k := range viaChat {
		chat.Post(b, gatewaytest.DM(fmt.Sprintf("u%d", k), fmt.Sprintf("m%d", k), "ping"))
	}
	for k, c := range ircUsers {
		if err := c.Say(botNick, fmt.Sprintf("ping %d", k)); err != nil {
			b.Fatal(err)
		}
	}
	tgUsers := make([]telegramtest.User, viaTelegram)
	for k := range tgUsers {
		tgUsers[k] = telegramtest.User{ID: int64(5000 + k), FirstName: "User", Username: fmt.Sprintf("user%d", k)}
		if err := tg.Send(ctx, telegramtest.Token, telegramtest.DM(tgUsers[k], "ping")); err != nil {
			b.Fatal(err)
		}
	}
	for k := range viaEmail {
		from := fmt.Sprintf("user%d@example.test", k)
		raw := emailtest.Compose([]string{"From: " + from, "To: " + mailBot, fmt.Sprintf("Message-ID: <thread%d@example.test>", k),
			"Date: " + time.Now().Format(time.RFC1123Z), "Subject: ping", "MIME-Version: 1.0",
			"Content-Type: text/plain; charset=utf-8"}, "ping\n")
		if err := dovecot.Send(ctx, from, []string{mailBot}, raw); err != nil {
			b.Fatal(err)
		}
	}
	waitUntil(b, fmt.Sprintf("%d replies on the test platform", viaChat), sessionsWait,
		func() bool { return chatReplies.Load() == viaChat+1 })
	for _, c := range ircUsers {
		if _, err := c.WaitMessages(botNick, c.Nick(), 1, sessionsWait); err != nil {
			b.Fatalf("IRC user %s: %v", c.Nick(), err)
		}
	}
	for _, u := range tgUsers {
		tg.WaitReceived(b, telegramtest.Token, u.ID, 1, sessionsWait)
	}
	waitUntil(b, fmt.Sprintf("%d replies by mail", viaEmail), sessionsWait, func() bool {
		n, err := maildev.Count(ctx)
		return err == nil && n >= viaEmail
	})
	// Idle: every reply's delivery recorded by the router.
	waitUntil(b, "every delivery to be recorded", sessionsWait, func() bool {
		return countType(b, rig.Store, "GatewayMessageDelivered") >= sessions+1
	})
	if n := countType(b, rig.Store, "SessionStarted"); n != sessions+1 {
		b.Fatalf("%d sessions in the store, want %d (with the warm-up's)", n, sessions+1)
	}
	stages = append(stages, measure(b, "sessions"))

	for _, p := range platforms {
		if !p.(gw.Connector).Connected() {
			b.Errorf("%s lost its connection during the run", p.Name())
		}
	}
	report(b, stages)
}

// report logs the stages as a table and reports the differences.
func report(b *testing.B, st []stage) {
	base, peers, plats, sess := st[0], st[1], st[2], st[3]
	mib := func(v int64) float64 { return float64(v) / (1 << 20) }
	d := func(a, c uint64) int64 { return int64(c) - int64(a) }
	var t strings.Builder
	fmt.Fprintf(&t, "\n%-10s %14s %14s %10s %10s\n", "stage", "heap-inuse MiB", "heap-alloc MiB", "RSS MiB", "goroutines")
	for _, s := range st {
		fmt.Fprintf(&t, "%-10s %14.1f %14.1f %10.1f %10d\n", s.name, mib(int64(s.heapInuse)), mib(int64(s.heapAlloc)), mib(int64(s.rss)), s.goroutines)
	}
	fmt.Fprintf(&t, "platforms add %.1f MiB heap in use, %.1f MiB RSS, %d goroutines (peers' in-process share, %.1f MiB heap, excluded)\n",
		mib(d(peers.heapInuse, plats.heapInuse)), mib(d(peers.rss, plats.rss)), plats.goroutines-peers.goroutines, mib(d(base.heapInuse, peers.heapInuse)))
	fmt.Fprintf(&t, "an idle session keeps %.1f KiB heap in use (%.1f KiB allocated), %.1f KiB RSS, %.2f goroutines\n",
		float64(d(plats.heapInuse, sess.heapInuse))/1024/sessions, float64(d(plats.heapAlloc, sess.heapAlloc))/1024/sessions,
		float64(d(plats.rss, sess.rss))/1024/sessions, float64(sess.goroutines-plats.goroutines)/sessions)
	b.Log(t.String())
	b.ReportMetric(mib(int64(base.heapInuse)), "baseline-heap-MiB")
	b.ReportMetric(mib(int64(base.rss)), "baseline-rss-MiB")
	b.ReportMetric(mib(d(peers.heapInuse, plats.heapInuse)), "platforms-heap-MiB")
	b.ReportMetric(mib(d(peers.rss, plats.rss)), "platforms-rss-MiB")
	b.ReportMetric(float64(d(plats.heapInuse, sess.heapInuse))/1024/sessions, "heap-KiB/idle-session")
	b.ReportMetric(float64(d(plats.rss, sess.rss))/1024/sessions, "rss-KiB/idle-session")
	b.ReportMetric(mib(int64(sess.heapInuse)), "total-heap-MiB")
	b.ReportMetric(mib(int64(sess.rss)), "total-rss-MiB")
	b.ReportMetric(0, "ns/op")
}

// startSlack starts slacktest, slack-go's own test server for the Web API
// and Socket Mode, and reads the frames the adapter writes to it (its
// WebSocket reader stalls otherwise).
func startSlack(b *testing.B) *slacktest.Server {
	srv := slacktest.NewTestServer()
	srv.Start()
	done := make(chan struct{})
	b.Cleanup(func() { close(done); srv.Stop() })
	go func() {
		for {
			select {
			case <-srv.SeenFeed:
			case <-done:
				return
			}
		}
	}()
	return srv
}

// countType counts the events of type typ in the whole global log, page
// by page.
func countType(tb testing.TB, store events.Store, typ string) int {
	tb.Helper()
	n := 0
	var after uint64
	for {
		rs, err := store.ReadAll(context.Background(), after, 5000)
		if err != nil {
			tb.Fatal(err)
		}
		if len(rs) == 0 {
			return n
		}
		for _, r := range rs {
			if r.Type == typ {
				n++
			}
		}
		after = rs[len(rs)-1].Position
	}
}

// waitUntil polls cond until it holds, failing after d.
func waitUntil(tb testing.TB, what string, d time.Duration, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
