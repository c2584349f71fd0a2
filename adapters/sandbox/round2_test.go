//go:build linux

package sandbox

// Round 2 of the attack from inside: what the escape suite and B1–B14
// do not cover. Each test checks the host (processes, cgroups, Hermes'
// own memory), not what the sandbox reports.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRound2InitUntouchable: the init (pid 1 of the sandbox, visible in
// its /proc) and each of its threads — the spawner thread shares the
// commands' Landlock domain — cannot be signalled, stopped, traced or
// read: its environment, memory, descriptors (the control socket; only
// their numbers can be listed) and root stay out of reach, and the
// sandbox keeps running commands.
func TestRound2InitUntouchable(t *testing.T) {
	t.Parallel()
	escNeed(t, "python3")
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	out, _ := escRun(t, sb, w.project, w.env(), 20*time.Second, `
		for d in /proc/1 /proc/1/task/*; do
			cat $d/environ 2>/dev/null | tr '\0' '\n' | grep -a . && echo "ENVIRON $d"
			head -c 16 $d/mem 2>/dev/null && echo "MEM $d"
			for f in $d/fd/*; do readlink $f 2>/dev/null; done | grep -q . && echo "FDLINK $d"
			ls $d/root/ 2>/dev/null | grep -q . && echo "ROOT $d"
			ls $d/cwd/ 2>/dev/null | grep -q . && echo "CWD $d"
			cat $d/fd/3 2>/dev/null && echo "CTL $d"
		done
		kill -STOP 1; kill -9 1; kill -9 -1
		python3 - <<'EOF'
import ctypes, glob, os, signal
libc = ctypes.CDLL(None, use_errno=True)
for d in ["/proc/1"] + glob.glob("/proc/1/task/*"):
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        print("open", d, e); continue
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        r = libc.syscall(424, fd, int(sig), 0, 0)
        print("pidfd_send_signal", d, sig, r, ctypes.get_errno())
        if r == 0:
            print("SIGNALLED", d)
    try:
        m = os.open(d + "/mem", os.O_RDWR)
        print("MEMOPEN", d)
    except OSError as e:
        pass
EOF
		echo done`)
	for _, bad := range []string{"ENVIRON", "MEM ", "MEMOPEN", "FDLINK", "ROOT", "CWD", "CTL", "SIGNALLED", initEnv} {
		if strings.Contains(out, bad) {
			t.Errorf("the init was reached (%s):\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "done") {
		t.Fatalf("the attack did not run:\n%s", out)
	}
	// The effects: the init is alive, not stopped, and still serves.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", sb.init.Process.Pid))
	if err != nil {
		t.Fatalf("host: the init is gone: %v", err)
	}
	if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) == 0 || f[0] == "T" || f[0] == "t" || f[0] == "Z" {
		t.Errorf("host: the init is in state %v", f[:1])
	}
	if out, code := escRun(t, sb, w.project, w.env(), 10*time.Second, `echo alive`); code != 0 || !strings.Contains(out, "alive") {
		t.Errorf("the sandbox no longer runs commands: %d %s", code, out)
	}
}

// TestRound2CgroupsOutOfReach: a command cannot leave its cgroup, raise
// its ceilings, or freeze Hermes' (or any) cgroup through
// /sys/fs/cgroup.
func TestRound2CgroupsOutOfReach(t *testing.T) {
	t.Parallel()
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetOff}, Options{})
	var before []string
	filepath.WalkDir("/sys/fs/cgroup", func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.Contains(p, "hermes-sandbox-") {
			return filepath.SkipDir
		}
		if err == nil && (d.Name() == "freezer.state" || d.Name() == "pids.max" || d.Name() == "memory.limit_in_bytes") {
			b, _ := os.ReadFile(p)
			before = append(before, p+"="+string(b))
		}
		return nil
	})
	out, _ := escRun(t, sb, w.project, w.env(), 20*time.Second, `
		for f in $(find /sys/fs/cgroup -name cgroup.procs 2>/dev/null); do echo $$ > $f 2>/dev/null && echo "MOVED $f"; done
		for f in $(find /sys/fs/cgroup -name pids.max -o -name memory.limit_in_bytes 2>/dev/null); do echo max > $f 2>/dev/null && echo "RAISED $f"; done
		for f in $(find /sys/fs/cgroup -name freezer.state 2>/dev/null); do echo FROZEN > $f 2>/dev/null && echo "FROZE $f"; done
		mkdir /sys/fs/cgroup/pids/r2 2>/dev/null && echo MKDIR
		cat /proc/self/cgroup`)
	for _, bad := range []string{"MOVED", "RAISED", "FROZE", "MKDIR"} {
		if strings.Contains(out, bad) {
			t.Errorf("cgroup reached (%s):\n%s", bad, out)
		}
	}
	var after []string
	filepath.WalkDir("/sys/fs/cgroup", func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.Contains(p, "hermes-sandbox-") {
			return filepath.SkipDir
		}
		if err == nil && (d.Name() == "freezer.state" || d.Name() == "pids.max" || d.Name() == "memory.limit_in_bytes") {
			b, _ := os.ReadFile(p)
			after = append(after, p+"="+string(b))
		}
		return nil
	})
	if strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Errorf("host: cgroup files changed")
	}
	if !strings.Contains(out, "pids:") {
		t.Fatalf("the attack did not run:\n%s", out)
	}
	if _, err := os.Stat("/sys/fs/cgroup/pids/r2"); err == nil {
		os.Remove("/sys/fs/cgroup/pids/r2")
		t.Errorf("host: a cgroup was made")
	}
}

// TestRound2ProxyHeaderFlood: a request head without end sent to the
// allow-list proxy does not grow Hermes' memory (it is read outside the
// sandbox's ceilings): the head is bounded. (Round 2 grew the heap by
// 542 MiB with 256 MiB sent.)
func TestRound2ProxyHeaderFlood(t *testing.T) {
	escNeed(t, "python3")
	w := newEscWorld(t)
	sb := escStart(t, Policy{Writable: []string{w.project}, Hidden: []string{w.agentHome}, Home: w.home, Network: NetAllow, Allow: []string{"allowed.test"}}, Options{})
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()
	out, _ := escRun(t, sb, w.project, w.env(), 30*time.Second, `python3 - <<'EOF'
import socket, time
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"GET http://allowed.test/ HTTP/1.1\r\nX-Pad: ")
chunk = b"a" * (1 << 20)
sent = 0
t0 = time.time()
try:
    while sent < (256 << 20) and time.time() - t0 < 8:
        s.sendall(chunk); sent += len(chunk)
except OSError as e:
    print("stopped", e)
print("sent MiB", sent >> 20)
EOF`)
	close(stop)
	grew := int64(peak.Load()) - int64(base)
	t.Logf("%s; Hermes' heap grew by %d MiB", strings.TrimSpace(out), grew>>20)
	if grew > 32<<20 {
		t.Errorf("host: one sandboxed connection to the proxy grew Hermes' heap by %d MiB", grew>>20)
	}
}
