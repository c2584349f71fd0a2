package judge

import (
	"path"
	"regexp"
	"strings"
)

// systemDirs are the directories whose recursive removal (or recursive
// chmod/chown) is never approved, besides / and the home directory.
var systemDirs = []string{
	"/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/root",
	"/sbin", "/srv", "/sys", "/usr", "/var", "/mnt", "/media", "/snap",
	"/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/usr/local", "/usr/share", "/var/lib",
	// macOS
	"/System", "/Library", "/Applications", "/Users", "/private", "/Volumes",
}

// abs cleans p (resolving it against cwd when relative and cwd is known) and
// writes the user's real home as homeMark. A relative path with an unknown
// working directory stays relative.
func (w *walker) abs(p, cwd string) string {
	if p == "" {
		return ""
	}
	if !strings.HasPrefix(p, "/") && cwd != "" {
		p = cwd + "/" + p
	}
	p = path.Clean(p)
	if w.home != "" && (p == w.home || strings.HasPrefix(p, w.home+"/")) {
		p = homeMark + p[len(w.home):]
	}
	for range 8 { // through the links the command made
		resolved := false
		for l, t := range w.links {
			if p == l || strings.HasPrefix(p, l+"/") {
				p, resolved = path.Clean(t+p[len(l):]), true
				break
			}
		}
		if !resolved {
			break
		}
	}
	return p
}

// link records a symbolic link the command makes.
func (w *walker) link(link, target string) {
	if link == target || !path.IsAbs(target) || link == "." || link == ".." || strings.HasPrefix(link, "../") {
		return
	}
	if w.links == nil {
		w.links = map[string]string{}
	}
	w.links[link] = target
}

// absPat is abs for a glob pattern.
func (w *walker) absPat(f field, cwd string) string { return w.abs(f.pat, cwd) }

func isProtected(p string) bool {
	if p == "/" || p == homeMark {
		return true
	}
	for _, d := range systemDirs {
		if p == d {
			return true
		}
	}
	return false
}

// patProtected tells whether a glob pattern matches a protected directory,
// or every entry of one (/usr/*, ~/*).
func patProtected(pat string) bool {
	if !path.IsAbs(pat) {
		return false
	}
	if matches(pat, "/") || matches(pat, homeMark) {
		return true
	}
	for _, d := range systemDirs {
		if matches(pat, d) {
			return true
		}
	}
	if base := path.Base(pat); base != "" && strings.Trim(base, "*") == "" && pat != "/" {
		return patProtected(path.Dir(pat))
	}
	return false
}

func matches(pat, name string) bool {
	ok, err := path.Match(pat, name)
	return err == nil && ok
}

// protected tells whether f names /, a system directory or the home
// directory (or, as a glob, matches one).
func (w *walker) protected(f field, cwd string) bool {
	if !f.known {
		return false
	}
	if f.glob {
		return patProtected(w.absPat(f, cwd))
	}
	return isProtected(w.abs(f.lit, cwd))
}

// inAgentHome tells whether f is the agent's home or inside it.
func (w *walker) inAgentHome(f field, cwd string) bool {
	if !f.known {
		return false
	}
	for _, ah := range w.agentHome {
		if f.glob {
			pat := w.absPat(f, cwd)
			if matches(pat, ah) || strings.HasPrefix(staticPrefix(pat), ah+"/") {
				return true
			}
			continue
		}
		if p := w.abs(f.lit, cwd); p == ah || strings.HasPrefix(p, ah+"/") {
			return true
		}
	}
	return false
}

// staticPrefix is the part of a pattern before its first metacharacter.
func staticPrefix(pat string) string {
	if i := strings.IndexAny(pat, "*?[\\"); i >= 0 {
		return pat[:i]
	}
	return pat
}

var diskDevice = regexp.MustCompile(`^/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme[0-9]|mmcblk[0-9]|disk[0-9]|rdisk[0-9]|md[0-9]|dm-[0-9]|mapper/|disk/)`)

func isDiskDevice(p string) bool { return diskDevice.MatchString(p) }

var startupFiles = map[string]bool{".bashrc": true, ".bash_profile": true, ".bash_login": true, ".bash_logout": true, ".profile": true,
	".zshrc": true, ".zprofile": true, ".zshenv": true, ".zlogin": true, ".zlogout": true, ".kshrc": true, ".cshrc": true, ".tcshrc": true,
	".mkshrc": true, ".inputrc": true, "config.fish": true}

var historyFiles = map[string]bool{".bash_history": true, ".zsh_history": true, ".history": true, "fish_history": true, ".sh_history": true, ".zhistory": true}

var accountFiles = map[string]bool{"/etc/passwd": true, "/etc/shadow": true, "/etc/sudoers": true, "/etc/group": true, "/etc/gshadow": true,
	"/etc/master.passwd": true}

func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

func hasComponent(p, name string) bool {
	for _, c := range strings.Split(p, "/") {
		if c == name {
			return true
		}
	}
	return false
}

// writeRule is the rule for writing to (or deleting) the clean path p, or nil.
func (w *walker) writeRule(p string) *Rule {
	base := path.Base(p)
	switch {
	case isDiskDevice(p):
		return ruleDisk
	case accountFiles[p]:
		return ruleAccounts
	case p == "/proc/sysrq-trigger":
		return ruleShutdown
	case under(p, "/dev/tcp") || under(p, "/dev/udp"):
		return ruleReverseShell
	}
	for _, ah := range w.agentHome {
		if under(p, ah) {
			return ruleAgentHomeWrite
		}
	}
	switch {
	case hasComponent(p, ".ssh"):
		return ruleSSH
	case startupFiles[base] || under(p, homeMark+"/.config/fish") || p == "/etc/profile" || under(p, "/etc/profile.d") ||
		p == "/etc/bash.bashrc" || p == "/etc/environment" || p == "/etc/zsh/zshrc" || p == "/etc/ld.so.preload":
		return ruleStartup
	case historyFiles[base]:
		return ruleHistory
	case p == "/etc/crontab" || strings.HasPrefix(p, "/etc/cron.") || under(p, "/etc/cron.d") || under(p, "/var/spool/cron") ||
		under(p, "/var/spool/cron/crontabs") || under(p, "/etc/anacrontab"):
		return ruleCrontab
	case under(p, "/etc"):
		return ruleEtc
	case under(p, "/boot"):
		return ruleBoot
	case under(p, "/proc") || under(p, "/sys"):
		return ruleKernel
	case p == "/" || under(p, "/bin") || under(p, "/sbin") || under(p, "/usr") || under(p, "/lib") || under(p, "/lib64") ||
		under(p, "/lib32") || under(p, "/System") || under(p, "/Library"):
		return ruleSystemWrite
	}
	return nil
}

// writeSamples stand for whole areas when the written path is a pattern or
// only partly known.
var writeSamples = []string{
	homeMark + "/.ssh", homeMark + "/.ssh/authorized_keys", homeMark + "/.bashrc", homeMark + "/.profile",
	homeMark + "/.bash_profile", homeMark + "/.zshrc", homeMark + "/.bash_history", homeMark + "/.hermes",
	homeMark + "/.hermes/config.yaml", homeMark + "/.hermes/events.db", "/etc/x", "/etc/cron.d/x", "/etc/crontab",
	"/var/spool/cron/crontabs/root", "/boot/x", "/usr/bin/x", "/usr/local/bin/x", "/bin/x", "/sbin/x", "/lib/x",
	"/proc/sys/x", "/sys/x", "/dev/tcp/x/1",
}

// writePath judges a write to (or removal of) the path in f.
func (w *walker) writePath(f field, sc *scope, what string) {
	for _, r := range w.writeRules(f, sc.cwd) {
		w.add(r, what)
	}
}

func (w *walker) writeRules(f field, cwd string) []*Rule {
	if f.known && !f.glob {
		p := w.abs(f.lit, cwd)
		if p == "" || p == "/dev/null" || p == "/dev/stdout" || p == "/dev/stderr" || p == "/dev/tty" || under(p, "/dev/fd") || under(p, "/dev/shm") {
			return nil
		}
		if r := w.writeRule(p); r != nil {
			return []*Rule{r}
		}
		return nil
	}
	// A pattern: what it may match, and the area its known prefix lies in.
	pat := w.absPat(f, cwd)
	var rules []*Rule
	addRule := func(r *Rule) {
		if r == nil {
			return
		}
		if r.Hard && !f.known { // only a path known to be hard-line is
			r = ruleEtc
			if !strings.HasPrefix(pat, "/etc/") {
				r = ruleDevice
			}
		}
		for _, x := range rules {
			if x == r {
				return
			}
		}
		rules = append(rules, r)
	}
	samples := writeSamples
	if f.known {
		samples = append(append([]string{}, writeSamples...), "/dev/sda", "/dev/nvme0n1", "/etc/passwd", "/etc/shadow", "/etc/sudoers")
	}
	for _, s := range samples {
		if matches(pat, s) {
			addRule(w.writeRule(s))
		}
	}
	if dir := staticPrefix(pat); path.IsAbs(dir) {
		if i := strings.LastIndexByte(dir, '/'); i >= 0 {
			d := dir[:i]
			if d == "" {
				d = "/"
			}
			if under(d, "/dev") && d != "/dev/fd" && d != "/dev/shm" {
				addRule(ruleDevice)
			} else if d != "/" {
				addRule(w.writeRule(d + "/x"))
			}
		}
	}
	return rules
}

// readPath judges reading the path in f (a private key, the password hashes,
// a network socket).
func (w *walker) readPath(f field, sc *scope, what string) {
	if !f.known || f.glob {
		return
	}
	if r := readRule(w.abs(f.lit, sc.cwd)); r != nil {
		w.add(r, what)
	}
}

func readRule(p string) *Rule {
	base := path.Base(p)
	switch {
	case under(p, "/dev/tcp") || under(p, "/dev/udp"):
		return ruleReverseShell
	case p == "/etc/shadow" || p == "/etc/gshadow" || p == "/etc/master.passwd":
		return ruleSecretRead
	case hasComponent(path.Dir(p), ".ssh") && strings.HasPrefix(base, "id_") && !strings.HasSuffix(base, ".pub"):
		return ruleSecretRead
	}
	return nil
}
