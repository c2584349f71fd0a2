package main

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections/sessions"
)

const (
	sidA = "aaaaaaaa-1111-4000-8000-000000000001"
	sidB = "bbbbbbbb-2222-4000-8000-000000000002"
	sidC = "cccccccc-3333-4000-8000-000000000003"
)

// threeSessions makes a home with three sessions and reads it once, so
// that its projections exist.
func threeSessions(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, sidA, 2)
	seed(t, s, sidB, 3)
	seed(t, s, sidC, 2)
	s.Close()
	if ids := listedIDs(t, home); len(ids) != 3 {
		t.Fatalf("listed %v", ids)
	}
	return home
}

func listedIDs(t *testing.T, home string, flags ...string) []string {
	t.Helper()
	var list []sessions.Summary
	out := mustRun(t, home, append(flags, "sessions", "list", "--json")...)
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("sessions list --json: %v\n%s", err, out)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	return ids
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return 0
}

// flipInFile flips one bit of the last byte of text wherever the events.db
// file holds it (free pages may keep old copies): damage below SQL, as a
// disk would do it.
func flipInFile(t *testing.T, path, text string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for off := 0; ; {
		i := bytes.Index(b[off:], []byte(text))
		if i < 0 {
			break
		}
		b[off+i+len(text)-1] ^= 0x01
		off += i + len(text)
		n++
	}
	if n == 0 {
		t.Fatalf("%q is not in %s", text, path)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedEventCLI damages one event of one session (a changed session
// id through SQL, or a flipped byte in the file) and drives the binary:
// every read command keeps working for the other sessions, the damaged one
// is named with its stream and position, verify fails, repair moves the
// session aside and the log verifies clean.
func TestDamagedEventCLI(t *testing.T) {
	for _, how := range []string{"sql", "flip"} {
		t.Run(how, func(t *testing.T) {
			home := threeSessions(t)
			db := filepath.Join(home, "events.db")
			switch how {
			case "sql":
				raw, err := sql.Open("sqlite", db)
				if err != nil {
					t.Fatal(err)
				}
				// The case the checksum of the payload alone let through: a
				// phantom session in place of a real event.
				if _, err := raw.Exec(`UPDATE events SET session_id = 'bbbbbbbb-2222-4000-8000-00000000000f' WHERE stream = ? AND revision = 4`, "session-"+sidB); err != nil {
					t.Fatal(err)
				}
				raw.Close()
			case "flip":
				flipInFile(t, db, "hello 1 from "+sidB)
			}
			// The projections were built before the damage: a rebuild
			// meets it. It failed, and every read command after it.
			if out, errOut, err := run(t, home, "projections", "rebuild"); err != nil || !strings.Contains(errOut, "damaged event in the log") {
				t.Fatalf("rebuild with a damaged event: %v\n%s\n%s", err, out, errOut)
			}
			if ids := listedIDs(t, home); len(ids) != 2 || strings.Contains(strings.Join(ids, " "), sidB) {
				t.Fatalf("with a damaged session, listed %v", ids)
			}
			_, errOut, err := run(t, home, "sessions", "show", sidB[:8])
			if err == nil || !strings.Contains(errOut, "session "+sidB+" is damaged") || !strings.Contains(errOut, "session-"+sidB+"@4 (position") {
				t.Fatalf("show of the damaged session: %v\n%s", err, errOut)
			}
			_, errOut, err = run(t, home, "sessions", "events", sidB)
			if err == nil || !strings.Contains(errOut, "session-"+sidB+"@4 (position") {
				t.Fatalf("events of the damaged session: %v\n%s", err, errOut)
			}
			if out := mustRun(t, home, "sessions", "show", sidC[:8]); !strings.Contains(out, "hello 1 from "+sidC) {
				t.Fatalf("show of a healthy session:\n%s", out)
			}
			if out := mustRun(t, home, "projections", "status"); !strings.Contains(out, "left out, damaged: session-"+sidB+"@4") {
				t.Fatalf("status does not name the damage:\n%s", out)
			}

			out, _, err := run(t, home, "store", "verify")
			if exitCode(err) != damageExit || !strings.Contains(out, "checksum    session-"+sidB+"@4 (position") {
				t.Fatalf("verify: %v\n%s", err, out)
			}
			out, _, err = run(t, home, "store", "verify", "--json")
			var rep embedded.Report
			if exitCode(err) != damageExit || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Problems) == 0 || rep.Problems[0].Stream != "session-"+sidB {
				t.Fatalf("verify --json: %v\n%s", err, out)
			}
			if _, errOut, err := run(t, home, "store", "repair"); err == nil || !strings.Contains(errOut, "--quarantine") {
				t.Fatalf("repair without --quarantine: %v %s", err, errOut)
			}
			out = mustRun(t, home, "store", "repair", "--quarantine")
			if !strings.Contains(out, "moved session-"+sidB+" to quarantine: 8 rows") || !strings.Contains(out, "verifies clean") {
				t.Fatalf("repair:\n%s", out)
			}
			if out := mustRun(t, home, "store", "verify"); !strings.Contains(out, "ok: no damage") || !strings.Contains(out, "moved to quarantine") {
				t.Fatalf("verify after the repair:\n%s", out)
			}
			if ids := listedIDs(t, home); len(ids) != 2 {
				t.Fatalf("after the repair, listed %v", ids)
			}
			if _, errOut, err := run(t, home, "sessions", "events", sidB); err == nil || !strings.Contains(errOut, "deleted") {
				t.Fatalf("events of the moved session: %v %s", err, errOut)
			}
		})
	}
}

// TestReplacedEventsDBCLI replaces events.db by another home's, then
// deletes it. Hermes used to carry on with the new log (and then with an
// empty one) as if it were the home's: every command now refuses, naming
// the loss, until the replacement is accepted on purpose; then status and
// the session list show the new log's truth.
func TestReplacedEventsDBCLI(t *testing.T) {
	home := threeSessions(t)
	other := t.TempDir()
	s, err := embedded.Open(filepath.Join(other, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, "dddddddd-4444-4000-8000-000000000004", 1)
	s.Close()
	b, err := os.ReadFile(filepath.Join(other, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(home, "events.db"), b, 0o600)
	for _, args := range [][]string{{"projections", "status"}, {"sessions", "list"}} {
		if out, errOut, err := run(t, home, args...); err == nil || !strings.Contains(errOut, "holds another log") || !strings.Contains(errOut, "hermes store verify") {
			t.Fatalf("%v after events.db was replaced: %v\n%s\n%s", args, err, out, errOut)
		}
	}
	out := mustRun(t, home, "store", "accept")
	if !strings.Contains(out, "giving up") || !strings.Contains(out, "accepted log") {
		t.Fatalf("accept:\n%s", out)
	}
	if out := mustRun(t, home, "projections", "status"); !hasLine(out, "sessions 4 4 0") {
		t.Fatalf("status after the replacement was accepted:\n%s", out)
	}
	if ids := listedIDs(t, home); len(ids) != 1 || ids[0] != "dddddddd-4444-4000-8000-000000000004" {
		t.Fatalf("after the replacement was accepted, listed %v", ids)
	}
	os.Remove(filepath.Join(home, "events.db"))
	if _, errOut, err := run(t, home, "sessions", "list"); err == nil || !strings.Contains(errOut, "is missing") {
		t.Fatalf("list after events.db was deleted: %v\n%s", err, errOut)
	}
	mustRun(t, home, "store", "accept")
	if out := mustRun(t, home, "sessions", "list"); !strings.Contains(out, "no sessions yet") {
		t.Fatalf("after events.db was deleted and that accepted:\n%s", out)
	}
	if out := mustRun(t, home, "projections", "status"); !hasLine(out, "sessions 0 0 0") {
		t.Fatalf("status after events.db was deleted and that accepted:\n%s", out)
	}
}

// hasLine reports whether out has a line whose fields are those of want.
func hasLine(out, want string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(l), " ") == want {
			return true
		}
	}
	return false
}

// snapshot hashes every file under dir, with its mode.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		sum := sha256.Sum256(b)
		out[p] = info.Mode().String() + " " + string(sum[:])
		return nil
	})
	return out
}

// TestReadOnlyHome runs the read commands in a home they may not write.
// As root (the test machines) permissions do not stop writes, so the home
// is made read-only with chmod and the commands run as the user nobody;
// and --read-only is checked to write nothing even where root could.
func TestReadOnlyHome(t *testing.T) {
	home := threeSessions(t)
	// One session arrives after the projections were last caught up: the
	// read commands must still show it.
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, "eeeeeeee-5555-4000-8000-000000000005", 1)
	s.Close()
	reads := [][]string{{"sessions", "show", sidA[:8]}, {"projections", "status"}, {"store", "verify"}, {"costs"}, {"sessions", "events", sidC}}

	before := snapshot(t, home)
	if ids := listedIDs(t, home, "--read-only"); len(ids) != 4 {
		t.Fatalf("--read-only listed %v", ids)
	}
	for _, args := range reads {
		mustRun(t, home, append([]string{"--read-only"}, args...)...)
	}
	if _, errOut, err := run(t, home, "--read-only", "sessions", "delete", sidA); err == nil || !strings.Contains(errOut, "read-only") {
		t.Fatalf("delete in a read-only home: %v %s", err, errOut)
	}
	// In a home it could write, SQLite may add the -wal and -shm files any
	// reader of a WAL database uses; the databases stay as they were.
	after := snapshot(t, home)
	for k := range after {
		if strings.HasSuffix(k, "-wal") || strings.HasSuffix(k, "-shm") {
			delete(after, k)
		}
	}
	if !equalMaps(before, after) {
		t.Fatalf("--read-only changed the home:\nbefore %v\nafter  %v", keys(before), keys(after))
	}
	for _, f := range []string{"events.db-wal", "projections.db-wal"} {
		if info, err := os.Stat(filepath.Join(home, f)); err == nil && info.Size() > 0 {
			t.Fatalf("--read-only wrote %d bytes to %s", info.Size(), f)
		}
	}
	for _, f := range []string{"events.db-wal", "events.db-shm", "projections.db-wal", "projections.db-shm"} {
		os.Remove(filepath.Join(home, f))
	}

	if os.Getuid() != 0 {
		t.Skip("the part as another user needs root")
	}
	// Let nobody reach the binary and the home, and write nothing there.
	// (Only the test's own directories: the one above them is the
	// system's temporary directory, whose mode — 1777 — must not change.)
	for _, d := range []string{filepath.Dir(bin), filepath.Dir(filepath.Dir(home)), filepath.Dir(home)} {
		if d == filepath.Clean(os.TempDir()) || d == "/" || d == "/tmp" {
			continue
		}
		os.Chmod(d, 0o755)
	}
	filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if d.IsDir() {
			return os.Chmod(p, 0o555)
		}
		return os.Chmod(p, 0o444)
	})
	t.Cleanup(func() {
		filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error { return os.Chmod(p, 0o755) })
	})
	before = snapshot(t, home)
	// nobody's own temporary directory, for the private copy of the
	// projections.
	tmp := t.TempDir()
	os.Chmod(tmp, 0o777)
	asNobody := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"--home", home}, args...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		cmd.Env = append(os.Environ(), "HOME="+tmp, "TMPDIR="+tmp)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := asNobody("sessions", "delete", sidA); err == nil {
		t.Fatalf("nobody could write the home: %s", out)
	}
	out, err := asNobody("sessions", "list", "--json")
	var list []sessions.Summary
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list) != 4 {
		t.Fatalf("sessions list in a read-only home: %v\n%s", err, out)
	}
	for _, args := range reads {
		if out, err := asNobody(args...); err != nil {
			t.Fatalf("hermes %v in a read-only home: %v\n%s", args, err, out)
		}
	}
	if after := snapshot(t, home); !equalMaps(before, after) {
		t.Fatalf("read commands changed a read-only home")
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, filepath.Base(k))
	}
	return out
}
