package skillhub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/adapters/tools/skills"
)

// Git sources are read with the git program into a bare repository per
// URL under CacheDir (no working tree is ever checked out, so no hook,
// filter or attribute of the repository runs), with every object fetched
// checked (fetch.fsckObjects).

// maxFile bounds one file of a skill from a hub; maxSkill all of them.
const (
	maxFile  = 1 << 20
	maxSkill = 8 << 20
)

var commitHex = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// fetchTimeout bounds one fetch of a repository.
const fetchTimeout = 5 * time.Minute

var gitLocks sync.Map // cache dir -> *sync.Mutex

func (h *Hub) git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	bin := h.Git
	if bin == "" {
		bin = "git"
	}
	full := append([]string{"-c", "fetch.fsckObjects=true", "-c", "transfer.fsckObjects=true", "-c", "core.hooksPath=/dev/null", "-c", "protocol.ext.allow=never",
		"-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=30"}, args...)
	cmd := exec.CommandContext(ctx, bin, full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=", "GIT_CONFIG_NOSYSTEM=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.Bytes(), fmt.Errorf("git %s: %s", args[0], strings.TrimSpace(errb.String()))
		}
		if errors.Is(err, exec.ErrNotFound) {
			return nil, errors.New("git is not installed: the hub reads git repositories with it (apt-get install git)")
		}
		return nil, err
	}
	return out.Bytes(), nil
}

// repo fetches src's repository into its cache and returns the cache.
func (h *Hub) repo(ctx context.Context, src Source) (string, error) {
	if h.CacheDir == "" {
		return "", errors.New("skill hub: no cache directory")
	}
	sum := sha256.Sum256([]byte(src.Repo))
	dir := filepath.Join(h.CacheDir, "git", hex.EncodeToString(sum[:8])+".git")
	mu, _ := gitLocks.LoadOrStore(dir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockPath(dir + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		if _, err := h.git(ctx, dir, "init", "--quiet", "--bare"); err != nil {
			return "", err
		}
	}
	// A server that stops answering does not hold the command for good.
	fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	if _, err := h.git(fctx, dir, "fetch", "--quiet", "--force", "--no-tags", "--", src.Repo,
		"+HEAD:refs/hub/HEAD", "+refs/heads/*:refs/hub/heads/*", "+refs/tags/*:refs/hub/tags/*"); err != nil {
		return "", fmt.Errorf("fetch %s: %w", src.Repo, err)
	}
	return dir, nil
}

// commit is the commit rev names in the cache dir, or "".
func (h *Hub) commit(ctx context.Context, dir, rev string) string {
	out, err := h.git(ctx, dir, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// resolve is the commit src's ref names in dir.
func (h *Hub) resolve(ctx context.Context, dir string, src Source) (string, error) {
	if src.Ref == "" {
		if c := h.commit(ctx, dir, "refs/hub/HEAD"); c != "" {
			return c, nil
		}
		return "", fmt.Errorf("%s has no HEAD", src.Repo)
	}
	for _, r := range []string{"refs/hub/heads/" + src.Ref, "refs/hub/tags/" + src.Ref} {
		if c := h.commit(ctx, dir, r); c != "" {
			return c, nil
		}
	}
	if regexp.MustCompile(`^[0-9a-f]{7,64}$`).MatchString(src.Ref) {
		if c := h.commit(ctx, dir, src.Ref); c != "" {
			return c, nil
		}
	}
	return "", fmt.Errorf("%s has no branch, tag or commit %q", src.Repo, src.Ref)
}

func (h *Hub) resolveGit(ctx context.Context, src Source) (string, error) {
	dir, err := h.repo(ctx, src)
	if err != nil {
		return "", err
	}
	return h.resolve(ctx, dir, src)
}

func (h *Hub) descends(ctx context.Context, src Source, prev, next string) error {
	dir, err := h.repo(ctx, src)
	if err != nil {
		return err
	}
	if h.commit(ctx, dir, prev) == "" {
		return &TamperedError{What: src.Repo, Detail: fmt.Sprintf("the installed commit %s is no longer in the repository: its history was rewritten", short(prev))}
	}
	if _, err := h.git(ctx, dir, "merge-base", "--is-ancestor", prev, next); err != nil {
		return &TamperedError{What: src.Repo, Detail: fmt.Sprintf("commit %s does not descend from the installed %s: the history was rewritten (install it anew with --force to accept it)", short(next), short(prev))}
	}
	return nil
}

func short(pin string) string {
	pin = strings.TrimPrefix(pin, "sha256:")
	if len(pin) > 12 {
		return pin[:12]
	}
	return pin
}

func (h *Hub) fetchGit(ctx context.Context, src Source, pin string) (Bundle, error) {
	dir, err := h.repo(ctx, src)
	if err != nil {
		return Bundle{}, err
	}
	commit := pin
	if commit == "" {
		if commit, err = h.resolve(ctx, dir, src); err != nil {
			return Bundle{}, err
		}
	} else if !commitHex.MatchString(pin) || h.commit(ctx, dir, pin) != pin {
		return Bundle{}, &TamperedError{What: src.String(), Detail: fmt.Sprintf("commit %s is not in the repository", short(pin))}
	}
	files, err := h.tree(ctx, dir, commit, src.Path)
	if err != nil {
		return Bundle{}, fmt.Errorf("%s at %s: %w", src, short(commit), err)
	}
	return Bundle{Origin: Origin{Source: src, Pin: commit}, Files: files}, nil
}

// tree reads the skill directory sub of commit: its regular files, hidden
// ones aside (as skills.ReadDir reads a directory).
func (h *Hub) tree(ctx context.Context, dir, commit, sub string) (skills.Snapshot, error) {
	prefix := ""
	if sub != "" {
		prefix = strings.Trim(sub, "/") + "/"
	}
	out, err := h.git(ctx, dir, "ls-tree", "-r", "-z", "--full-tree", "-l", commit, "--", prefix)
	if err != nil {
		return nil, err
	}
	snap := skills.Snapshot{}
	total := 0
	for _, rec := range strings.Split(string(out), "\x00") {
		if rec == "" {
			continue
		}
		meta, p, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) < 4 {
			continue
		}
		mode, typ, obj := f[0], f[1], f[2]
		rel := strings.TrimPrefix(p, prefix)
		if hidden(rel) {
			continue
		}
		if typ != "blob" || (mode != "100644" && mode != "100755") {
			return nil, fmt.Errorf("%s is a %s (mode %s): a skill from a hub holds regular files only", p, typ, mode)
		}
		data, err := h.git(ctx, dir, "cat-file", "blob", obj)
		if err != nil {
			return nil, err
		}
		if len(data) > maxFile || total+len(data) > maxSkill {
			return nil, fmt.Errorf("%s is too large for a skill (%d bytes)", p, len(data))
		}
		total += len(data)
		perm := fs.FileMode(0o644)
		if mode == "100755" {
			perm = 0o755
		}
		snap[rel] = skills.File{Data: data, Mode: perm}
	}
	if _, ok := snap["SKILL.md"]; !ok {
		return nil, fmt.Errorf("%w: no SKILL.md in %q", ErrNotFound, "/"+sub)
	}
	return snap, nil
}

// hidden says whether a path of a skill is one the library does not keep
// (a hidden file or directory on the way, or a tool's directory: what
// skills.ReadDir does not read back).
func hidden(rel string) bool {
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		if strings.HasPrefix(part, ".") || (i < len(parts)-1 && slices.Contains(toolDirs, part)) {
			return true
		}
	}
	return false
}

// toolDirs are the directories skills.ReadDir skips beside hidden ones.
var toolDirs = []string{"venv", "node_modules", "site-packages", "__pycache__"}

func (h *Hub) listGit(ctx context.Context, tap Source) ([]Entry, error) {
	dir, err := h.repo(ctx, tap)
	if err != nil {
		return nil, err
	}
	commit, err := h.resolve(ctx, dir, tap)
	if err != nil {
		return nil, err
	}
	prefix := ""
	if tap.Path != "" {
		prefix = strings.Trim(tap.Path, "/") + "/"
	}
	out, err := h.git(ctx, dir, "ls-tree", "-r", "-z", "--full-tree", commit, "--", prefix)
	if err != nil {
		return nil, err
	}
	var list []Entry
	for _, rec := range strings.Split(string(out), "\x00") {
		meta, p, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) < 3 || path.Base(p) != "SKILL.md" || hidden(strings.TrimPrefix(p, prefix)) {
			continue
		}
		data, err := h.git(ctx, dir, "cat-file", "blob", f[2])
		if err != nil || len(data) > maxFile {
			continue
		}
		s, err := skills.Parse(string(data))
		if err != nil {
			continue
		}
		sub := strings.TrimPrefix(path.Dir(p), strings.TrimSuffix(prefix, "/"))
		sub = strings.Trim(sub, "/")
		if path.Dir(p) == "." {
			sub = ""
		}
		src := tap
		src.Path = strings.Trim(path.Join(tap.Path, sub), "/")
		list = append(list, Entry{Name: s.Name, Description: s.Description, Source: src})
	}
	return list, nil
}
