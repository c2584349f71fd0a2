package cron_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/cron/crontest"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/actors/toolrun"
	"github.com/hermes-go/hermes/adapters/bus"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/telegram"
	"github.com/hermes-go/hermes/adapters/gateway/telegram/telegramtest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/schema"
)

// TestJobDeliversToTelegramAndAFile: a weekday-morning job fires on time
// on a fake clock inside a gateway whose Telegram adapter talks to
// telegram-test-api (a third-party Bot API emulator); its answer arrives
// in the Telegram chat once, is written under the output directory, and
// both deliveries are recorded as JobDelivered. Nothing fires before the
// slot.
func TestJobDeliversToTelegramAndAFile(t *testing.T) {
	if os.Getenv(telegramtest.EnvModule) == "" && os.Getenv("CI") != "" {
		t.Fatalf("%s is not set in CI: .ci/run installs telegram-test-api", telegramtest.EnvModule)
	}
	emu := telegramtest.Start(t)
	dir := t.TempDir()
	store := openStore(t, dir)
	log := zerolog.Nop()
	sys := actors.NewSystem(log)
	defer sys.Shutdown()
	b, err := bus.Open("", log)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	clock := crontest.NewClock(t0) // Monday 06:00 UTC
	jobs := cron.NewJobs(store, clock.Now)
	out := filepath.Join(dir, "output")
	sched := cron.New(store, jobs, sys, cron.Config{Clock: clock, OutputDir: out, Bus: bus.OutboundPublisher{Bus: b},
		Platforms: func() []string { return []string{"telegram"} }, Wrap: true,
		Agent: &stubAgent{reply: func(_ context.Context, job *cron.Job, prompt string) (string, error) {
			return "The build is green: 3 of 3 checks passed (`main`).", nil
		}}})
	router := gateway.New(store, b.Transport, sys, gateway.Config{Auth: gateway.Auth{AllowAll: true}, Acks: sched.Ack}, log)
	srv := llmtest.New()
	defer srv.Close()
	router.Sessions = session.NewManager(sys, session.Deps{Store: store, Log: log, Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}),
		Tools: tool.NewTools(), Exec: toolrun.NewPool(sys, 2, time.Minute), Cfg: agent.Config{Model: "m"}, MaxTurns: 2})
	ad, err := telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: emu.URL, CacheDir: filepath.Join(dir, "cache"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Add(3)
	routerDone := make(chan error, 1)
	go func() { defer wg.Done(); routerDone <- router.Run(ctx) }()
	select {
	case <-router.Ready():
	case err := <-routerDone:
		t.Fatalf("the router did not start: %v", err)
	}
	served := gw.NewServed(ad, b, log)
	go func() { defer wg.Done(); served.Serve(ctx) }()
	waitFor(t, "the adapter connected", func() bool { return served.Status().Connected })
	go func() { defer wg.Done(); sched.Run(ctx) }()
	<-sched.Ready()

	const chat = 111111
	job := mustCreate(t, jobs, schema.JobSpec{Name: "build check", Schedule: "0 9 * * 1-5", Timezone: "Europe/Berlin",
		Prompt: "check the build", Deliver: "telegram:111111,local"})
	slot := time.Date(2026, 6, 1, 7, 0, 0, 0, time.UTC) // 09:00 in Berlin (CEST)
	waitFor(t, "the timer", func() bool { return clock.NextAt().Equal(slot) })
	clock.Set(slot.Add(-time.Second))
	time.Sleep(100 * time.Millisecond) // a wrongly early timer would fire now
	if got, _ := emu.Received(ctx, telegramtest.Token, chat); len(got) != 0 || len(runs(t, store, job.ID)) != 0 {
		t.Fatalf("fired before its slot: %d messages, %d runs", len(got), len(runs(t, store, job.ID)))
	}
	clock.Set(slot)
	got := emu.WaitReceived(t, telegramtest.Token, chat, 1, 20*time.Second)
	if !strings.Contains(got[0].Message.Text, "The build is green") || !strings.Contains(got[0].Message.Text, "build check") {
		t.Fatalf("the Telegram message %q", got[0].Message.Text)
	}
	waitFor(t, "both deliveries recorded", func() bool { return settled(t, store, job.ID, 1) })
	r := runs(t, store, job.ID)
	if len(r) != 1 || !r[0].Outcomes["telegram:111111"].Delivered || !r[0].Outcomes["local"].Delivered {
		t.Fatalf("runs %+v", r)
	}
	files, _ := filepath.Glob(filepath.Join(out, job.ID, "*.md"))
	if len(files) != 1 {
		t.Fatalf("output files %v", files)
	}
	if b, _ := os.ReadFile(files[0]); !strings.Contains(string(b), "The build is green") {
		t.Fatalf("output file %s:\n%s", files[0], b)
	}
	// Exactly once: no second message shows up.
	time.Sleep(300 * time.Millisecond)
	if again, _ := emu.Received(ctx, telegramtest.Token, chat); len(again) != 1 {
		t.Fatalf("%d Telegram messages for one run", len(again))
	}
}
