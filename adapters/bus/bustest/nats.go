// Package bustest starts the real message broker the gateway's bus runs on
// when adapters and the router are separate processes — nats-server with
// JetStream — on loopback, for tests and benchmarks. It is no fake: the
// server is the installed nats-server binary (Debian's package, or the one
// HERMES_NATS_SERVER names) with its store in a temporary directory, and it
// is killed by its pid when the test ends.
package bustest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// NATS is a running nats-server with JetStream.
type NATS struct {
	// URL is nats://127.0.0.1:PORT.
	URL string

	bin, dir string
	port     int
	// extra are more arguments of the server (TLS).
	extra []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    *lockedBuffer
}

// Binary returns the nats-server to run, or "" when none is installed.
func Binary() string {
	if p := os.Getenv("HERMES_NATS_SERVER"); p != "" {
		return p
	}
	p, err := exec.LookPath("nats-server")
	if err != nil {
		return ""
	}
	return p
}

// StartNATS starts nats-server -js on a free loopback port with its store
// in a temporary directory, or skips the test when no nats-server is
// installed. The server is killed when the test ends.
func StartNATS(tb testing.TB) *NATS { return startNATS(tb, "") }

// StartNATSTLS is StartNATS with TLS that verifies clients: certs holds
// ca.pem (which client certificates must chain to) and nats.pem and
// nats-key.pem (the server's, for 127.0.0.1). URL is then tls://….
func StartNATSTLS(tb testing.TB, certs string) *NATS { return startNATS(tb, certs) }

func startNATS(tb testing.TB, certs string) *NATS {
	tb.Helper()
	bin := Binary()
	if bin == "" {
		msg := "nats-server is not installed (Debian: apt-get install nats-server, or set HERMES_NATS_SERVER): the NATS JetStream bus is not tested"
		if os.Getenv("CI") != "" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	n := &NATS{bin: bin, dir: tb.TempDir()}
	if certs != "" {
		n.extra = []string{"--tls", "--tlscert", filepath.Join(certs, "nats.pem"), "--tlskey", filepath.Join(certs, "nats-key.pem"),
			"--tlscacert", filepath.Join(certs, "ca.pem"), "--tlsverify"}
	}
	var err error
	for range 3 { // the free port may be taken between the probe and the start
		if n.port, err = freePort(); err != nil {
			tb.Fatal(err)
		}
		if err = n.Start(); err == nil {
			break
		}
	}
	if err != nil {
		tb.Fatal(err)
	}
	n.URL = fmt.Sprintf("nats://127.0.0.1:%d", n.port)
	if certs != "" {
		n.URL = fmt.Sprintf("tls://127.0.0.1:%d", n.port)
	}
	tb.Cleanup(n.Stop)
	return n
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start (re)starts the server on its port and store directory; the streams
// and consumers of an earlier run are still there.
func (n *NATS) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return nil
	}
	n.log = &lockedBuffer{}
	cmd := exec.Command(n.bin, append([]string{"-a", "127.0.0.1", "-p", strconv.Itoa(n.port), "-js", "-sd", filepath.Join(n.dir, "jetstream")}, n.extra...)...)
	cmd.Stdout, cmd.Stderr = n.log, n.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", n.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The port answers a moment before JetStream is ready; the server
		// says when it is.
		if bytes.Contains(n.log.Bytes(), []byte("Server is ready")) {
			n.cmd, n.exited = cmd, exited
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("nats-server exited: %s", n.log.Bytes())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("nats-server was not ready after 10s: %s", n.log.Bytes())
		}
	}
}

// Stop kills the server by its pid and waits until it is gone.
func (n *NATS) Stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Kill()
	<-n.exited
	n.cmd = nil
}

// Log returns what the server printed so far.
func (n *NATS) Log() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.log == nil {
		return ""
	}
	return string(n.log.Bytes())
}

// lockedBuffer collects the server's output, written by exec's copying
// goroutine while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}
