package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

func TestCronAddListInProcess(t *testing.T) {
	quietEnv(t)
	home := t.TempDir()
	if out, _, _ := inHome(t, home, "cron", "list"); !strings.HasPrefix(out, "no scheduled jobs yet") {
		t.Fatalf("cron list of a new home: %q", out)
	}
	out, _, err := inHome(t, home, "cron", "add", "--schedule", "every 30m", "--prompt", "check the mail", "--name", "mail")
	if err != nil || !strings.HasPrefix(out, "job ") || !strings.Contains(out, "(mail)") {
		t.Fatalf("cron add: %q %v", out, err)
	}
	id := strings.Fields(out)[1]
	// --prompt-file - reads the prompt from stdin.
	if out, _, err := execute(t, "from stdin", "--home", home, "cron", "add", "--schedule", "every 1h", "--prompt-file", "-", "--paused"); err != nil || !strings.HasPrefix(out, "job ") {
		t.Fatalf("cron add --prompt-file -: %q %v", out, err)
	}
	out, _, err = inHome(t, home, "cron", "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var jobs []map[string]any
	if err := json.Unmarshal([]byte(out), &jobs); err != nil || len(jobs) != 2 {
		t.Fatalf("cron list --json: %v\n%s", err, out)
	}
	for _, j := range jobs {
		b, _ := json.Marshal(j)
		if !strings.Contains(string(b), "check the mail") && !strings.Contains(string(b), "from stdin") {
			t.Fatalf("a job lost its prompt: %s", b)
		}
	}
	if _, _, err := inHome(t, home, "cron", "edit", id); err == nil || !strings.Contains(err.Error(), "nothing to change") {
		t.Fatalf("cron edit without flags: %v", err)
	}
	if out, _, err := inHome(t, home, "cron", "pause", id); err != nil || !strings.Contains(out, "paused") {
		t.Fatalf("cron pause: %q %v", out, err)
	}
	if _, _, err := inHome(t, home, "cron", "add", "--schedule", "whenever", "--prompt", "x"); err == nil {
		t.Fatal("cron add took a schedule that means nothing")
	}
}

// runCronAdd takes the given flags from its options (changed stands for
// cobra's Flags().Changed).
func TestRunCronAddOptions(t *testing.T) {
	quietEnv(t)
	home := t.TempDir()
	var out strings.Builder
	f := &app.Factory{HomeFlag: home, IO: app.IOStreams{Out: &out}}
	given := map[string]bool{"schedule": true, "prompt": true}
	opts := &cronAddOptions{app: f, io: f.IO, add: &jobFlags{schedule: "every 2h", prompt: "report", changed: func(n string) bool { return given[n] }}}
	if err := runCronAdd(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "every 2h") {
		t.Fatalf("runCronAdd: %q", out.String())
	}
}
