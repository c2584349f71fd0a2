// Package files holds the file tools — read_file, write_file, patch and
// search_files — confined to allowed roots (by default the session's
// working directory and $HERMES_HOME). Paths are resolved through symlinks
// before the check, so neither ".." nor a link can lead outside.
//
// $HERMES_HOME is a root the tools may read but not change: Hermes trusts
// what is in it (config.yaml with its command allow-list, .env, the event
// log and projections, the search index, memories/, skills/,
// context_limits.json, SOUL.md), so a model that could write there could
// grant itself approvals, wipe the log or inject text into the next
// system prompt. Only its scratch directories (cache/) are writable;
// memory changes go through the memory tool and skills through
// skill_manage, which screen and record them. Its secrets (.env,
// config.yaml, auth.json) are not readable at all.
package files

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/actors/tool"
)

// Roots are the directories file tools may touch.
type Roots struct {
	// Extra roots beside the session's working directory.
	Extra []string
	// NoWorkingDir leaves the working directory out.
	NoWorkingDir bool
	// Home is $HERMES_HOME: readable (but for its secrets), writable only
	// under Scratch, wherever it is (inside the working directory too).
	Home string
	// Scratch are subdirectories of Home the tools may write (cache).
	Scratch []string
	// Sandbox, when set, refuses what the terminal's sandbox keeps from
	// commands (hidden places; .git, start-up files and the home's dot
	// files for writing): the tools run outside it and must not be the
	// way around it (sandbox.Policy.FileGuard).
	Sandbox func(path string, write bool) error
}

// access is what a tool does with a path.
type access int

const (
	reading access = 1 << iota
	writing
)

// secretFiles in $HERMES_HOME hold keys: tools read none of them, under
// any spelling, link or hard link.
var secretFiles = []string{".env", "config.yaml", "config.yml", "auth.json"}

func secretName(name string) bool {
	for _, f := range secretFiles {
		if strings.EqualFold(name, f) {
			return true
		}
	}
	return len(name) > 5 && strings.EqualFold(name[:5], ".env.")
}

func realOrClean(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return filepath.Clean(p)
}

func (r Roots) list(env *tool.Env) []string {
	var out []string
	if !r.NoWorkingDir && env.WorkingDir != "" {
		out = append(out, env.WorkingDir)
	}
	out = append(out, r.Extra...)
	if r.Home != "" {
		out = append(out, r.Home)
	}
	for i, p := range out {
		out[i] = realOrClean(p)
	}
	return out
}

// resolve turns a path argument into a real absolute path inside a root
// that may be accessed as asked.
func (r Roots) resolve(env *tool.Env, p string, how access) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("path is empty")
	}
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[2:])
		}
	}
	if !filepath.IsAbs(p) {
		if env.WorkingDir == "" {
			return "", fmt.Errorf("relative path %q but the session has no working directory", p)
		}
		p = filepath.Join(env.WorkingDir, p)
	}
	p = filepath.Clean(p)
	real, err := realPath(p)
	if err != nil {
		return "", err
	}
	roots := r.list(env)
	for _, root := range roots {
		if real == root || strings.HasPrefix(real, root+string(filepath.Separator)) {
			return real, r.guard(p, real, how)
		}
	}
	if real != p {
		return "", fmt.Errorf("path %s resolves (through a symlink) to %s, outside the allowed roots %s", p, real, strings.Join(roots, ", "))
	}
	return "", fmt.Errorf("path %s is outside the allowed roots %s", p, strings.Join(roots, ", "))
}

// inHome returns where real lies under $HERMES_HOME. The home is found by
// identity (device and inode of each existing ancestor), not by spelling,
// so a bind mount, a case-insensitive file system or a second name of the
// directory leads to it too.
func (r Roots) inHome(real string) (rel string, ok bool) {
	if r.Home == "" {
		return "", false
	}
	home := realOrClean(r.Home)
	if real == home || strings.HasPrefix(real, home+string(filepath.Separator)) {
		rel, _ := filepath.Rel(home, real)
		return rel, true
	}
	hi, err := os.Stat(home)
	if err != nil {
		return "", false
	}
	for cur := real; ; {
		if fi, err := os.Stat(cur); err == nil && os.SameFile(fi, hi) {
			rel, _ := filepath.Rel(cur, real)
			return rel, true
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", false
		}
		cur = parent
	}
}

// secretInfos are the secret files of the home as they are now.
func (r Roots) secretInfos() []fs.FileInfo {
	if r.Home == "" {
		return nil
	}
	home := realOrClean(r.Home)
	entries, err := os.ReadDir(home)
	if err != nil {
		return nil
	}
	var out []fs.FileInfo
	for _, e := range entries {
		if secretName(e.Name()) {
			if fi, err := os.Stat(filepath.Join(home, e.Name())); err == nil {
				out = append(out, fi)
			}
		}
	}
	return out
}

// isSecret reports whether fi is one of the home's secret files under
// another name (a hard link, a bind mount).
func isSecret(fi fs.FileInfo, secrets []fs.FileInfo) bool {
	for _, s := range secrets {
		if os.SameFile(fi, s) {
			return true
		}
	}
	return false
}

// guard refuses what the tools may not do to $HERMES_HOME. Writes replace
// a file through a temporary file and a rename, so a hard link to a
// protected file is cut, never written through; reads compare identities,
// so a hard link to a secret is refused.
func (r Roots) guard(asked, real string, how access) error {
	if r.Sandbox != nil {
		if err := r.Sandbox(real, how&writing != 0); err != nil {
			return err
		}
	}
	if rel, ok := r.inHome(real); ok {
		top, _, _ := strings.Cut(rel, string(filepath.Separator))
		if how&writing != 0 && !r.scratch(top) {
			where := "nothing there is writable"
			if len(r.Scratch) > 0 {
				where = "only " + strings.Join(r.Scratch, "/, ") + "/ is writable there"
			}
			return fmt.Errorf("%s is in $HERMES_HOME (%s), which file tools may not change: Hermes trusts its config, keys, event log, memory and skills. "+
				"Use the memory tool for memory and skill_manage for skills; %s", asked, realOrClean(r.Home), where)
		}
		if how&reading != 0 && top == rel && secretName(top) {
			return fmt.Errorf("%s holds Hermes' keys and settings and is not readable by tools; ask the user for what you need from it", asked)
		}
	}
	if how&reading != 0 {
		if fi, err := os.Stat(real); err == nil && fi.Mode().IsRegular() && isSecret(fi, r.secretInfos()) {
			return fmt.Errorf("%s is another name of one of Hermes' secret files and is not readable by tools", asked)
		}
	}
	return nil
}

func (r Roots) scratch(top string) bool {
	for _, s := range r.Scratch {
		if top != "" && top != "." && strings.EqualFold(top, s) {
			return true
		}
	}
	return false
}

// realPath evaluates symlinks of the longest existing prefix of p.
func realPath(p string) (string, error) {
	rest := ""
	cur := p
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// seen remembers each file as this session last read or wrote it, so
// that an edit of a file changed underneath is refused.
type seen struct {
	mu sync.Mutex
	m  map[string]mark
}

// mark is a file as it was seen: its size and modification time, and the
// hash of its content when it was read whole (a file read in part, too
// large to hash, is compared by size and time).
type mark struct {
	size   int64
	mod    time.Time
	sum    [32]byte
	summed bool
}

func seenOf(env *tool.Env) *seen {
	return env.Values.Get("files.seen", func() any { return &seen{m: map[string]mark{}} }).(*seen)
}

func (s *seen) note(path string, m mark) {
	s.mu.Lock()
	s.m[path] = m
	s.mu.Unlock()
}

// wrote notes data as what path now holds.
func (s *seen) wrote(path string, data []byte) {
	m := mark{size: int64(len(data)), sum: sha256.Sum256(data), summed: true}
	if fi, err := os.Stat(path); err == nil {
		m.mod = fi.ModTime()
	}
	s.note(path, m)
}

// check fails when path was seen and is no longer as it was: data is what
// it holds now (modified at mod).
func (s *seen) check(path string, data []byte, mod time.Time) error {
	return s.compare(path, int64(len(data)), mod, func() ([32]byte, error) { return sha256.Sum256(data), nil })
}

// checkFile is check for a file not loaded: its content is hashed as a
// stream, and only when the size leaves a doubt.
func (s *seen) checkFile(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil // nothing there to overwrite
	}
	if !fi.Mode().IsRegular() {
		return nil // replaced by the rename, never read
	}
	return s.compare(path, fi.Size(), fi.ModTime(), func() ([32]byte, error) {
		var sum [32]byte
		f, err := openReal(path)
		if err != nil {
			return sum, err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return sum, err
		}
		return [32]byte(h.Sum(nil)), nil
	})
}

func (s *seen) compare(path string, size int64, mod time.Time, sum func() ([32]byte, error)) error {
	s.mu.Lock()
	m, ok := s.m[path]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	changed := size != m.size
	if !changed && m.summed {
		got, err := sum()
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		changed = got != m.sum
	} else if !changed {
		changed = !mod.Equal(m.mod)
	}
	if changed {
		return fmt.Errorf("%s was changed by someone else since you last read or wrote it; read it again before editing", path)
	}
	return nil
}
