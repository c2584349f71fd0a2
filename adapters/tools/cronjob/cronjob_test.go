package cronjob_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/actors/session"
	toolport "github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/tools/cronjob"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

var now = time.Date(2026, 6, 1, 6, 0, 0, 0, time.UTC)

type runner struct{ runs []string }

func (r *runner) RunNow(_ context.Context, ref string) (*cron.Run, error) {
	r.runs = append(r.runs, ref)
	return &cron.Run{ID: "r-1", Status: schema.RunOK, Finished: true, Targets: []cron.Target{{Kind: cron.TargetLocal}},
		Outcomes: map[string]cron.Outcome{"local": {Delivered: true, Path: "/x.md"}}}, nil
}

func setup(t *testing.T) (*cronjob.Tool, *embedded.Store) {
	t.Helper()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tool := &cronjob.Tool{Jobs: cron.NewJobs(store, func() time.Time { return now }), Store: store,
		Rules: func() cron.Rules {
			return cron.Rules{Toolsets: []string{"web", "terminal"}, Judge: judge.Check}
		},
		Origin: func(ctx context.Context, id string) (*schema.JobOrigin, error) {
			return gateway.OriginOf(ctx, store, id)
		}}
	return tool, store
}

func call(t *testing.T, tool *cronjob.Tool, sid string, args map[string]any) (map[string]any, error) {
	t.Helper()
	raw, _ := json.Marshal(args)
	ctx := toolport.WithEnv(context.Background(), &toolport.Env{SessionID: sid, Values: toolport.NewSessionValues()})
	out, err := tool.Run(ctx, raw)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not JSON: %s", out)
	}
	return m, nil
}

func mustCall(t *testing.T, tool *cronjob.Tool, sid string, args map[string]any) map[string]any {
	t.Helper()
	m, err := call(t, tool, sid, args)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return m
}

// chatSession writes what the gateway writes for a Telegram chat talking
// to session sid.
func chatSession(t *testing.T, store *embedded.Store, sid string) {
	ctx := context.Background()
	key := "telegram/111111/t:17"
	stream := gateway.ChatStream(key)
	if _, err := store.Append(ctx, gateway.ChatIndexStream, events.Any, schema.MustEnvelope(schema.Meta{},
		schema.GatewayChatOpened{Key: key, Stream: stream, Platform: "telegram", Chat: "111111", Thread: "17"})); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, stream, events.Any, schema.MustEnvelope(schema.Meta{}, schema.GatewaySessionBound{SessionID: sid, Reason: "new"})); err != nil {
		t.Fatal(err)
	}
	if err := session.Create(ctx, store, sid, session.Start{Source: "telegram", System: "s"}); err != nil {
		t.Fatal(err)
	}
}

func TestCreateFromAChatDeliversBackToIt(t *testing.T) {
	tool, store := setup(t)
	chatSession(t, store, "sess-tg")
	m := mustCall(t, tool, "sess-tg", map[string]any{"action": "create", "schedule": "0 9 * * 1-5", "timezone": "Europe/Berlin",
		"prompt": "Check the build and tell me if it is red.", "enabled_toolsets": []string{"terminal"}})
	job := m["job"].(map[string]any)
	if job["deliver"] != "origin" || job["next_run_at"] != "2026-06-01T09:00:00+02:00" || job["state"] != "active" {
		t.Fatalf("created %v", job)
	}
	j, err := tool.Jobs.Get(context.Background(), job["job_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if o := j.Spec.Origin; o == nil || o.Platform != "telegram" || o.Chat != "111111" || o.Thread != "17" || o.SessionID != "sess-tg" || j.CreatedBy != "tool" {
		t.Fatalf("origin %+v", j.Spec.Origin)
	}
}

func TestActions(t *testing.T) {
	tool, store := setup(t)
	if err := session.Create(context.Background(), store, "sess-cli", session.Start{Source: "cli", System: "s"}); err != nil {
		t.Fatal(err)
	}
	m := mustCall(t, tool, "sess-cli", map[string]any{"action": "create", "schedule": "every 2h", "prompt": "Summarise my inbox.", "name": "inbox"})
	if !strings.Contains(m["message"].(string), "not sent to any chat") {
		t.Fatalf("a local-only job is not said to be: %v", m["message"])
	}
	id := m["job"].(map[string]any)["job_id"].(string)
	mustCall(t, tool, "sess-cli", map[string]any{"action": "create", "schedule": "in 30m", "prompt": "Stretch.", "deliver": "telegram:42"})

	list := mustCall(t, tool, "sess-cli", map[string]any{"action": "list"})
	if list["count"].(float64) != 2 {
		t.Fatalf("list %v", list)
	}
	up := mustCall(t, tool, "sess-cli", map[string]any{"action": "update", "job_id": id[:5], "schedule": "every 3h", "model": map[string]any{"model": "gpt-4o"}})
	if up["job"].(map[string]any)["schedule"] != "every 3h" {
		t.Fatalf("update %v", up)
	}
	if j, _ := tool.Jobs.Get(context.Background(), id); j.Spec.Model != "gpt-4o" {
		t.Fatalf("model %q", j.Spec.Model)
	}
	if p := mustCall(t, tool, "sess-cli", map[string]any{"action": "pause", "job_id": "inbox", "reason": "holiday"}); p["job"].(map[string]any)["state"] != "paused" {
		t.Fatalf("pause %v", p)
	}
	if r := mustCall(t, tool, "sess-cli", map[string]any{"action": "resume", "job_id": id}); r["job"].(map[string]any)["state"] != "active" {
		t.Fatalf("resume %v", r)
	}
	if _, err := call(t, tool, "sess-cli", map[string]any{"action": "run", "job_id": id}); err == nil || !strings.Contains(err.Error(), "hermes cron run") {
		t.Fatalf("run without a runner: %v", err)
	}
	rn := &runner{}
	tool.SetRunner(rn)
	if r := mustCall(t, tool, "sess-cli", map[string]any{"action": "run", "job_id": id}); r["status"] != "ok" || r["delivery"] != "local: /x.md" || rn.runs[0] != id {
		t.Fatalf("run %v", r)
	}
	mustCall(t, tool, "sess-cli", map[string]any{"action": "remove", "job_id": id})
	if list := mustCall(t, tool, "sess-cli", map[string]any{"action": "list"}); list["count"].(float64) != 1 {
		t.Fatalf("list after remove %v", list)
	}
	if list := mustCall(t, tool, "sess-cli", map[string]any{"action": "list", "include_disabled": true}); list["count"].(float64) != 2 {
		t.Fatalf("list with removed %v", list)
	}

	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"action": "create", "prompt": "p"}, "schedule is required"},
		{map[string]any{"action": "create", "schedule": "every 1h"}, "needs a prompt"},
		{map[string]any{"action": "create", "schedule": "99 * * * *", "prompt": "p"}, "invalid cron expression"},
		{map[string]any{"action": "create", "schedule": "2020-01-01T00:00:00Z", "prompt": "p"}, "in the past"},
		{map[string]any{"action": "create", "schedule": "every 1h", "prompt": "p", "deliver": "carrier pigeon"}, "unknown delivery target"},
		{map[string]any{"action": "create", "schedule": "every 1h", "prompt": "p", "deliver": "origin"}, "no origin"},
		{map[string]any{"action": "create", "schedule": "every 1h", "prompt": "p", "enabled_toolsets": []string{"browser"}}, "unknown toolset"},
		{map[string]any{"action": "create", "schedule": "every 1h", "script": "mkfs.ext4 /dev/sda1"}, "never allowed"},
		{map[string]any{"action": "pause"}, "job_id is required"},
		{map[string]any{"action": "pause", "job_id": "zzzzzz"}, "no job"},
		{map[string]any{"action": "update", "job_id": "inbox"}, "no job"},
		{map[string]any{"action": "explode"}, "unknown action"},
		{map[string]any{}, "action is required"},
	} {
		if _, err := call(t, tool, "sess-cli", c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestCronRunsCannotCreateJobs: a session the scheduler started cannot
// schedule more work unless cron.allow_nested says so.
func TestCronRunsCannotCreateJobs(t *testing.T) {
	tool, store := setup(t)
	if err := session.Create(context.Background(), store, "sess-cron", session.Start{Source: "cron", System: "s"}); err != nil {
		t.Fatal(err)
	}
	create := map[string]any{"action": "create", "schedule": "every 1h", "prompt": "p"}
	if _, err := call(t, tool, "sess-cron", create); err == nil || !strings.Contains(err.Error(), "allow_nested") {
		t.Fatalf("a cron run created a job: %v", err)
	}
	mustCall(t, tool, "sess-cron", map[string]any{"action": "list"})
	tool.AllowNested = true
	mustCall(t, tool, "sess-cron", create)
}
