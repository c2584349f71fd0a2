// Package nodetest starts the real peers of a cluster test: an etcd server
// (Debian's etcd-server) on loopback in a temporary directory, killed in
// cleanup, which a test can pause, stop and start again.
package nodetest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Etcd is a running etcd server.
type Etcd struct {
	// Endpoint is its client address (host:port).
	Endpoint string
	bin      string
	args     []string
	tc       *tls.Config
	mu       sync.Mutex
	cmd      *exec.Cmd
	out      *lockedBuffer
}

// Binary is the etcd executable ($HERMES_ETCD, else etcd on PATH).
func Binary() string {
	if b := os.Getenv("HERMES_ETCD"); b != "" {
		return b
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p
	}
	return ""
}

// StartEtcd starts etcd for tb and stops it in cleanup. Without etcd the
// test is skipped, unless CI is set, when it fails.
func StartEtcd(tb testing.TB) *Etcd { return startEtcd(tb, "") }

// StartEtcdTLS is StartEtcd with client connections over TLS that require
// a client certificate: certs holds ca.pem (the CA clients' certificates
// must chain to) and etcd.pem/etcd-key.pem (the server's, for 127.0.0.1).
// Endpoint is then https://127.0.0.1:PORT.
func StartEtcdTLS(tb testing.TB, certs string) *Etcd { return startEtcd(tb, certs) }

func startEtcd(tb testing.TB, certs string) *Etcd {
	tb.Helper()
	bin := Binary()
	if bin == "" {
		msg := "no etcd: install Debian's etcd-server (or set HERMES_ETCD)"
		if os.Getenv("CI") != "" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	cp, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	pp, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	client := fmt.Sprintf("http://127.0.0.1:%d", cp)
	peer := fmt.Sprintf("http://127.0.0.1:%d", pp)
	e := &Etcd{Endpoint: fmt.Sprintf("127.0.0.1:%d", cp), out: &lockedBuffer{}}
	args := []string{"--name", "t", "--data-dir", filepath.Join(dir, "data"),
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "t=" + peer, "--log-level", "error"}
	var tc *tls.Config
	if certs != "" {
		client = fmt.Sprintf("https://127.0.0.1:%d", cp)
		e.Endpoint = client
		args = append(args, "--cert-file", filepath.Join(certs, "etcd.pem"), "--key-file", filepath.Join(certs, "etcd-key.pem"),
			"--client-cert-auth", "--trusted-ca-file", filepath.Join(certs, "ca.pem"))
		cert, err := tls.LoadX509KeyPair(filepath.Join(certs, "etcd.pem"), filepath.Join(certs, "etcd-key.pem"))
		if err != nil {
			tb.Fatal(err)
		}
		ca, err := os.ReadFile(filepath.Join(certs, "ca.pem"))
		if err != nil {
			tb.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		tc = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool}
	}
	args = append(args, "--listen-client-urls", client, "--advertise-client-urls", client)
	e.bin, e.args, e.tc = bin, args, tc
	tb.Cleanup(func() { e.Stop() })
	e.Start(tb)
	return e
}

// Start starts etcd again after Stop, on the same port and data directory,
// and waits until it answers.
func (e *Etcd) Start(tb testing.TB) {
	tb.Helper()
	e.mu.Lock()
	e.cmd = exec.Command(e.bin, e.args...)
	e.cmd.Stdout, e.cmd.Stderr = e.out, e.out
	err := e.cmd.Start()
	e.mu.Unlock()
	if err != nil {
		tb.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop(), TLS: e.tc})
	if err != nil {
		tb.Fatal(err)
	}
	defer cli.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "ping")
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("etcd did not start: %v\n%s", err, e.out.Bytes())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop kills etcd (SIGKILL: no goodbye to its clients) and waits for it
// to exit; its data directory stays for Start.
func (e *Etcd) Stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cmd == nil || e.cmd.Process == nil {
		return
	}
	_ = e.cmd.Process.Signal(syscall.SIGCONT) // a paused etcd dies too
	_ = e.cmd.Process.Kill()
	_ = e.cmd.Wait()
	e.cmd = nil
}

// Pause freezes etcd (SIGSTOP): its connections stay open and nothing
// answers, as when its host stalls.
func (e *Etcd) Pause(tb testing.TB) { e.signal(tb, syscall.SIGSTOP) }

// Resume lets a paused etcd go on (SIGCONT).
func (e *Etcd) Resume(tb testing.TB) { e.signal(tb, syscall.SIGCONT) }

func (e *Etcd) signal(tb testing.TB, sig syscall.Signal) {
	tb.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cmd == nil {
		tb.Fatal("etcd is not running")
	}
	if err := e.cmd.Process.Signal(sig); err != nil {
		tb.Fatal(err)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

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
	return append([]byte(nil), l.b.Bytes()...)
}
