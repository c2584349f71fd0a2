// Package emailtest starts the real mail servers that the email adapter's
// tests and benchmarks talk to, each on free loopback ports in a
// directory of its own, stopped when the test ends:
//
//   - Dovecot (Debian's dovecot-imapd and dovecot-lmtpd): the bot's IMAP
//     mailbox, and LMTP, through which a test delivers mail into a mailbox
//     exactly as an MTA such as Postfix does on a real mail host;
//   - maildev (npm): an SMTP server that keeps what the bot sends, read
//     back raw through its HTTP API, standing in for the SMTP relay the
//     bot would submit to. (Dovecot's own submission service only relays
//     to another SMTP server, which cannot be its LMTP; Postfix would need
//     a master daemon, queue and users of its own per test.)
//
// Neither is a fake: both are the servers' own code, configured here.
package emailtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-smtp"
)

// Environment variables the peers are found by.
const (
	// EnvDovecot names the dovecot binary (default: dovecot on PATH or
	// /usr/sbin/dovecot).
	EnvDovecot = "HERMES_DOVECOT"
	// EnvMaildev names the installed maildev npm module (default:
	// $HERMES_NODE_MODULES/maildev).
	EnvMaildev = "HERMES_MAILDEV"
)

// missing skips the test, or fails it under CI, where every peer must run.
func missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatalf(format, args...)
	}
	tb.Skipf(format, args...)
}

// DovecotOptions configure a Dovecot.
type DovecotOptions struct {
	// Users maps addresses to passwords.
	Users map[string]string
	// NoIdle hides IDLE from the capabilities, as servers without it do.
	NoIdle bool
	// TLS offers STARTTLS with a certificate made for 127.0.0.1 (see
	// Dovecot.RootCAs) and refuses logins before it.
	TLS bool
	// AnyUser, when set, lets every address log in with this password
	// (and have a mailbox), instead of Users: fresh users on demand.
	AnyUser string
}

// Dovecot is a running Dovecot.
type Dovecot struct {
	Dir      string
	IMAPPort int
	LMTPPort int
	// RootCAs trusts the server's certificate (with DovecotOptions.TLS).
	RootCAs *x509.CertPool

	tb   testing.TB
	conf string
	cmd  *exec.Cmd
}

// StartDovecot runs Dovecot (in the foreground, as its own process group)
// with a passwd-file of o.Users and maildirs under a fresh directory.
func StartDovecot(tb testing.TB, o DovecotOptions) *Dovecot {
	tb.Helper()
	bin := os.Getenv(EnvDovecot)
	if bin == "" {
		if p, err := exec.LookPath("dovecot"); err == nil {
			bin = p
		} else if _, err := os.Stat("/usr/sbin/dovecot"); err == nil {
			bin = "/usr/sbin/dovecot"
		}
	}
	if bin == "" {
		missing(tb, "dovecot is not installed: apt-get install dovecot-imapd dovecot-lmtpd (or set %s)", EnvDovecot)
	}
	if os.Geteuid() != 0 {
		missing(tb, "the Dovecot of the tests runs as root (its mail processes as the mail user): run the tests as root")
	}
	mailUser, err := user.Lookup("mail")
	if err != nil {
		missing(tb, "no mail user on this system to run Dovecot's mail processes as: %v", err)
	}
	// Dovecot's mail and auth processes are not root: they must reach
	// the directory, so it is one of ours, searchable (not listable), and
	// removed at the end.
	dir, err := os.MkdirTemp("", "hermes-dovecot-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		tb.Fatal(err)
	}
	d := &Dovecot{Dir: dir, IMAPPort: freePort(tb), LMTPPort: freePort(tb), tb: tb, conf: filepath.Join(dir, "dovecot.conf")}
	var users strings.Builder
	names := make([]string, 0, len(o.Users))
	for u := range o.Users {
		names = append(names, u)
	}
	sort.Strings(names)
	for _, u := range names {
		fmt.Fprintf(&users, "%s:{PLAIN}%s\n", u, o.Users[u])
	}
	if err := os.WriteFile(filepath.Join(dir, "users"), []byte(users.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	mailDir := filepath.Join(dir, "mail")
	if err := os.Mkdir(mailDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	uid, _ := strconv.Atoi(mailUser.Uid)
	gid, _ := strconv.Atoi(mailUser.Gid)
	if err := os.Chown(mailDir, uid, gid); err != nil {
		tb.Fatal(err)
	}
	passdb := fmt.Sprintf("driver = passwd-file\n  args = scheme=PLAIN username_format=%%u %s/users", dir)
	if o.AnyUser != "" {
		passdb = "driver = static\n  args = password=" + o.AnyUser
	}
	ssl := "ssl = no\ndisable_plaintext_auth = no\n"
	if o.TLS {
		d.RootCAs = writeCert(tb, dir)
		ssl = fmt.Sprintf("ssl = required\nssl_cert = <%[1]s/cert.pem\nssl_key = <%[1]s/key.pem\ndisable_plaintext_auth = yes\n", dir)
	}
	caps := ""
	if o.NoIdle {
		caps = "imap_capability = IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE LITERAL+ AUTH=PLAIN\n"
	}
	conf := fmt.Sprintf(`base_dir = %[1]s/run
state_dir = %[1]s/state
log_path = %[1]s/dovecot.log
protocols = imap lmtp
listen = 127.0.0.1
%[8]sauth_mechanisms = plain login
auth_failure_delay = 0
mail_location = maildir:%[1]s/mail/%%u
first_valid_uid = 1
default_internal_user = dovecot
default_login_user = dovenull
hostname = mail.example.test
postmaster_address = postmaster@example.test
passdb {
  %[7]s
}
userdb {
  driver = static
  args = uid=%[4]d gid=%[5]d home=%[1]s/mail/%%u
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = %[2]d
  }
  inet_listener imaps {
    port = 0
  }
}
service lmtp {
  inet_listener lmtp {
    address = 127.0.0.1
    port = %[3]d
  }
}
%[6]s`, dir, d.IMAPPort, d.LMTPPort, uid, gid, caps, passdb, ssl)
	if err := os.WriteFile(d.conf, []byte(conf), 0o644); err != nil {
		tb.Fatal(err)
	}
	d.Start(bin)
	tb.Cleanup(d.Stop)
	return d
}

// Start starts the server (again, after Stop) and waits for its greeting.
func (d *Dovecot) Start(bin ...string) {
	d.tb.Helper()
	b := "dovecot"
	if len(bin) > 0 {
		b = bin[0]
	} else if d.cmd != nil {
		b = d.cmd.Path
	}
	out := &lockedBuffer{}
	cmd := exec.Command(b, "-F", "-c", d.conf)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		d.tb.Fatalf("start dovecot: %v", err)
	}
	d.cmd = cmd
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", d.IMAPAddr(), time.Second)
		if err == nil {
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "* OK") {
				return
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(d.Dir, "dovecot.log"))
			d.tb.Fatalf("dovecot did not start in 60 s: %s\n%s", out.String(), log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the server and every process it started.
func (d *Dovecot) Stop() {
	if d.cmd == nil || d.cmd.Process == nil || d.cmd.ProcessState != nil {
		return
	}
	pid := d.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-done
	}
	// Its children may outlive the master by a moment.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// IMAPAddr is the IMAP listener's address.
func (d *Dovecot) IMAPAddr() string { return "127.0.0.1:" + strconv.Itoa(d.IMAPPort) }

// Log is the server's log so far.
func (d *Dovecot) Log() string {
	b, _ := os.ReadFile(filepath.Join(d.Dir, "dovecot.log"))
	return string(b)
}

// Deliver delivers raw into the mailboxes of to over LMTP, as an MTA
// does, with from as the envelope sender ("" for a bounce's null sender).
func (d *Dovecot) Deliver(tb testing.TB, from string, to []string, raw []byte) {
	tb.Helper()
	if err := d.Send(context.Background(), from, to, raw); err != nil {
		tb.Fatal(err)
	}
}

// Send is Deliver returning its error.
func (d *Dovecot) Send(ctx context.Context, from string, to []string, raw []byte) error {
	dl := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := dl.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(d.LMTPPort))
	if err != nil {
		return fmt.Errorf("lmtp: %w", err)
	}
	c := smtp.NewClientLMTP(conn)
	defer c.Close()
	if err := c.Hello("mx.example.test"); err != nil {
		return fmt.Errorf("lmtp hello: %w", err)
	}
	if err := c.Mail(from, nil); err != nil {
		return fmt.Errorf("lmtp mail from: %w", err)
	}
	for _, r := range to {
		if err := c.Rcpt(r, nil); err != nil {
			return fmt.Errorf("lmtp rcpt %s: %w", r, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("lmtp data: %w", err)
	}
	if _, err := w.Write(raw); err != nil {
		return fmt.Errorf("lmtp data: %w", err)
	}
	if _, err := w.CloseWithLMTPResponse(); err != nil {
		return fmt.Errorf("lmtp data: %w", err)
	}
	_ = c.Quit()
	return nil
}

// Maildev is a running maildev.
type Maildev struct {
	SMTPPort int
	APIURL   string

	tb     testing.TB
	args   []string
	cmd    *exec.Cmd
	exited chan struct{}
	http   *http.Client
}

// StartMaildev runs maildev's SMTP server (AUTH required: user, pass)
// and its HTTP API on free loopback ports, keeping mail under a temporary
// directory.
func StartMaildev(tb testing.TB, user, pass string) *Maildev {
	return startMaildev(tb, user, pass)
}

// StartOpenMaildev runs maildev without SMTP authentication (it takes
// mail from anyone), for bots of many addresses.
func StartOpenMaildev(tb testing.TB) *Maildev {
	return startMaildev(tb, "", "")
}

func startMaildev(tb testing.TB, user, pass string) *Maildev {
	tb.Helper()
	mod := os.Getenv(EnvMaildev)
	if mod == "" && os.Getenv("HERMES_NODE_MODULES") != "" {
		mod = filepath.Join(os.Getenv("HERMES_NODE_MODULES"), "maildev")
	}
	if mod == "" {
		missing(tb, "%s (or HERMES_NODE_MODULES) is not set: install maildev with `npm ci --prefix .ci/node` and set HERMES_NODE_MODULES=$PWD/.ci/node/node_modules", EnvMaildev)
	}
	bin := filepath.Join(mod, "dist", "bin", "maildev.js")
	if _, err := os.Stat(bin); err != nil {
		missing(tb, "maildev is not installed at %s: %v", mod, err)
	}
	m := &Maildev{SMTPPort: freePort(tb), http: &http.Client{Timeout: 10 * time.Second}, tb: tb}
	web := freePort(tb)
	m.APIURL = fmt.Sprintf("http://127.0.0.1:%d/api", web)
	m.args = []string{bin, "--smtp", strconv.Itoa(m.SMTPPort), "--ip", "127.0.0.1", "--web", strconv.Itoa(web), "--web-ip", "127.0.0.1",
		"--mail-directory", tb.TempDir()}
	if user != "" {
		m.args = append(m.args, "--incoming-user", user, "--incoming-pass", pass)
	}
	m.start()
	tb.Cleanup(m.stop)
	return m
}

func (m *Maildev) start() {
	m.tb.Helper()
	out := &lockedBuffer{}
	cmd := exec.Command("node", m.args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		m.tb.Fatalf("start maildev: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	m.cmd, m.exited = cmd, exited
	// Node starts slowly on a loaded machine: a generous deadline.
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := m.http.Get(m.APIURL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			m.tb.Fatalf("maildev exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			m.tb.Fatalf("maildev did not start in 90 s: %s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (m *Maildev) stop() {
	if m.cmd == nil {
		return
	}
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	<-m.exited
	m.cmd = nil
}

// lockedBuffer is a process's output, written and read concurrently.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Restart stops maildev, dropping every connection, and starts it again
// on the same ports (the mail it kept is read back from its directory).
func (m *Maildev) Restart() {
	m.stop()
	m.start()
}

// Mail is one message maildev received.
type Mail struct {
	ID     string
	To     []string // envelope recipients
	Raw    []byte
	Header mail.Header
	// Text is the text/plain body, decoded.
	Text string
	// HTML is the text/html body, decoded, if any; TextHeader is the
	// text/plain part's header.
	HTML       string
	TextHeader mail.InlineHeader
}

// Messages returns what maildev has received, oldest first, read raw
// and parsed.
func (m *Maildev) Messages(ctx context.Context) ([]Mail, error) {
	var list []struct {
		ID       string `json:"id"`
		Time     string `json:"time"`
		Envelope struct {
			To []struct {
				Address string `json:"address"`
			} `json:"to"`
		} `json:"envelope"`
	}
	if err := m.get(ctx, "/email", &list); err != nil {
		return nil, err
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Time < list[j].Time })
	out := make([]Mail, 0, len(list))
	for _, e := range list {
		var raw []byte
		if err := m.get(ctx, "/email/"+e.ID+"/source", &raw); err != nil {
			return nil, err
		}
		ml := Mail{ID: e.ID, Raw: raw}
		for _, t := range e.Envelope.To {
			ml.To = append(ml.To, t.Address)
		}
		mr, err := mail.CreateReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("maildev %s: %w", e.ID, err)
		}
		ml.Header = mr.Header
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			if ih, ok := p.Header.(*mail.InlineHeader); ok {
				switch ct, _, _ := ih.ContentType(); {
				case ct == "text/plain" && ml.Text == "":
					b, _ := io.ReadAll(p.Body)
					ml.Text, ml.TextHeader = string(b), *ih
				case ct == "text/html" && ml.HTML == "":
					b, _ := io.ReadAll(p.Body)
					ml.HTML = string(b)
				}
			}
		}
		out = append(out, ml)
	}
	return out, nil
}

// Wait waits until maildev holds n messages and returns them.
func (m *Maildev) Wait(tb testing.TB, n int) []Mail {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var got []Mail
	for time.Now().Before(deadline) {
		var err error
		if got, err = m.Messages(context.Background()); err != nil {
			tb.Fatal(err)
		}
		if len(got) >= n {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("waited 60 s for %d mails in maildev, got %d", n, len(got))
	return nil
}

// Count is how many messages maildev holds.
func (m *Maildev) Count(ctx context.Context) (int, error) {
	var list []json.RawMessage
	if err := m.get(ctx, "/email", &list); err != nil {
		return 0, err
	}
	return len(list), nil
}

func (m *Maildev) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.APIURL+path, nil)
	if err != nil {
		return err
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("maildev %s: HTTP %d: %s", path, resp.StatusCode, body)
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = body
		return nil
	}
	return json.Unmarshal(body, out)
}

// Compose builds a raw message: headers in order ("Name: value"), then
// the body, with CRLF line ends.
func Compose(headers []string, body string) []byte {
	var b strings.Builder
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	b.WriteString(strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n"))
	return []byte(b.String())
}

// writeCert makes a self-signed certificate for 127.0.0.1 and localhost
// in dir (cert.pem, key.pem) and returns a pool that trusts it.
func writeCert(tb testing.TB, dir string) *x509.CertPool {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mail.example.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// freePort finds a free loopback port below the kernel's ephemeral range
// (ip_local_port_range starts at 32768 by default). A port from that range
// (what listening on :0 gives) can be taken by any outgoing connection on
// the machine between a server's stop and its Restart on the same port,
// which made maildev fail with EADDRINUSE under a loaded parallel test run.
func freePort(tb testing.TB) int {
	for range 200 {
		p := 20000 + mrand.IntN(12000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		return p
	}
	tb.Fatal("no free loopback port in 20000-31999")
	return 0
}
