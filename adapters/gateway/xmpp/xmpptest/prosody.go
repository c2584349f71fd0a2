// Package xmpptest runs a real XMPP server for the XMPP adapter's tests:
// Prosody (Debian's prosody package), started on a free loopback port in a
// temporary directory with its own configuration, a certificate made for
// the test, a MUC component, and accounts registered with prosodyctl. Its
// Client is a real XMPP client connection (go-xmpp) that plays a person.
package xmpptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Domain is the server's virtual host; MUC is its rooms' service, whose
// new rooms show occupants' real JIDs to everyone; AnonMUC's new rooms show
// them only to moderators (semi-anonymous).
const (
	Domain  = "localhost"
	MUC     = "conference.localhost"
	AnonMUC = "anon.localhost"
)

// Binary finds prosody and prosodyctl; ok is false when Prosody is not
// installed.
func Binary() (prosody, prosodyctl string, ok bool) {
	p, err1 := exec.LookPath("prosody")
	c, err2 := exec.LookPath("prosodyctl")
	return p, c, err1 == nil && err2 == nil
}

// Require skips the test when Prosody is missing, and fails it when CI is
// set (CI installs it).
func Require(tb testing.TB) {
	tb.Helper()
	if _, _, ok := Binary(); ok {
		return
	}
	if os.Getenv("CI") != "" {
		tb.Fatal("prosody is not installed (apt-get install prosody); .ci/run installs it")
	}
	tb.Skip("prosody is not installed (apt-get install prosody): skipping the XMPP tests against a real server")
}

// Server is a running Prosody.
type Server struct {
	// Addr is the client-to-server listener (127.0.0.1:port).
	Addr string
	// Roots trusts the server's certificate.
	Roots *x509.CertPool
	Dir   string

	tb   testing.TB
	conf string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start writes a configuration into a temporary directory and starts
// Prosody in the foreground; it returns once the server accepts
// connections and stops it when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	Require(tb)
	dir := tb.TempDir()
	s := &Server{Dir: dir, tb: tb, conf: filepath.Join(dir, "prosody.cfg.lua"), Addr: "127.0.0.1:" + strconv.Itoa(freePort(tb))}
	certs := filepath.Join(dir, "certs")
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		tb.Fatal(err)
	}
	s.Roots = writeCert(tb, certs)
	_, port, _ := net.SplitHostPort(s.Addr)
	// Prosody (and prosodyctl) switch to prosody_user when started as
	// root, and refuse to run as root unless told to: the test's server
	// runs as whoever runs the test.
	asRoot := ""
	if u, err := user.Current(); err == nil {
		asRoot = fmt.Sprintf("prosody_user = %q\n", u.Username)
		if g, err := user.LookupGroupId(u.Gid); err == nil {
			asRoot += fmt.Sprintf("prosody_group = %q\n", g.Name)
		}
	}
	if os.Geteuid() == 0 {
		asRoot += "run_as_root = true\n"
	}
	conf := fmt.Sprintf(`-- written by xmpptest for one test
%[1]sdata_path = %[2]q
pidfile = %[3]q
log = { debug = %[4]q } -- debug: AuthFailures reads it
certificates = %[5]q
daemonize = false
interfaces = { "127.0.0.1" }
c2s_ports = { %[6]s }
c2s_direct_tls_ports = { }
legacy_ssl_ports = { }
s2s_ports = { }
component_ports = { }
http_ports = { }
https_ports = { }
modules_enabled = { "roster"; "saslauth"; "tls"; "disco"; "ping"; "posix"; "offline" }
modules_disabled = { "s2s" }
authentication = "internal_hashed"
-- Prosody leaves Nagle's algorithm on by default, which holds each small
-- stanza for the peer's delayed ACK (~40 ms a round trip on loopback).
network_settings = { nagle = false }
storage = "internal"
c2s_require_encryption = true
-- Tests send bursts; no throttling on loopback.
limits = { c2s = { rate = "100mb/s" } }
VirtualHost %[7]q
Component %[8]q "muc"
  muc_room_default_history_length = 20
  muc_room_default_public_jids = true
  restrict_room_creation = false
  -- A room made by its first joiner opens at once (no configuration step).
  muc_room_locking = false
Component %[9]q "muc"
  muc_room_default_public_jids = false
  restrict_room_creation = false
  muc_room_locking = false
`, asRoot, filepath.Join(dir, "data"), filepath.Join(dir, "prosody.pid"), filepath.Join(dir, "prosody.log"),
		certs, port, Domain, MUC, AnonMUC)
	if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
		tb.Fatal(err)
	}
	s.start()
	tb.Cleanup(s.Stop)
	return s
}

// Register creates an account user@localhost.
func (s *Server) Register(user, password string) string {
	s.tb.Helper()
	_, ctl, _ := Binary()
	out, err := exec.Command(ctl, "--config", s.conf, "register", user, Domain, password).CombinedOutput()
	if err != nil {
		s.tb.Fatalf("prosodyctl register %s: %v: %s", user, err, out)
	}
	return user + "@" + Domain
}

// TLS is a client TLS configuration that trusts the server.
func (s *Server) TLS() *tls.Config {
	return &tls.Config{RootCAs: s.Roots, ServerName: Domain, MinVersion: tls.VersionTLS12}
}

func (s *Server) start() {
	s.tb.Helper()
	bin, _, _ := Binary()
	cmd := exec.Command(bin, "--config", s.conf, "-F")
	cmd.Dir = s.Dir
	out, err := os.OpenFile(filepath.Join(s.Dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.tb.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		s.tb.Fatalf("start prosody: %v", err)
	}
	out.Close()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			s.tb.Fatalf("prosody exited at start:\n%s\n%s", s.readLog("stdout.log"), s.readLog("prosody.log"))
		default:
		}
		if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	s.tb.Fatalf("prosody did not listen on %s in 20 s:\n%s", s.Addr, s.readLog("prosody.log"))
}

// Stop stops the server (SIGTERM, then SIGKILL) and waits until its port
// is free.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(20 * time.Millisecond)
	}
}

// Restart stops the server and starts it again on the same port, with the
// same accounts and configuration (rooms are not persistent: they go).
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	s.start()
}

// Up starts a stopped server again on the same port.
func (s *Server) Up() {
	s.tb.Helper()
	s.start()
}

// AuthFailures counts the logins the server refused (SASL failures in its
// debug log).
func (s *Server) AuthFailures() int {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "prosody.log"))
	return strings.Count(string(b), "Sending[c2s_unauthed]: <failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'")
}

// Log returns the end of Prosody's log (for failure messages).
func (s *Server) Log() string { return s.readLog("prosody.log") }

func (s *Server) readLog(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, name))
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// writeCert makes a self-signed certificate for Domain and MUC, in the
// file names Prosody looks for, and returns a pool that trusts it.
func writeCert(tb testing.TB, dir string) *x509.CertPool {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: Domain},
		DNSNames: []string{Domain, MUC, AnonMUC}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	for _, host := range []string{Domain, MUC, AnonMUC} {
		if err := os.WriteFile(filepath.Join(dir, host+".crt"), certPEM, 0o600); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, host+".key"), keyPEM, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return pool
}

// trimResource drops a JID's resource.
func trimResource(jid string) string {
	b, _, _ := strings.Cut(jid, "/")
	return b
}
