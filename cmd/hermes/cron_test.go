package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// cronJob is the part of `hermes cron list --json` the tests read.
type cronJob struct {
	ID    string `json:"id"`
	State string `json:"state"`
	Runs  int    `json:"runs"`
	Spec  struct {
		Name     string   `json:"name"`
		Deliver  string   `json:"deliver"`
		CatchUp  string   `json:"catch_up"`
		Toolsets []string `json:"toolsets"`
	} `json:"spec"`
	Last *struct {
		Status, Error string
	} `json:"last"`
}

func cronList(t *testing.T, env []string, home string) []cronJob {
	t.Helper()
	out, errOut, code := hermes(t, env, "", "--home", home, "cron", "list", "--json", "--all")
	if code != 0 {
		t.Fatalf("cron list: %s", errOut)
	}
	var js []cronJob
	if err := json.Unmarshal([]byte(out), &js); err != nil {
		t.Fatalf("cron list --json: %v\n%s", err, out)
	}
	return js
}

// TestCronCommands: add, list, edit, pause, resume, remove and history,
// IDs by prefix, and bad input refused with a message saying what to do.
func TestCronCommands(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	env := chatEnv(srv)
	home := t.TempDir()
	out, errOut, code := hermes(t, env, "", "--home", home, "cron", "add", "--schedule", "0 9 * * 1-5", "--tz", "Europe/Berlin",
		"--deliver", "telegram:111111", "--prompt", "Summarise my inbox", "--toolsets", "web,file", "--catch-up", "skip")
	if code != 0 || !strings.Contains(out, "0 9 * * 1-5 (Europe/Berlin)") || !strings.Contains(out, "telegram:111111") {
		t.Fatalf("add: %d %s %s", code, out, errOut)
	}
	id := strings.Fields(out)[1]
	js := cronList(t, env, home)
	if len(js) != 1 || js[0].ID != id || js[0].Spec.CatchUp != "skip" || strings.Join(js[0].Spec.Toolsets, ",") != "file,web" || js[0].State != "active" {
		t.Fatalf("list %+v", js)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "--schedule", "61 9 * * *", "--prompt", "p"}, "invalid cron expression"},
		{[]string{"add", "--schedule", "2020-01-01T09:00:00Z", "--prompt", "p"}, "in the past"},
		{[]string{"add", "--schedule", "every 1h", "--prompt", "p", "--deliver", "carrier-pigeon"}, "unknown delivery target"},
		{[]string{"add", "--schedule", "every 1h", "--prompt", "p", "--toolsets", "teleport"}, `unknown toolset "teleport"`},
		{[]string{"add", "--schedule", "every 1h"}, "needs a prompt"},
		{[]string{"add", "--schedule", "every 1h", "--script", "mkfs.ext4 /dev/sdb1", "--no-agent"}, "never allowed"},
		{[]string{"add", "--schedule", "every 1h", "--prompt", "p", "--timeout", "soon"}, "--timeout"},
		{[]string{"pause", "zzzz"}, "no job"},
		{[]string{"edit", id[:6]}, "nothing to change"},
		{[]string{"edit", id[:6], "--schedule", "every 5s"}, "shortest interval"},
	} {
		_, errOut, code := hermes(t, env, "", append([]string{"--home", home, "cron"}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("cron %v: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}
	if out := mustRun(t, home, "cron", "pause", id[:6], "--reason", "on holiday"); !strings.Contains(out, "paused") {
		t.Fatalf("pause: %s", out)
	}
	if out := mustRun(t, home, "cron", "edit", id[:6], "--schedule", "every 2h", "--deliver", "local"); !strings.Contains(out, "every 2h") {
		t.Fatalf("edit: %s", out)
	}
	mustRun(t, home, "cron", "resume", id)
	mustRun(t, home, "cron", "remove", id)
	if js := cronList(t, env, home); js[0].State != "removed" {
		t.Fatalf("after remove %+v", js)
	}
	h := mustRun(t, home, "cron", "history", id[:8])
	for _, want := range []string{"created", "paused", "on holiday", "updated", "schedule, deliver", "resumed", "removed"} {
		if !strings.Contains(h, want) {
			t.Fatalf("history lacks %q:\n%s", want, h)
		}
	}
	if out, _, _ := hermes(t, env, "", "--home", home, "cron", "list"); !strings.Contains(out, "no scheduled jobs") {
		t.Fatalf("list without removed jobs: %s", out)
	}
}

// startDaemon starts `hermes cron daemon` and returns once the scheduler
// runs.
func startDaemon(t *testing.T, env []string, home string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(bin, "--home", home, "cron", "daemon", "--model", "m")
	cmd.Env = env
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var log strings.Builder
	sc := bufio.NewScanner(pr)
	ready := false
	for !ready && sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		ready = strings.Contains(sc.Text(), "scheduler running")
	}
	if !ready {
		t.Fatalf("the daemon did not start:\n%s", log.String())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return cmd, &log
}

// TestCronDaemonKilledMidRunThenRestarted: a real `hermes cron daemon`
// fires two jobs whose model calls hang; it is killed with SIGKILL. The
// history shows the runs still open; a new daemon records them
// interrupted, retries the on_crash retry job once (and delivers its
// answer to a file) and leaves the on_crash fail job failed.
func TestCronDaemonKilledMidRunThenRestarted(t *testing.T) {
	srv := llmtest.New()
	srv.SetDefault(llmtest.Reply{Content: "too late", Delay: 60 * time.Second})
	defer srv.Close()
	env := chatEnv(srv)
	home := t.TempDir()
	at := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339)
	add := func(name, onCrash string) string {
		out := mustRun(t, home, "cron", "add", "--schedule", at, "--name", name, "--prompt", "Run the long report ("+name+")", "--on-crash", onCrash)
		return strings.Fields(out)[1]
	}
	retry, fail := add("retried", "retry"), add("failing", "fail")
	daemon, _ := startDaemon(t, env, home)
	waitRequests(t, srv, 2)
	pid := daemon.Process.Pid
	daemon.Process.Signal(syscall.SIGKILL)
	daemon.Wait()
	if h := mustRun(t, home, "cron", "history", retry); !strings.Contains(h, "running") {
		t.Fatalf("before the restart the run is open:\n%s", h)
	}

	srv.SetDefault(llmtest.Reply{Content: "Report: all systems nominal."})
	daemon2, _ := startDaemon(t, env, home)
	deadline := time.Now().Add(30 * time.Second)
	for {
		js := cronList(t, env, home)
		done := 0
		for _, j := range js {
			if j.State == "done" {
				done++
			}
		}
		if done == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs not settled after the restart: %+v", js)
		}
		time.Sleep(100 * time.Millisecond)
	}
	daemon2.Process.Signal(syscall.SIGTERM)
	if err := daemon2.Wait(); err != nil {
		t.Fatalf("daemon stop: %v", err)
	}

	h := mustRun(t, home, "cron", "history", retry)
	t.Logf("hermes cron history %s:\n%s", retry, h)
	dead := fmt.Sprintf("pid %d", pid)
	if !strings.Contains(h, "interrupted") || !strings.Contains(h, dead) || !strings.Contains(h, "retried once") {
		t.Fatalf("the crashed run is not shown interrupted by %s:\n%s", dead, h)
	}
	lines := strings.Split(strings.TrimSpace(h), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, "run retry") || !strings.Contains(last, " 2 ") || !strings.Contains(last, " ok ") || !strings.Contains(last, "local: ") {
		t.Fatalf("the retry:\n%s", h)
	}
	path := strings.TrimSpace(last[strings.Index(last, "local: ")+len("local: "):])
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), "Report: all systems nominal.") {
		t.Fatalf("output %s: %q %v", path, data, err)
	}
	if filepath.Dir(filepath.Dir(path)) != filepath.Join(home, "cron", "output") {
		t.Fatalf("output at %s", path)
	}
	// The crashed run's session has its turn closed as interrupted.
	var entries []struct {
		Run *struct {
			SessionID string `json:"session_id"`
			Attempt   int    `json:"attempt"`
		} `json:"run"`
	}
	json.Unmarshal([]byte(mustRun(t, home, "cron", "history", retry, "--json")), &entries)
	if len(entries) < 2 || entries[1].Run == nil || entries[1].Run.SessionID == "" {
		t.Fatalf("history --json %+v", entries)
	}
	if ev := mustRun(t, home, "sessions", "events", entries[1].Run.SessionID); !strings.Contains(ev, "TurnInterrupted") {
		t.Fatalf("the crashed run's session was left open:\n%s", ev)
	}
	hf := mustRun(t, home, "cron", "history", fail)
	if !strings.Contains(hf, "interrupted") || !strings.Contains(hf, "on_crash fail: not retried") || strings.Contains(hf, "run retry") {
		t.Fatalf("on_crash fail:\n%s", hf)
	}
}

// TestCronFromTheAgentAndRunNow: the model schedules a job through the
// cronjob tool in a CLI chat; `hermes cron run` runs it at once; a
// [SILENT] answer delivers nothing.
func TestCronFromTheAgentAndRunNow(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "cronjob", Args: `{"action":"create","schedule":"every 1d","name":"standup","prompt":"Remind me of the stand-up.","enabled_toolsets":["todo"]}`}}},
		llmtest.Reply{Content: "Scheduled."},
		llmtest.Reply{Content: "Stand-up in 10 minutes."},
		llmtest.Reply{Content: "[SILENT]"},
	)
	defer srv.Close()
	env := chatEnv(srv)
	home := t.TempDir()
	out, errOut, code := hermes(t, env, "", "--home", home, "chat", "-q", "Remind me of the stand-up every day", "--model", "m")
	if code != 0 || out != "Scheduled.\n" {
		t.Fatalf("chat: %d %q %s", code, out, errOut)
	}
	if !offers(srv.Requests()[0], "cronjob") {
		t.Fatal("the cronjob tool is not offered in a chat")
	}
	result := fmt.Sprint(srv.Requests()[1].Body["messages"])
	if !strings.Contains(result, "created") || !strings.Contains(result, "not sent to any chat") {
		t.Fatalf("tool result %s", result)
	}
	js := cronList(t, env, home)
	if len(js) != 1 || js[0].Spec.Name != "standup" || js[0].Spec.Deliver != "local" {
		t.Fatalf("jobs %+v", js)
	}
	_, errOut, code = hermes(t, env, "", "--home", home, "cron", "run", "standup", "--model", "m")
	if code != 0 || !strings.Contains(errOut, ": ok") || !strings.Contains(errOut, "delivered: local: ") {
		t.Fatalf("cron run: %d %s", code, errOut)
	}
	run := srv.Requests()[2]
	if offers(run, "cronjob") || !offers(run, "todo") || offers(run, "terminal") {
		t.Fatalf("a run's tools are not the job's toolsets without cronjob: %v", run.Body["tools"])
	}
	_, errOut, code = hermes(t, env, "", "--home", home, "cron", "run", js[0].ID[:6], "--model", "m")
	if code != 0 || !strings.Contains(errOut, ": silent") || strings.Contains(errOut, "delivered") {
		t.Fatalf("silent run: %d %s", code, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(home, "cron", "output", js[0].ID, "*.md"))
	if len(files) != 1 {
		t.Fatalf("%d output files, want 1 (the silent run writes none)", len(files))
	}
}
