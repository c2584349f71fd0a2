// Package pgtest starts a real PostgreSQL server for tests: initdb into a
// temporary directory, pg_ctl start on a free loopback port with its unix
// socket in that directory, and stop and removal afterwards. The binaries
// are found in $HERMES_PG_BIN (default /usr/lib/postgresql/15/bin, where
// Debian's postgresql-15 puts them). When $HERMES_PG_URL names a server,
// no server is started and databases are created on that one instead.
// Running as root, the server runs as the user postgres (initdb refuses
// root).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultBin is where Debian's postgresql-15 installs the server binaries.
const DefaultBin = "/usr/lib/postgresql/15/bin"

// Server is a PostgreSQL server for tests.
type Server struct {
	// URL connects to the server's maintenance database as a superuser.
	URL string
	dir string
	bin string
	as  string // run server commands as this user ("" for the current one)
	n   atomic.Int64
}

// ErrUnavailable is returned by Launch when neither $HERMES_PG_URL nor the
// server binaries are there.
var ErrUnavailable = errors.New("no PostgreSQL: set HERMES_PG_URL, or install postgresql-15 (binaries in HERMES_PG_BIN, default " + DefaultBin + ")")

// Launch starts a server (or uses $HERMES_PG_URL's). Stop it when done.
func Launch() (*Server, error) {
	if u := os.Getenv("HERMES_PG_URL"); u != "" {
		return &Server{URL: u}, nil
	}
	return launch("", "")
}

// LaunchTLS starts a server of its own that also takes TLS connections,
// with cert and key (PEM files) as its certificate. URL still connects
// without TLS.
func LaunchTLS(cert, key string) (*Server, error) {
	if cert == "" || key == "" {
		return nil, errors.New("LaunchTLS needs a certificate and a key")
	}
	return launch(cert, key)
}

func launch(cert, key string) (*Server, error) {
	bin := os.Getenv("HERMES_PG_BIN")
	if bin == "" {
		bin = DefaultBin
	}
	if _, err := os.Stat(filepath.Join(bin, "pg_ctl")); err != nil {
		return nil, ErrUnavailable
	}
	s := &Server{bin: bin}
	var err error
	if s.dir, err = os.MkdirTemp("", "hermes-pg-"); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(s.dir)
			return nil, fmt.Errorf("running as root, PostgreSQL needs the user postgres: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		// Only the directory made above changes owner.
		if err := os.Chown(s.dir, uid, gid); err != nil {
			os.RemoveAll(s.dir)
			return nil, err
		}
		s.as = "postgres"
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(s.dir)
		return nil, err
	}
	data := filepath.Join(s.dir, "data")
	if out, err := s.run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"); err != nil {
		os.RemoveAll(s.dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s -c fsync=on -c max_connections=200", port, s.dir)
	if cert != "" {
		// The server reads its key only when the key is its own and
		// private: copies in the data directory, owned as the server.
		for _, f := range []struct{ from, to string }{{cert, "server.crt"}, {key, "server.key"}} {
			b, err := os.ReadFile(f.from)
			if err != nil {
				os.RemoveAll(s.dir)
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(data, f.to), b, 0o600); err != nil {
				os.RemoveAll(s.dir)
				return nil, err
			}
			if s.as != "" {
				u, _ := user.Lookup(s.as)
				uid, _ := strconv.Atoi(u.Uid)
				gid, _ := strconv.Atoi(u.Gid)
				_ = os.Chown(filepath.Join(data, f.to), uid, gid)
			}
		}
		opts += " -c ssl=on"
	}
	if out, err := s.run("pg_ctl", "start", "-w", "-t", "60", "-D", data, "-l", filepath.Join(s.dir, "log"), "-o", opts); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		os.RemoveAll(s.dir)
		return nil, fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return s, nil
}

func (s *Server) run(name string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, name)
	var cmd *exec.Cmd
	if s.as != "" {
		cmd = exec.Command("runuser", append([]string{"-u", s.as, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = s.dir
	return cmd.CombinedOutput()
}

// LogFile is the server's log (its stderr), or "" for a server of
// $HERMES_PG_URL's.
func (s *Server) LogFile() string {
	if s.dir == "" {
		return ""
	}
	return filepath.Join(s.dir, "log")
}

// Stop stops a server Launch started and removes its files.
func (s *Server) Stop() {
	if s.dir == "" {
		return
	}
	s.run("pg_ctl", "stop", "-m", "immediate", "-w", "-D", filepath.Join(s.dir, "data"))
	os.RemoveAll(s.dir)
}

// Restart stops the server at once (as a crash would) and starts it
// again on the same port; connections to it break.
func (s *Server) Restart() error {
	if s.dir == "" {
		return errors.New("the server of HERMES_PG_URL is not ours to restart")
	}
	if out, err := s.run("pg_ctl", "restart", "-m", "immediate", "-w", "-t", "60", "-D", filepath.Join(s.dir, "data"), "-l", filepath.Join(s.dir, "log")); err != nil {
		return fmt.Errorf("pg_ctl restart: %w\n%s", err, out)
	}
	return nil
}

// Database creates a new, empty database and returns its URL.
func (s *Server) Database(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("hermes_test_%d_%d", os.Getpid(), s.n.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		tb.Fatalf("connect to the test server: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("create database: %v", err)
	}
	if s.dir == "" {
		// A server of the user's ($HERMES_PG_URL): leave it as it was.
		tb.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if conn, err := pgx.Connect(ctx, s.URL); err == nil {
				conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
				conn.Close(ctx)
			}
		})
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// Start launches a server for one test and stops it in cleanup. Without
// PostgreSQL the test is skipped, unless CI is set, when it fails.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := Launch()
	if errors.Is(err, ErrUnavailable) {
		Unavailable(tb)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Unavailable skips tb (fails it under CI) for want of a server.
func Unavailable(tb testing.TB) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatal(ErrUnavailable)
	}
	tb.Skip(ErrUnavailable)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
