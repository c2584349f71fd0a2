package terminal

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitWarm waits until the rig's session has a warm shell ready.
func (r *sandboxRig) waitWarm(t *testing.T) *warmShell {
	t.Helper()
	sbs := r.term.(*Terminal).cfg.Sandboxes
	ss, _, err := sbs.forSession(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ss.mu.Lock()
		w := ss.warm
		ss.mu.Unlock()
		if w != nil {
			return w
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no warm shell was started after a command")
	return nil
}

// A command handed to a warm shell sees what it would see started cold:
// the same $0, working directory, environment, standard input, open
// descriptors and exit code, and none of the script's variables.
func TestWarmShellRunsTheNextCommandAsACold(t *testing.T) {
	r := newSandboxRig(t)
	sbs := r.term.(*Terminal).cfg.Sandboxes
	probe := `echo "0=$0 h=${h-unset} c=${c-unset} args=$#"; pwd; env | sort | grep -v '^_=' | grep -v '^SHLVL='; ls /proc/self/fd | sort; if read x; then echo "stdin: $x"; else echo "stdin empty"; fi; echo err >&2; exit 7`
	cold, err := r.run(t, map[string]any{"command": probe})
	if err != nil {
		t.Fatalf("%v %s", err, cold)
	}
	if sbs.warmRuns.Load() != 0 {
		t.Fatal("the session's first command ran warm")
	}
	r.waitWarm(t)
	warm, err := r.run(t, map[string]any{"command": probe})
	if err != nil {
		t.Fatalf("%v %s", err, warm)
	}
	if n := sbs.warmRuns.Load(); n != 1 {
		t.Fatalf("%d commands ran warm, want 1", n)
	}
	if warm != cold {
		t.Errorf("a warm shell ran the command differently:\ncold:\n%s\nwarm:\n%s", cold, warm)
	}
	for _, want := range []string{"0=/bin/bash h=unset c=unset args=0", r.work, "stdin empty", "err", "[exit code: 7]"} {
		if !strings.Contains(warm, want) {
			t.Errorf("the warm run lacks %q:\n%s", want, warm)
		}
	}
	// Every later command of the turn runs warm too, and its effects are
	// the command's own.
	for i := range 3 {
		r.waitWarm(t)
		out, err := r.run(t, map[string]any{"command": "echo step > note" + string(rune('a'+i)) + " && cat note" + string(rune('a'+i))})
		if err != nil || !strings.Contains(out, "step") {
			t.Fatalf("%v %s", err, out)
		}
	}
	if n := sbs.warmRuns.Load(); n != 4 {
		t.Errorf("%d commands ran warm, want 4", n)
	}
}

// A warm shell started in one directory does not run a command meant for
// another: the command starts cold there.
func TestWarmShellIsNotUsedElsewhere(t *testing.T) {
	r := newSandboxRig(t)
	sbs := r.term.(*Terminal).cfg.Sandboxes
	sub := filepath.Join(r.work, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := r.run(t, map[string]any{"command": "true"}); err != nil {
		t.Fatal(err)
	}
	r.waitWarm(t)
	out, err := r.run(t, map[string]any{"command": "pwd", "workdir": "sub"})
	if err != nil || !strings.Contains(out, sub) {
		t.Fatalf("pwd in sub: %v %s", err, out)
	}
	if n := sbs.warmRuns.Load(); n != 0 {
		t.Fatalf("a warm shell of %s ran a command for %s", r.work, sub)
	}
	// The shell started after it is sub's.
	r.waitWarm(t)
	out, err = r.run(t, map[string]any{"command": "pwd", "workdir": "sub"})
	if err != nil || !strings.Contains(out, sub) || sbs.warmRuns.Load() != 1 {
		t.Fatalf("pwd in sub, warm: %v %s (%d warm)", err, out, sbs.warmRuns.Load())
	}
}

// A timeout kills a command run by a warm shell, and whatever it started.
func TestWarmShellCommandTimesOut(t *testing.T) {
	r := newSandboxRig(t)
	if _, err := r.run(t, map[string]any{"command": "true"}); err != nil {
		t.Fatal(err)
	}
	r.waitWarm(t)
	marker := "9" + strings.TrimLeft(time.Now().Format("150405.000000"), "0")
	start := time.Now()
	out, err := r.run(t, map[string]any{"command": "sleep " + marker + " & sleep " + marker, "timeout": 1})
	if err == nil || !strings.Contains(out, "timed out") {
		t.Fatalf("want a timeout, got %v %s", err, out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the timeout took %s", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for countProcs("sleep "+marker) != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := countProcs("sleep " + marker); n != 0 {
		t.Errorf("%d processes of the timed-out command still run", n)
	}
}

// A warm shell runs nothing until it is handed a whole command: dropped,
// or handed a script cut off anywhere (its Hermes died writing it), it
// runs nothing of the command; and a command a cold start would refuse
// (a NUL byte) is not cut short at its NUL and run by a warm shell.
func TestWarmShellRunsNothingUnhanded(t *testing.T) {
	r := newSandboxRig(t)
	sbs := r.term.(*Terminal).cfg.Sandboxes
	marker := filepath.Join(r.work, "ran")
	if _, err := r.run(t, map[string]any{"command": "true"}); err != nil {
		t.Fatal(err)
	}
	w := r.waitWarm(t)
	out, err := r.run(t, map[string]any{"command": "touch " + marker + "\x00; echo rest"})
	if _, serr := os.Stat(marker); serr == nil {
		t.Fatalf("the part of a command before its NUL ran: %v %s", err, out)
	}
	if n := sbs.warmRuns.Load(); n != 0 {
		t.Fatalf("a command with a NUL went to a warm shell")
	}
	w.drop()
	if _, err := w.p.Wait(); err != nil {
		t.Fatal(err)
	}
	sb, err := sbs.For(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	script := handed("touch " + marker + " && echo done")
	for cut := 0; cut < len(script)-1; cut++ {
		lone, err := startWarm(sb, "/bin/bash", r.work, []string{"PATH=/usr/bin:/bin"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lone.cmd.Write(script[:cut]); err != nil {
			t.Fatal(err)
		}
		lone.cmd.Close()
		if _, err := lone.p.Wait(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("a script cut after %d of its %d bytes ran the command: %q", cut, len(script), script[:cut])
		}
	}
	// Whole, it does.
	lone, err := startWarm(sb, "/bin/bash", r.work, []string{"PATH=/usr/bin:/bin"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lone.run("touch "+marker+" && echo done", io.Discard); err != nil {
		t.Fatal(err)
	}
	if code, err := lone.p.Wait(); err != nil || code != 0 {
		t.Fatalf("the whole script: %d %v", code, err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the whole script did not run its command")
	}
}

// Quotes, backslashes, newlines, dollars and a heredoc reach the shell as
// the model wrote them, as they would through bash -c; and a command too
// long for the hand-over starts cold, with the same result.
func TestWarmShellKeepsTheCommandAsWritten(t *testing.T) {
	r := newSandboxRig(t)
	sbs := r.term.(*Terminal).cfg.Sandboxes
	cmds := []string{
		`printf '%s\n' "it's" 'a "quote"' '\' '$HOME' "$((6*7))"`,
		"cat <<'EOF'\nline 1 'single' \"double\" $NOT \\back\nEOF\necho after",
		`echo '''' ''\''' "'"`,
		"x=1\n\n# comment\necho $x; echo \"${h:-no h}\"",
		"echo '" + strings.Repeat("q'\\''", 20000) + "' | wc -c",
	}
	for _, c := range cmds {
		cold, err := r.run(t, map[string]any{"command": c, "workdir": "/"})
		if err != nil {
			t.Fatalf("%v %s", err, cold)
		}
		r.waitWarm(t)
		before := sbs.warmRuns.Load()
		warm, err := r.run(t, map[string]any{"command": c, "workdir": "/"})
		if err != nil {
			t.Fatalf("%v %s", err, warm)
		}
		want := int64(0)
		if warmable("/bin/bash", c) {
			want = 1
		}
		if ran := sbs.warmRuns.Load() - before; ran != want {
			t.Errorf("%d warm runs of %.40q, want %d", ran, c, want)
		}
		if warm != cold {
			t.Errorf("%.60q ran differently warm:\ncold: %s\nwarm: %s", c, cold, warm)
		}
	}
}

// A warm shell no command came for goes after WarmIdle (a gateway keeps
// no idle shell per session between turns); the next command starts cold
// and works.
func TestWarmShellGoesWhenUnused(t *testing.T) {
	r := newSandboxRig(t)
	sbs := r.term.(*Terminal).cfg.Sandboxes
	sbs.WarmIdle = 200 * time.Millisecond
	if _, err := r.run(t, map[string]any{"command": "true"}); err != nil {
		t.Fatal(err)
	}
	w := r.waitWarm(t)
	select {
	case <-w.p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("an unused warm shell still waits after its idle time")
	}
	ss, _, _ := sbs.forSession(r.ctx)
	ss.mu.Lock()
	left := ss.warm
	ss.mu.Unlock()
	if left == w {
		t.Fatal("the session still holds the dropped shell")
	}
	out, err := r.run(t, map[string]any{"command": "echo after"})
	if err != nil || !strings.Contains(out, "after") || sbs.warmRuns.Load() != 0 {
		t.Fatalf("the command after: %v %s (%d warm)", err, out, sbs.warmRuns.Load())
	}
}

// Another command of the session — a background job the model started —
// sees the waiting warm shells in /proc and writes a command of its own
// into every descriptor of theirs it can open, to run it as the next
// command, unapproved. None takes it: the shell's command comes on a
// socket, which /proc does not open. (With a pipe there, this attack ran
// its command.)
func TestWarmShellTakesNoCommandFromAnother(t *testing.T) {
	r := newSandboxRig(t)
	sbs := r.term.(*Terminal).cfg.Sandboxes
	marker := filepath.Join(r.work, "injected")
	log := filepath.Join(r.work, "attack.log")
	attack := `for i in $(seq 300); do
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    if grep -qa 'read -r -d' $p/cmdline 2>/dev/null; then echo "seen $p" >> ` + log + `; fi
    for fd in $p/fd/*; do printf 'touch ` + marker + `\0' 2>/dev/null > $fd && echo "wrote $fd" >> ` + log + `; done
  done
  sleep 0.02
done`
	if _, err := r.run(t, map[string]any{"command": attack, "background": true}); err != nil {
		t.Fatal(err)
	}
	for range 15 {
		if out, err := r.run(t, map[string]any{"command": "echo hi"}); err != nil || !strings.Contains(out, "hi") {
			t.Fatalf("%v %s", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "seen") {
		t.Fatalf("the attack never saw a waiting shell:\n%s", b)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("a background job's command ran in a warm shell:\n%s", b)
	}
	if sbs.warmRuns.Load() == 0 {
		t.Fatal("no command ran warm: nothing was attacked")
	}
}
