// Package files holds the file tools — read_file, write_file, patch and
// search_files — confined to allowed roots (by default the session's
// working directory and $HERMES_HOME). Paths are resolved through symlinks
// before the check, so neither ".." nor a link can lead outside.
package files

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/actors/agent"
)

// Roots are the directories file tools may touch.
type Roots struct {
	// Extra roots beside the session's working directory.
	Extra []string
	// NoWorkingDir leaves the working directory out.
	NoWorkingDir bool
}

func (r Roots) list(env *agent.Env) []string {
	var out []string
	if !r.NoWorkingDir && env.WorkingDir != "" {
		out = append(out, env.WorkingDir)
	}
	out = append(out, r.Extra...)
	for i, p := range out {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			out[i] = real
		} else {
			out[i] = filepath.Clean(p)
		}
	}
	return out
}

// resolve turns a path argument into a real absolute path inside a root.
func (r Roots) resolve(env *agent.Env, p string) (string, error) {
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
			return real, nil
		}
	}
	if real != p {
		return "", fmt.Errorf("path %s resolves (through a symlink) to %s, outside the allowed roots %s", p, real, strings.Join(roots, ", "))
	}
	return "", fmt.Errorf("path %s is outside the allowed roots %s", p, strings.Join(roots, ", "))
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

// seen remembers the hash of each file as this session last read or wrote
// it, so that an edit of a file changed underneath is refused.
type seen struct {
	mu sync.Mutex
	m  map[string][32]byte
}

func seenOf(env *agent.Env) *seen {
	return env.Values.Get("files.seen", func() any { return &seen{m: map[string][32]byte{}} }).(*seen)
}

func (s *seen) note(path string, data []byte) {
	s.mu.Lock()
	s.m[path] = sha256.Sum256(data)
	s.mu.Unlock()
}

// check fails when path was seen and its content has changed since.
func (s *seen) check(path string, data []byte) error {
	s.mu.Lock()
	h, ok := s.m[path]
	s.mu.Unlock()
	if ok && h != sha256.Sum256(data) {
		return fmt.Errorf("%s was changed by someone else since you last read or wrote it; read it again before editing", path)
	}
	return nil
}
