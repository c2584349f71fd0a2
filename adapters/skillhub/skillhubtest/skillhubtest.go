// Package skillhubtest starts the servers a skills hub talks to, on
// loopback, for tests: a real git daemon (Debian's git, in inetd mode
// behind a listener of the test's) serving repositories the test builds
// and commits to with git, and an HTTP server publishing a well-known
// Agent Skills index (format 0.2.0 with digests, or 0.1.0 without) whose
// files can be made to differ from what the index promises.
package skillhubtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// NeedGit fails (under CI=true) or skips the test when git or its daemon
// is missing.
func NeedGit(t testing.TB) {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err == nil {
		_, err = os.Stat(filepath.Join(strings.TrimSpace(string(out)), "git-daemon"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("git with git-daemon is needed (apt-get install git): %v", err)
		}
		t.Skipf("git with git-daemon is needed: %v", err)
	}
}

// GitServer is a git daemon serving the repositories under Root at URL
// (git://127.0.0.1:port).
type GitServer struct {
	Root string
	URL  string
}

// StartGit starts a git daemon on loopback for the test.
func StartGit(t testing.TB) *GitServer {
	t.Helper()
	NeedGit(t)
	root := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				cmd := exec.Command("git", "daemon", "--inetd", "--export-all", "--informative-errors", "--base-path="+root, root)
				cmd.Stdin, cmd.Stdout = c, c
				cmd.Run()
			}()
		}
	}()
	return &GitServer{Root: root, URL: "git://" + ln.Addr().String()}
}

// Repo is a git repository (with a working tree) the daemon serves.
type Repo struct {
	t   testing.TB
	Dir string
	// URL is where the daemon serves it.
	URL string
}

// Repo makes the repository name (owner/repo) on the server.
func (s *GitServer) Repo(t testing.TB, name string) *Repo {
	t.Helper()
	r := &Repo{t: t, Dir: filepath.Join(s.Root, filepath.FromSlash(name)), URL: s.URL + "/" + name}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r.Git("init", "--quiet", "--initial-branch=main")
	return r
}

// Git runs git in the repository and returns its output.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=Test",
		"GIT_COMMITTER_EMAIL=test@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+r.Dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Commit writes files (path: content; a content starting with #! is made
// executable; an empty one removes the file) and commits them; it returns
// the commit.
func (r *Repo) Commit(msg string, files map[string]string) string {
	r.t.Helper()
	for p, content := range files {
		full := filepath.Join(r.Dir, filepath.FromSlash(p))
		if content == "" {
			os.Remove(full)
			continue
		}
		os.MkdirAll(filepath.Dir(full), 0o755)
		mode := os.FileMode(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			r.t.Fatal(err)
		}
		os.Chmod(full, mode)
	}
	r.Git("add", "-A")
	r.Git("commit", "--quiet", "--allow-empty", "-m", msg)
	return r.Git("rev-parse", "HEAD")
}

// Index is an HTTP server publishing a well-known skills index.
type Index struct {
	*httptest.Server
	// Legacy serves format 0.1.0 at /.well-known/skills (no digests)
	// instead of 0.2.0 at /.well-known/agent-skills.
	Legacy bool
	mu     sync.Mutex
	skills map[string]indexSkill
	served map[string]string
}

type indexSkill struct {
	description string
	files       map[string]string
}

// StartIndex starts an index server on loopback for the test.
func StartIndex(t testing.TB) *Index {
	ix := &Index{skills: map[string]indexSkill{}, served: map[string]string{}}
	ix.Server = httptest.NewServer(http.HandlerFunc(ix.serve))
	t.Cleanup(ix.Close)
	return ix
}

// Base is the index's directory URL.
func (ix *Index) Base() string {
	if ix.Legacy {
		return ix.URL + "/.well-known/skills"
	}
	return ix.URL + "/.well-known/agent-skills"
}

// Put publishes (or replaces) a skill, its digests made from files.
func (ix *Index) Put(name, description string, files map[string]string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.skills[name] = indexSkill{description: description, files: maps.Clone(files)}
	for p := range files {
		delete(ix.served, name+"/"+p)
	}
}

// Tamper serves data for the skill's file p from now on, without changing
// what the index says of it.
func (ix *Index) Tamper(name, p, data string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.served[name+"/"+p] = data
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// Digest is the skill-level digest of files, as the discovery format
// defines it: SHA-256 over "<path>\x00<hex>\n" of the files sorted by path.
func Digest(files map[string]string) string {
	h := sha256.New()
	for _, p := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s\x00%s\n", p, sum(files[p]))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func (ix *Index) serve(w http.ResponseWriter, r *http.Request) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	prefix := "/.well-known/agent-skills/"
	if ix.Legacy {
		prefix = "/.well-known/skills/"
	}
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if rest == "index.json" {
		type file struct {
			Path   string `json:"path"`
			Digest string `json:"digest"`
		}
		type entry struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			Digest      string `json:"digest,omitempty"`
			Files       []any  `json:"files"`
		}
		out := struct {
			Version string  `json:"version,omitempty"`
			Skills  []entry `json:"skills"`
		}{Skills: []entry{}}
		if !ix.Legacy {
			out.Version = "0.2.0"
		}
		for _, name := range slices.Sorted(maps.Keys(ix.skills)) {
			s := ix.skills[name]
			e := entry{Name: name, Description: s.description}
			paths := slices.Sorted(maps.Keys(s.files))
			if i := slices.Index(paths, "SKILL.md"); i > 0 {
				paths = append([]string{"SKILL.md"}, slices.Delete(paths, i, i+1)...)
			}
			for _, p := range paths {
				if ix.Legacy {
					e.Files = append(e.Files, p)
				} else {
					e.Files = append(e.Files, file{Path: p, Digest: "sha256:" + sum(s.files[p])})
				}
			}
			if !ix.Legacy {
				e.Digest = Digest(s.files)
			}
			out.Skills = append(out.Skills, e)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
		return
	}
	name, p, _ := strings.Cut(rest, "/")
	s, ok := ix.skills[name]
	data, have := s.files[p]
	if !ok || !have {
		http.NotFound(w, r)
		return
	}
	if t, ok := ix.served[name+"/"+p]; ok {
		data = t
	}
	w.Write([]byte(data))
}
