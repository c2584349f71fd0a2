package irctest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
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
	// TLSPort and CertPool: see StartTLS.
	TLSPort  int
	CertPool *x509.CertPool
	cmd      *exec.Cmd
	out      *bytes.Buffer
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
	return start(t, global, false)
}

// StartTLS is Start with a TLS port too (TLSPort), whose certificate —
// self-signed, for 127.0.0.1 — is in CertPool.
func StartTLS(t testing.TB) *Server {
	t.Helper()
	return start(t, "", true)
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func start(t testing.TB, global string, withTLS bool) *Server {
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
	port := freePort(t)
	s := &Server{t: t, bin: bin, Port: port}
	sslSection := ""
	if withTLS {
		s.TLSPort = freePort(t)
		s.CertPool = writeCert(t, dir)
		sslSection = fmt.Sprintf("[SSL]\n\tCertFile = %s\n\tKeyFile = %s\n\tPorts = %d\n",
			filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), s.TLSPort)
	}
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
%s`, port, filepath.Join(dir, "ngircd.pid"), os.Getuid(), os.Getgid(), global, sslSection)
	s.conf = filepath.Join(dir, "ngircd.conf")
	if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
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
		if err == nil && s.TLSPort != 0 {
			c.Close()
			c, err = net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.TLSPort), time.Second)
		}
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

// writeCert writes a fresh self-signed certificate for 127.0.0.1 and its
// key to dir (cert.pem, key.pem) and returns a pool that trusts it.
func writeCert(t testing.TB, dir string) *x509.CertPool {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "irc.hermes.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cert)
	return pool
}
