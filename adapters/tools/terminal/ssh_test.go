package terminal

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/tool"
)

// startSSHD runs a real OpenSSH server (Debian's openssh-server) on a free
// loopback port, accepting one fresh key, and returns the backend to it.
func startSSHD(t *testing.T) SSH {
	t.Helper()
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd"
		if _, err := os.Stat(sshd); err != nil {
			t.Skip("no sshd on this machine (.ci/run installs openssh-server)")
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("sshd needs root for privilege separation here")
	}
	dir := t.TempDir()
	for _, k := range []string{"host", "client"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v %s", err, out)
		}
	}
	pub, _ := os.ReadFile(filepath.Join(dir, "client.pub"))
	os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := fmt.Sprintf("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nAuthorizedKeysFile %s\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nPidFile %s\n",
		port, filepath.Join(dir, "host"), filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"))
	os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(cfg), 0o600)
	os.MkdirAll("/run/sshd", 0o755)
	cmd := exec.Command(sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	var logb strings.Builder
	cmd.Stderr = &logb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if i > 100 {
			t.Fatalf("sshd did not start: %s", logb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	remote := t.TempDir()
	return SSH{Host: "127.0.0.1", Port: port, User: "root", KeyFile: filepath.Join(dir, "client"), KnownHosts: filepath.Join(dir, "known_hosts"), Dir: remote}
}

func TestSSHBackend(t *testing.T) {
	backend := startSSHD(t)
	asker := &scriptedAsker{answers: []string{"deny"}}
	env := &tool.Env{WorkingDir: "/nonexistent-locally", Values: tool.NewSessionValues(), Asker: asker}
	ctx := tool.WithEnv(context.Background(), env)
	term := Tools(Config{Backend: backend, Timeout: 20 * time.Second, Approver: &Approver{Timeout: time.Second}})[0]
	run := func(cmd string) (string, error) {
		b, _ := json.Marshal(map[string]any{"command": cmd})
		return term.Run(ctx, b)
	}
	out, err := run("pwd; echo 'it''s remote' > proof.txt; cat proof.txt; exit 4")
	if err != nil || !strings.Contains(out, backend.Dir) || !strings.Contains(out, "its remote") || !strings.HasSuffix(out, "[exit code: 4]") {
		t.Fatalf("%q %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(backend.Dir, "proof.txt")); strings.TrimSpace(string(b)) != "its remote" {
		t.Fatalf("remote file %q", b)
	}
	// Approval applies over ssh too.
	if _, err := run("rm -rf " + backend.Dir); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("dangerous command over ssh: %v", err)
	}
	if _, err := os.Stat(backend.Dir); err != nil {
		t.Fatal("a denied command ran remotely")
	}
}
