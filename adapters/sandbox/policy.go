// Package sandbox is the wall around every process a tool starts: a
// long-lived init per sandbox (this binary, re-executed) holds a user,
// mount, pid, ipc and uts namespace (and a network namespace when the
// network is off or filtered), and runs each command in a fresh pid
// namespace of its own under Landlock filesystem rules, a seccomp filter
// against the escape system calls, no capabilities, no_new_privs,
// resource ceilings (a cgroup where one can be made, rlimits) and an
// environment the caller chose.
//
// What a command may touch is decided here, by the kernel: the writable
// roots and a private /tmp are writable, the rest of the system is
// read-only, and the hidden paths ($HERMES_HOME, credential stores, the
// sockets of other daemons) are empty wherever they are mounted. Nothing
// here judges a command line; the judge (package terminal) asks the
// person about what the wall allows.
//
// The init is started once per sandbox (tens of milliseconds: it is this
// program) and then starts commands on request over a socket pair, which
// costs about one fork and exec: see BenchmarkSandboxRun.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Mode is how much a sandboxed command may write.
type Mode string

// The modes.
const (
	// ReadOnly: only the private /tmp is writable.
	ReadOnly Mode = "read-only"
	// WorkspaceWrite: the writable roots and the private /tmp (default).
	WorkspaceWrite Mode = "workspace-write"
	// FullAccess runs no sandbox at all; only explicit configuration
	// chooses it.
	FullAccess Mode = "full-access"
)

// ParseMode reads a mode from configuration ("" is WorkspaceWrite).
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "":
		return WorkspaceWrite, nil
	case ReadOnly, WorkspaceWrite, FullAccess:
		return Mode(s), nil
	}
	return "", fmt.Errorf("sandbox mode %q: use read-only, workspace-write or full-access", s)
}

// NetMode is what a sandboxed command may reach.
type NetMode string

// The network modes.
const (
	// NetOn shares this machine's network.
	NetOn NetMode = "on"
	// NetOff gives the sandbox a network of its own with only loopback.
	NetOff NetMode = "off"
	// NetAllow gives it a loopback-only network and an HTTP(S) proxy
	// (HTTP_PROXY, HTTPS_PROXY) that reaches only the allowed hosts.
	NetAllow NetMode = "allow"
)

// ParseNet reads the network setting: "on", "off", or a list of allowed
// host names (which means NetAllow).
func ParseNet(mode string, allow []string) (NetMode, error) {
	switch {
	case len(allow) > 0 && (mode == "" || mode == string(NetAllow)):
		return NetAllow, nil
	case len(allow) > 0:
		return "", fmt.Errorf("sandbox.network is %q but sandbox.network_allow lists hosts: set network to allow (or leave it empty)", mode)
	case mode == "" || mode == string(NetOn):
		return NetOn, nil
	case mode == string(NetOff):
		return NetOff, nil
	case mode == string(NetAllow):
		return "", errors.New("sandbox.network is allow but sandbox.network_allow is empty: name the hosts, or use off")
	}
	return "", fmt.Errorf("sandbox.network %q: use on, off or allow (with network_allow)", mode)
}

// Limits are ceilings on what the commands of one sandbox may use
// together (a cgroup) or each (rlimits, where no cgroup can be made).
type Limits struct {
	// Procs bounds the processes and threads (0: 1024).
	Procs int
	// Memory bounds memory in bytes (0: half of this machine's, at most
	// 8 GiB).
	Memory int64
}

// Policy is what a sandbox allows.
type Policy struct {
	Mode Mode
	// Writable are the workspace roots (absolute); ignored in ReadOnly.
	Writable []string
	// Hidden are paths made invisible (an empty directory, an empty
	// file) wherever they are mounted: $HERMES_HOME, credential stores.
	Hidden []string
	// Visible are paths under Hidden the configuration exposes again
	// (read-only unless also Writable).
	Visible []string
	// Protected stay read-only even inside a writable root (shell rc
	// files, ~/.ssh, ~/.config, a repository's hooks and config).
	Protected []string
	// Home is the user's home: when a writable root contains it, only its
	// existing entries whose names do not start with a dot stay writable,
	// and nothing new can be created at its top level.
	Home    string
	Network NetMode
	// Allow are the host names NetAllow's proxy reaches ("example.com",
	// or "*.example.com" for its subdomains too).
	Allow  []string
	Limits Limits
	// Tmp is the host directory mounted at /tmp ("": one is made and
	// removed with the sandbox).
	Tmp string
}

// CredentialStores are the places under a home where tools keep keys and
// tokens; Defaults hides them.
var CredentialStores = []string{
	".ssh", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".config/gh", ".config/hub",
	".netrc", ".git-credentials", ".gnupg", ".password-store", ".npmrc", ".pypirc", ".vault-token",
	".cargo/credentials", ".cargo/credentials.toml", ".terraform.d/credentials.tfrc.json",
	".local/share/keyrings", ".config/google-chrome", ".config/chromium", ".mozilla", ".config/rclone",
	".hermes",
}

// daemonSockets are other programs' control sockets: a process that can
// connect to them can ask their daemon (often root) to act for it.
// /run is hidden whole (the resolver's configuration carried over): it is
// where daemons keep the sockets through which a process asks them to act.
var daemonSockets = []string{
	"/run", "/var/run", "/var/lib/docker", "/var/lib/containerd", "/etc/shadow", "/etc/gshadow",
}

// startupFiles are read and run by a shell or a tool at a later start:
// writing one is persistence.
var startupFiles = []string{
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc", ".zshenv",
	".zprofile", ".zlogin", ".inputrc", ".gitconfig", ".config", ".ssh", ".local", ".pam_environment", ".xprofile",
	".xinitrc", ".vimrc", ".npmrc", ".pypirc",
}

// Defaults is the policy for a home directory and an agent home: the
// agent home and the credential stores hidden, the shell's start-up
// files protected, and the user's run-time directory (its daemons'
// sockets) hidden too.
func Defaults(home, agentHome string) Policy {
	p := Policy{Mode: WorkspaceWrite, Network: NetOn, Home: home}
	if agentHome != "" {
		p.Hidden = append(p.Hidden, agentHome)
	}
	if home != "" {
		for _, c := range CredentialStores {
			p.Hidden = append(p.Hidden, filepath.Join(home, c))
		}
		for _, f := range startupFiles {
			p.Protected = append(p.Protected, filepath.Join(home, f))
		}
	}
	p.Hidden = append(p.Hidden, daemonSockets...)
	return p
}

// ErrTooBroad is returned for a writable root that would make the system
// writable.
var ErrTooBroad = errors.New("too broad to be writable")

// resolved is the policy with every path absolute, its symbolic links
// resolved and its duplicates dropped; paths that do not exist are kept
// in their cleaned form (they are skipped when mounting).
func (p Policy) resolved() (Policy, error) {
	var err error
	if p.Mode == "" {
		p.Mode = WorkspaceWrite
	}
	if p.Network == "" {
		p.Network = NetOn
	}
	if p.Mode == ReadOnly {
		p.Writable = nil
	}
	if p.Writable, err = canon(p.Writable); err != nil {
		return p, err
	}
	if p.Home != "" {
		if h, err := canonOne(p.Home); err == nil {
			p.Home = h
		}
	}
	for _, w := range p.Writable {
		if err := checkWritable(w, p.Home); err != nil {
			return p, err
		}
	}
	if p.Hidden, err = canon(p.Hidden); err != nil {
		return p, err
	}
	if p.Visible, err = canon(p.Visible); err != nil {
		return p, err
	}
	if p.Protected, err = canon(p.Protected); err != nil {
		return p, err
	}
	// A writable root inside a hidden path (a working directory in
	// $HERMES_HOME) stays hidden, unless Visible shows it again.
	for _, w := range p.Writable {
		if slices.Contains(p.Hidden, w) && !slices.Contains(p.Visible, w) {
			return p, fmt.Errorf("writable root %s is hidden by the sandbox (it holds Hermes' own state or credentials)", w)
		}
	}
	p.Writable = slices.DeleteFunc(p.Writable, func(w string) bool {
		return slices.ContainsFunc(p.Hidden, func(h string) bool { return within(w, h) }) &&
			!slices.ContainsFunc(p.Visible, func(v string) bool { return within(w, v) })
	})
	return p, nil
}

func canon(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		c, err := canonOne(p)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

func canonOne(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path in the sandbox policy")
	}
	if strings.HasPrefix(p, "~/") {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		p = filepath.Join(h, p[2:])
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("sandbox path %q is not absolute", p)
	}
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r, nil
	}
	// The longest existing prefix resolved, the rest kept.
	dir, rest := filepath.Dir(p), filepath.Base(p)
	for dir != "/" {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest), nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = filepath.Dir(dir)
	}
	return p, nil
}

// CheckWritable tells whether path may be a writable root of a sandbox
// for a user whose home is home: not the root, a system directory or a
// place inside one.
func CheckWritable(path, home string) error {
	c, err := canonOne(path)
	if err != nil {
		return err
	}
	if home != "" {
		if h, err := canonOne(home); err == nil {
			home = h
		}
	}
	return checkWritable(c, home)
}

func checkWritable(w, home string) error {
	if w != home && (w == "/" || isSystemDir(w) || underSystemDir(w)) {
		return fmt.Errorf("writable root %s: %w (the root, a system directory or a place inside one); work in a project directory", w, ErrTooBroad)
	}
	return nil
}

// underSystemDir: places beneath these hold what the system runs (cron
// tables, units, programs on PATH, libraries), never a workspace.
func underSystemDir(p string) bool {
	for _, d := range []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/var/spool",
		"/var/lib", "/proc", "/sys", "/dev", "/run", "/var/run"} {
		if within(p, d) {
			return true
		}
	}
	return false
}

func isSystemDir(p string) bool {
	switch p {
	case "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin", "/sys", "/usr", "/var", "/home", "/root", "/opt", "/srv", "/mnt", "/media":
		return true
	}
	return false
}

// within reports whether p is base or beneath it.
func within(p, base string) bool {
	if base == "/" {
		return true
	}
	return p == base || strings.HasPrefix(p, base+"/")
}

// FileGuard is the policy as a check for tools that touch files from
// outside the sandbox (Hermes' own read_file, write_file, patch): what a
// sandboxed command could not read or change, they may not either. The
// returned function says why path (a real path) is refused for reading
// (write false) or writing, or nil.
func (p Policy) FileGuard() func(path string, write bool) error {
	hidden, _ := canon(p.Hidden)
	visible, _ := canon(p.Visible)
	protected, _ := canon(p.Protected)
	writable, _ := canon(p.Writable)
	home := p.Home
	if home != "" {
		if h, err := canonOne(home); err == nil {
			home = h
		}
	}
	return func(path string, write bool) error {
		under := func(list []string) bool {
			return slices.ContainsFunc(list, func(x string) bool { return within(path, x) })
		}
		if under(hidden) && !under(visible) {
			return fmt.Errorf("%s is hidden from the agent (Hermes' own state or a credential store); ask the person for what you need from it", path)
		}
		if !write {
			return nil
		}
		if under(protected) {
			return fmt.Errorf("%s is read-only to the agent (a shell start-up file or configuration that runs later outside the sandbox); ask the person to change it", path)
		}
		parts := strings.Split(path, "/")
		for i, c := range parts {
			switch c {
			case ".git":
				if git := strings.Join(parts[:i+1], "/"); !slices.Contains(writable, git) {
					return fmt.Errorf("%s is in a repository's .git, read-only to the agent (hooks and config run code later, outside the sandbox); use git in the terminal, or ask the person", path)
				}
			case ".hermes":
				return fmt.Errorf("%s is in a project's .hermes, read-only to the agent (its skills and settings reach later sessions)", path)
			}
		}
		if home != "" && path != home && within(path, home) {
			top, _, _ := strings.Cut(strings.TrimPrefix(path, home+"/"), "/")
			if strings.HasPrefix(top, ".") || top == "bin" {
				return fmt.Errorf("%s is among the home's dot files or ~/bin, read-only to the agent (they run later in the person's own shell)", path)
			}
		}
		return nil
	}
}
