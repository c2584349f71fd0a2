//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAppearWatch: every way a missing hidden path can come to exist makes
// the watch stale at the next check, whether through inotify or, without
// it, through the per-check look; activity elsewhere does not.
func TestAppearWatch(t *testing.T) {
	type step func(t *testing.T, home string)
	mkdir := func(rel string) step {
		return func(t *testing.T, home string) { must(t, os.MkdirAll(filepath.Join(home, rel), 0o700)) }
	}
	write := func(rel string) step {
		return func(t *testing.T, home string) {
			must(t, os.MkdirAll(filepath.Dir(filepath.Join(home, rel)), 0o700))
			must(t, os.WriteFile(filepath.Join(home, rel), []byte("secret"), 0o600))
		}
	}
	cases := []struct {
		name   string
		before []step // each followed by a check that must say not stale
		then   step
	}{
		{name: "file made", then: write(".netrc")},
		{name: "deep mkdir -p at once", then: mkdir(".config/gcloud/configurations")},
		{name: "parent first, then the path", before: []step{mkdir(".config")}, then: mkdir(".config/gcloud")},
		{name: "two levels in steps", before: []step{mkdir(".local"), mkdir(".local/share")}, then: mkdir(".local/share/keyrings")},
		{name: "renamed into place", then: func(t *testing.T, home string) {
			must(t, os.MkdirAll(filepath.Join(home, "staging", "aws"), 0o700))
			must(t, os.Rename(filepath.Join(home, "staging", "aws"), filepath.Join(home, ".aws")))
		}},
		{name: "symlink to a directory", then: func(t *testing.T, home string) {
			must(t, os.MkdirAll(filepath.Join(home, "elsewhere"), 0o700))
			must(t, os.Symlink(filepath.Join(home, "elsewhere"), filepath.Join(home, ".aws")))
		}},
		{name: "dangling symlink", then: func(t *testing.T, home string) {
			must(t, os.Symlink("/nonexistent/target", filepath.Join(home, ".netrc")))
		}},
		{name: "ancestor becomes a symlink to a tree holding it", then: func(t *testing.T, home string) {
			must(t, os.MkdirAll(filepath.Join(home, "other", "gcloud"), 0o700))
			must(t, os.Symlink(filepath.Join(home, "other"), filepath.Join(home, ".config")))
		}},
		{name: "watched ancestor moved away and remade", before: []step{mkdir(".config")}, then: func(t *testing.T, home string) {
			must(t, os.Rename(filepath.Join(home, ".config"), filepath.Join(home, ".config.old")))
			must(t, os.MkdirAll(filepath.Join(home, ".config", "gcloud"), 0o700))
		}},
		{name: "watched ancestor removed and remade", before: []step{mkdir(".config")}, then: func(t *testing.T, home string) {
			must(t, os.RemoveAll(filepath.Join(home, ".config")))
			must(t, os.MkdirAll(filepath.Join(home, ".config", "gcloud"), 0o700))
		}},
	}
	for _, inotify := range []bool{true, false} {
		for _, c := range cases {
			name := c.name
			if !inotify {
				name += " (no inotify)"
			}
			t.Run(name, func(t *testing.T) {
				home := t.TempDir()
				hidden := []string{filepath.Join(home, ".netrc"), filepath.Join(home, ".aws"),
					filepath.Join(home, ".config", "gcloud"), filepath.Join(home, ".local", "share", "keyrings")}
				w := newAppearWatch(hidden)
				defer w.Close()
				if !inotify {
					w.Close() // Stale falls back to looking at every path
				} else if w.fd < 0 {
					t.Fatal("no inotify instance")
				}
				if w.Stale() {
					t.Fatal("stale before anything appeared")
				}
				// Unrelated activity, here and below, is not an appearance.
				write("notes.txt")(t, home)
				mkdir("project/src")(t, home)
				if w.Stale() {
					t.Fatal("stale after unrelated files were made")
				}
				for i, s := range c.before {
					s(t, home)
					if w.Stale() {
						t.Fatalf("stale after preparatory step %d", i)
					}
				}
				c.then(t, home)
				if !w.Stale() {
					t.Fatal("not stale after a hidden path appeared")
				}
				if !w.Stale() {
					t.Fatal("stale did not stay true")
				}
			})
		}
	}
	// A path that existed at the start is hidden by the sandbox, not
	// watched: nothing to report about it.
	home := t.TempDir()
	write(".netrc")(t, home)
	w := newAppearWatch([]string{filepath.Join(home, ".netrc")})
	defer w.Close()
	if w.Stale() || len(w.missing) != 0 || w.fd >= 0 {
		t.Fatalf("an existing path: stale %v, missing %v, fd %d", w.Stale(), w.missing, w.fd)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
