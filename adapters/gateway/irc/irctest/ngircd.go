package irctest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Server is a real ngIRCd (Debian's ngircd package) on a loopback port,
// run by the test with its own configuration in a temporary directory.
type Server struct {
	t    testing.TB
	bin  string
	conf string
	Port int
	cmd  *exec.Cmd
	out  *bytes.Buffer
}

// Start starts ngIRCd, and stops it when the test ends. Without an
// ngircd binary the test skips, or fails under CI (.ci/run installs it).
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, "")
}

// StartWith is Start with more lines for the [Global] section.
func StartWith(t testing.TB, global string) *Server {
	t.Helper()
	bin := os.Getenv("HERMES_NGIRCD")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("ngircd"); err != nil {
			bin = "/usr/sbin/ngircd"
		}
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no ngircd at %s: .ci/run installs Debian's ngircd", bin)
		}
		t.Skip("no ngircd on this machine: apt-get install ngircd (or set HERMES_NGIRCD)")
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// Penalties off: the adapter paces itself (its flood control has a
	// test of its own), and test users must not be slowed down.
	conf := fmt.Sprintf(`[Global]
	Name = irc.hermes.test
	Info = Hermes test server
	Listen = 127.0.0.1
	Ports = %d
	MotdPhrase = "Hermes test server"
	PidFile = %s
	ServerUID = %d
	ServerGID = %d
%s
[Limits]
	MaxConnectionsIP = 0
	MaxNickLength = 30
	MaxJoins = 0
	MaxPenaltyTime = 0
	PingTimeout = 120
	PongTimeout = 20
[Options]
	DNS = no
	Ident = no
	PAM = no
`, port, filepath.Join(dir, "ngircd.pid"), os.Getuid(), os.Getgid(), global)
	path := filepath.Join(dir, "ngircd.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, bin: bin, conf: path, Port: port}
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// Addr is the server's address.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// Start runs the server (again) and waits until it accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	s.out = &bytes.Buffer{}
	s.cmd = exec.Command(s.bin, "-n", "-f", s.conf)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start ngircd: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.Kill()
			s.t.Fatalf("ngircd does not listen on %s after 20 s: %s", s.Addr(), s.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill ends the server at once (SIGKILL: every connection drops without a
// word, as when a server host dies).
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}
