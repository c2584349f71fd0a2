package hooks

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// AllowlistFile is the name, in $HERMES_HOME, of the file that remembers
// which hook commands their person allowed; the Python agent keeps the
// same file in the same shape, so a shared home asks once for both.
const AllowlistFile = "shell-hooks-allowlist.json"

// Consent decides whether a configured shell hook may run, as the Python
// agent does: an (event, command) pair allowed before (in the allowlist
// file) runs; a new one is asked about once on the terminal, and the
// answer yes is remembered; without a terminal a new one is refused unless
// Accept is set (--accept-hooks, HERMES_ACCEPT_HOOKS=1 or
// hooks_auto_accept: true), which allows and remembers it. A refusal is
// remembered for the process only: the next run asks again.
type Consent struct {
	// Path is the allowlist file.
	Path string
	// Accept allows every new hook without asking.
	Accept bool
	// In and Out are the terminal to ask on; nil In: there is none.
	In  io.Reader
	Out io.Writer

	mu     sync.Mutex
	denied map[[2]string]bool
	reader *bufio.Reader
}

// Approval is one allowed (event, command) pair in the allowlist file.
type Approval struct {
	Event      string `json:"event"`
	Command    string `json:"command"`
	ApprovedAt string `json:"approved_at"`
	// ScriptMTime is the script's modification time when allowed: `hermes
	// hooks doctor` says when it changed since.
	ScriptMTime *string `json:"script_mtime_at_approval"`
}

type allowlist struct {
	Approvals []Approval `json:"approvals"`
}

// Approvals reads the allowlist file (none when it is missing or
// unreadable).
func (c *Consent) Approvals() []Approval {
	data, err := os.ReadFile(c.Path)
	if err != nil {
		return nil
	}
	var l allowlist
	if json.Unmarshal(data, &l) != nil {
		return nil
	}
	return l.Approvals
}

// Approved returns the approval of (event, command), if any.
func (c *Consent) Approved(event, command string) (Approval, bool) {
	for _, a := range c.Approvals() {
		if a.Event == event && a.Command == command {
			return a, true
		}
	}
	return Approval{}, false
}

// Allow reports whether the hook may run, asking its person when it is
// new and there is a terminal.
func (c *Consent) Allow(event, command string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.Approved(event, command); ok {
		return true
	}
	key := [2]string{event, command}
	if c.denied[key] {
		return false
	}
	if !c.Accept && !c.ask(event, command) {
		if c.denied == nil {
			c.denied = map[[2]string]bool{}
		}
		c.denied[key] = true
		return false
	}
	if err := c.update(func(l *allowlist) {
		l.Approvals = append(drop(l.Approvals, func(a Approval) bool { return a.Event == event && a.Command == command }),
			Approval{Event: event, Command: command, ApprovedAt: time.Now().UTC().Format(time.RFC3339), ScriptMTime: ScriptMTime(command)})
	}); err != nil && c.Out != nil {
		fmt.Fprintf(c.Out, "hermes: could not remember the hook's approval (%v); it runs this time and is asked about again next time\n", err)
	}
	return true
}

// ask puts the question on the terminal.
func (c *Consent) ask(event, command string) bool {
	if c.In == nil || c.Out == nil {
		return false
	}
	if c.reader == nil {
		c.reader = bufio.NewReader(c.In)
	}
	fmt.Fprintf(c.Out, "\nHermes is about to register a shell hook that runs a command on your behalf.\n\n    Event:   %s\n    Command: %s\n\n"+
		"It runs with your user's credentials. Only allow commands you trust.\nAllow this hook to run? [y/N]: ", event, command)
	line, _ := c.reader.ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// Revoke removes every approval of command and returns how many there
// were.
func (c *Consent) Revoke(command string) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	err := c.update(func(l *allowlist) {
		before := len(l.Approvals)
		l.Approvals = drop(l.Approvals, func(a Approval) bool { return a.Command == command })
		n = before - len(l.Approvals)
	})
	return n, err
}

// update changes the allowlist file under a lock beside it, so two
// processes allowing hooks at once keep both answers.
func (c *Consent) update(change func(*allowlist)) error {
	if err := os.MkdirAll(filepath.Dir(c.Path), 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(c.Path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := lockFile(lock); err != nil {
		return err
	}
	l := allowlist{Approvals: c.Approvals()}
	change(&l)
	if l.Approvals == nil {
		l.Approvals = []Approval{}
	}
	data, _ := json.MarshalIndent(l, "", "  ")
	tmp, err := os.CreateTemp(filepath.Dir(c.Path), filepath.Base(c.Path)+".*.tmp")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), c.Path)
}

func drop(as []Approval, gone func(Approval) bool) []Approval {
	out := as[:0:0]
	for _, a := range as {
		if !gone(a) {
			out = append(out, a)
		}
	}
	return out
}

// scriptExts are what a command's script is recognised by.
var scriptExts = []string{".sh", ".bash", ".zsh", ".fish", ".py", ".pyw", ".rb", ".pl", ".lua", ".js", ".mjs", ".cjs", ".ts"}

// ScriptPath is the script a hook command runs: its first word with a
// script's extension, else the first with a slash, else the first.
func ScriptPath(command string) string {
	ws, err := words(command)
	if err != nil || len(ws) == 0 {
		return command
	}
	pick := ws[0]
	found := false
	for _, w := range ws {
		for _, e := range scriptExts {
			if strings.HasSuffix(strings.ToLower(w), e) {
				pick, found = w, true
				break
			}
		}
		if found {
			break
		}
	}
	if !found {
		for _, w := range ws {
			if strings.Contains(w, "/") || strings.HasPrefix(w, "~") {
				pick = w
				break
			}
		}
	}
	if strings.HasPrefix(pick, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			pick = filepath.Join(home, pick[2:])
		}
	}
	return pick
}

// ScriptMTime is the modification time of a command's script (nil when
// it is missing).
func ScriptMTime(command string) *string {
	fi, err := os.Stat(ScriptPath(command))
	if err != nil {
		return nil
	}
	s := fi.ModTime().UTC().Format(time.RFC3339Nano)
	return &s
}

// ScriptProblem says what keeps a command's script from running as
// configured ("" when nothing): missing, or not executable when the
// command is the script itself (an interpreter only needs to read it).
func ScriptProblem(command string) string {
	ws, err := words(command)
	if err != nil {
		return err.Error()
	}
	path := ScriptPath(command)
	bare := len(ws) > 0 && (ws[0] == path || strings.HasPrefix(ws[0], "~/"))
	if !strings.Contains(path, "/") {
		if _, err := exec.LookPath(path); err != nil {
			return path + " is not on PATH"
		}
		return ""
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return path + " does not exist"
	case fi.IsDir():
		return path + " is a directory"
	case bare && fi.Mode()&0o111 == 0:
		return path + " is not executable (chmod +x it)"
	}
	return ""
}
