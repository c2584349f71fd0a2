package skills

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// How the skill directories and the events stay one library. Every skill
// of the home library is a stream, skill-<name>, whose last version is what
// its directory holds; but the Python Hermes Agent writes the same
// directories, and people edit them by hand. So a skill's directory is one
// of two things:
//
//   - ours: its files (SKILL.md and the linked files, hidden ones aside)
//     are those of the stream's last version, or the bytes this build last
//     wrote there (their hash is in the skill's record,
//     skills/.hermes/written/<name>). It is a projection, rewritten from
//     the events when they move on;
//   - foreign: anything else (the Python agent's skill, a hand edit). It
//     is adopted, never overwritten: a SkillWritten of what it holds,
//     Author "adopted from disk", the first time this build sees it (when
//     the home is opened, and before any change through skill_manage or
//     the CLI), so the next change is made on top of it.
//
// A write records the new files' hash before it touches the directory and
// forgets the old one after, so a directory a crash left as it was, or
// with the change whole, is still ours (most changes are to SKILL.md
// alone; a crash between the files of a change to several leaves a mix,
// which the next open adopts as it is: nothing is lost). A write replaces
// a file only when its bytes change, through a temporary file and a
// rename; it removes only files the last version had and the
// new one has not, and never a file it did not list (hidden files, other
// tools' directories). Every look at a directory and every write to it
// holds the skill's lock, skills/.hermes/locks/<name>.lock (flock(2)).

// AdoptedFromDisk is the Author kind of the versions that take a skill
// found on disk into its stream.
const AdoptedFromDisk = schema.AuthorAdopted

// Limits of the content a skill's events hold: a linked file larger than
// maxFileBytes, or beyond maxSkillBytes of the skill's files, is kept by
// its hash and size alone (the projection never writes it; a change to it
// on disk is still seen and adopted); a larger SKILL.md is malformed.
const (
	maxFileBytes  = 1 << 20
	maxSkillBytes = 8 << 20
)

// hashFile is the hex SHA-256 of the file p, read as a stream.
func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// MalformedError is a skill directory that cannot be adopted (its SKILL.md
// does not parse, it is too large, not text); it is left as it is.
type MalformedError struct {
	Path   string
	Reason string
}

// Error names the directory and says what to do.
func (e *MalformedError) Error() string {
	return fmt.Sprintf("%s: %s; hermes leaves it as it is and does not change it until it is fixed or moved", e.Path, e.Reason)
}

// ForeignError is a skill directory the projection did not write and will
// not write over: it is adopted the next time the home is opened.
type ForeignError struct{ Path string }

// Error says what happened.
func (e *ForeignError) Error() string {
	return fmt.Sprintf("%s was changed outside hermes: left as it is, to be adopted the next time hermes opens the home", e.Path)
}

// Keeper keeps the home library's skills as event streams and their
// directories as a projection of them.
type Keeper struct {
	Store events.Store
	// Dir is $HERMES_HOME/skills.
	Dir string
}

// NewKeeper returns the keeper of the skills in dir, with their events in
// store.
func NewKeeper(store events.Store, dir string) *Keeper { return &Keeper{Store: store, Dir: dir} }

func (k *Keeper) state() string             { return filepath.Join(k.Dir, ".hermes") }
func (k *Keeper) record(name string) string { return filepath.Join(k.state(), "written", name) }

// lock takes the skill's lock.
func (k *Keeper) lock(name string) (func(), error) {
	dir := filepath.Join(k.state(), "locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return lockPath(filepath.Join(dir, name+".lock"))
}

// written is the hashes of what this build last wrote of name.
func (k *Keeper) written(name string) map[string]bool {
	b, _ := os.ReadFile(k.record(name))
	out := map[string]bool{}
	for _, l := range strings.Fields(string(b)) {
		out[l] = true
	}
	return out
}

func (k *Keeper) setWritten(name string, hashes ...string) error {
	if err := os.MkdirAll(filepath.Dir(k.record(name)), 0o755); err != nil {
		return err
	}
	slices.Sort(hashes)
	return replaceFile(k.record(name), []byte(strings.Join(slices.Compact(hashes), "\n")+"\n"), 0o644)
}

// ours says whether snap (a directory's) is a projection of the stream
// whose last version is latest. Without a stream (a log replaced since
// this build wrote the directory) nothing is: it is adopted again.
func (k *Keeper) ours(name string, snap Snapshot, latest *Version) bool {
	if latest == nil {
		return false
	}
	h := snap.Hash()
	return h == latest.Files.Hash() || k.written(name)[h]
}

// find is the directory of the home library's skill name, where its
// SKILL.md names it, at any depth, or "".
func (k *Keeper) find(name string) string {
	dir, ok := Library{Dirs: []string{k.Dir}}.find(name)
	if !ok {
		return ""
	}
	return dir
}

// locate is where the skill name is or goes: where it is found on disk,
// else where its last version put it.
func (k *Keeper) locate(name string, latest *Version) (string, error) {
	if dir := k.find(name); dir != "" {
		return dir, nil
	}
	rel := name
	if latest != nil && latest.Dir != "" {
		rel = latest.Dir
	}
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", fmt.Errorf("skill %s: its directory %q is not inside %s", name, rel, k.Dir)
	}
	return filepath.Join(k.Dir, filepath.FromSlash(rel)), nil
}

// ReadDir reads the skill directory dir: every regular file in it but
// hidden ones and those under tools' directories (see hiddenDir). exists is
// false when there is no directory, or nothing in it but hidden files and
// empty directories. A directory whose SKILL.md is missing
// or does not parse (or names another skill than name, when name is set),
// or that is too large to keep as events, is a *MalformedError.
func ReadDir(dir, name string) (snap Snapshot, exists bool, err error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	snap = Snapshot{}
	var total int64
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		if d.IsDir() {
			if hiddenDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel != skillMD && (info.Size() > maxFileBytes || total+info.Size() > maxSkillBytes) {
			sum, err := hashFile(p)
			if err != nil {
				return err
			}
			snap[rel] = File{Mode: info.Mode().Perm(), Hash: sum, Size: info.Size()}
			return nil
		}
		if info.Size() > maxFileBytes {
			return &MalformedError{Path: p, Reason: fmt.Sprintf("is %d bytes, more than a SKILL.md may hold (%d)", info.Size(), maxFileBytes)}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		total += int64(len(b))
		snap[rel] = File{Data: b, Mode: info.Mode().Perm()}
		return nil
	})
	if err != nil {
		var me *MalformedError
		if errors.As(err, &me) {
			return nil, true, err
		}
		return nil, true, fmt.Errorf("read skill %s: %w", dir, err)
	}
	if len(snap) == 0 {
		return nil, false, nil // what an archive left: hidden files, empty directories
	}
	md, ok := snap[skillMD]
	if !ok {
		return nil, true, &MalformedError{Path: dir, Reason: "holds no SKILL.md"}
	}
	if !utf8.Valid(md.Data) {
		return nil, true, &MalformedError{Path: filepath.Join(dir, skillMD), Reason: "is not UTF-8 text"}
	}
	s, err := Parse(string(md.Data))
	if err != nil {
		return nil, true, &MalformedError{Path: filepath.Join(dir, skillMD), Reason: err.Error()}
	}
	if name != "" && s.Name != name {
		return nil, true, &MalformedError{Path: filepath.Join(dir, skillMD), Reason: fmt.Sprintf("names skill %q, not %q", s.Name, name)}
	}
	return snap, true, nil
}

// retry runs try until it does not meet another writer's append (a
// *events.WrongExpectedVersionError), backing off a little each time.
func retry(what string, try func() error) error {
	for attempt := 0; attempt < 30; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt*attempt) * time.Millisecond)
		}
		err := try()
		var wev *events.WrongExpectedVersionError
		if errors.As(err, &wev) {
			continue
		}
		return err
	}
	return fmt.Errorf("%s is being changed by other writers right now; try again", what)
}

// Adopt takes the skill name's directory into its stream if it holds what
// no event left there (see the comment at the top of keeper.go), and
// returns the version it appended (nil when there was nothing to adopt).
func (k *Keeper) Adopt(ctx context.Context, name string) (*Version, error) {
	unlock, err := k.lock(name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return k.adopt(ctx, name, "")
}

// adopt adopts the skill name found in dir ("": where locate says); the
// caller holds its lock.
func (k *Keeper) adopt(ctx context.Context, name, dir string) (*Version, error) {
	var adopted *Version
	err := retry("skill "+name, func() error {
		hist, expected, err := History(ctx, k.Store, name)
		if err != nil {
			return err
		}
		latest := last(hist)
		at := dir
		if at == "" {
			if at, err = k.locate(name, latest); err != nil {
				return err
			}
		}
		snap, exists, err := ReadDir(at, name)
		if err != nil || !exists {
			return err
		}
		if k.ours(name, snap, latest) {
			return nil
		}
		rel, _ := filepath.Rel(k.Dir, at)
		reason := "found on disk without a history"
		if latest != nil {
			reason = "changed on disk outside hermes"
		}
		p := schema.SkillWritten{Name: name, Action: "adopt", Content: snap.SkillMD(), Dir: filepath.ToSlash(rel), Files: snap.linked(),
			Author: &schema.SkillAuthor{Kind: schema.AuthorAdopted}, Reason: reason}
		if err := k.append(ctx, name, expected, p); err != nil {
			return err
		}
		v, _ := next(name, latest, p)
		adopted = &v
		// The directory is now a version of the stream: ours to write over
		// with the next one.
		return k.setWritten(name, snap.Hash())
	})
	return adopted, err
}

func last(hist []Version) *Version {
	if len(hist) == 0 {
		return nil
	}
	return &hist[len(hist)-1]
}

func (k *Keeper) append(ctx context.Context, name string, expected events.Expected, p schema.Payload) error {
	ev, err := schema.NewEnvelope(schema.Meta{}, p)
	if err != nil {
		return err
	}
	_, err = k.Store.Append(ctx, Stream(name), expected, ev)
	return err
}

// AdoptAll adopts every skill of the home library that holds what no event
// left there (see Adopt) and returns the versions it appended. A directory
// that cannot be adopted (its SKILL.md does not parse, ...) is left as it
// is and named in the error; the others are still adopted.
func (k *Keeper) AdoptAll(ctx context.Context) ([]Version, error) {
	var out []Version
	var errs []error
	seen := map[string]string{}
	err := filepath.WalkDir(k.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == k.Dir && errors.Is(err, os.ErrNotExist) {
				return filepath.SkipAll
			}
			errs = append(errs, err)
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if p != k.Dir && hiddenDir(d.Name()) {
			return filepath.SkipDir
		}
		data, err := os.ReadFile(filepath.Join(p, skillMD))
		if err != nil {
			return nil
		}
		s, err := Parse(string(data))
		if err != nil {
			errs = append(errs, &MalformedError{Path: filepath.Join(p, skillMD), Reason: err.Error()})
			return filepath.SkipDir
		}
		if first, ok := seen[s.Name]; ok {
			errs = append(errs, fmt.Errorf("%s: another copy of skill %s, left as it is (the one used and kept as events is %s)", p, s.Name, first))
			return filepath.SkipDir
		}
		seen[s.Name] = p
		// What this build wrote last is ours whatever the stream says:
		// known without the lock or the log (a read racing a write sees
		// a mix, not in the record, and takes the way below).
		if snap, exists, err := ReadDir(p, s.Name); err == nil && exists && k.written(s.Name)[snap.Hash()] {
			return filepath.SkipDir
		}
		v, err := func() (*Version, error) {
			unlock, err := k.lock(s.Name)
			if err != nil {
				return nil, err
			}
			defer unlock()
			return k.adopt(ctx, s.Name, p)
		}()
		if err != nil {
			errs = append(errs, err)
		} else if v != nil {
			out = append(out, *v)
		}
		return filepath.SkipDir
	})
	if err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// Change makes a new version of the skill name: the skill on disk is
// adopted first, then change is given the last version (nil: none) and
// returns the event to append, which is appended with the expected
// revision (change runs again when another writer came first), and the
// directory is written from the stream. It returns the version appended.
func (k *Keeper) Change(ctx context.Context, name string, change func(latest *Version) (schema.Payload, error)) (Version, error) {
	if !validName.MatchString(name) {
		return Version{}, fmt.Errorf("name %q: use lowercase letters, digits, hyphens, dots and underscores (at most 64)", name)
	}
	if _, err := k.Adopt(ctx, name); err != nil {
		return Version{}, fmt.Errorf("%w; the skill was not changed", err)
	}
	var made Version
	err := retry("skill "+name, func() error {
		hist, expected, err := History(ctx, k.Store, name)
		if err != nil {
			return err
		}
		latest := last(hist)
		p, err := change(latest)
		if err != nil {
			return err
		}
		if err := k.append(ctx, name, expected, p); err != nil {
			return err
		}
		made, _ = next(name, latest, p)
		return nil
	})
	if err != nil {
		return Version{}, err
	}
	if err := k.Project(ctx, name); err != nil {
		return made, fmt.Errorf("saved as version %d, but: %w", made.Number, err)
	}
	return made, nil
}

// Project makes the skill name's directory hold its last version (or, when
// archived, removes what this build wrote of it). A directory that is not
// ours (see the comment at the top of keeper.go) is left as it is: the
// error is a *ForeignError or a *MalformedError.
func (k *Keeper) Project(ctx context.Context, name string) error {
	unlock, err := k.lock(name)
	if err != nil {
		return err
	}
	defer unlock()
	hist, _, err := History(ctx, k.Store, name)
	if err != nil {
		return err
	}
	latest := last(hist)
	if latest == nil {
		return nil
	}
	dir, err := k.locate(name, latest)
	if err != nil {
		return err
	}
	snap, exists, err := ReadDir(dir, name)
	if err != nil {
		return err
	}
	if exists && !k.ours(name, snap, latest) {
		return &ForeignError{Path: dir}
	}
	if latest.Archived {
		if !exists {
			return nil
		}
		if err := k.setWritten(name, snap.Hash()); err != nil {
			return err
		}
		if err := removeFiles(dir, snap, nil); err != nil {
			return err
		}
		return os.Remove(k.record(name))
	}
	want := latest.Files
	if exists && snap.Hash() == want.Hash() && sameModes(snap, want) {
		if !k.written(name)[want.Hash()] {
			return k.setWritten(name, want.Hash())
		}
		return nil
	}
	hashes := []string{want.Hash()}
	if exists {
		hashes = append(hashes, snap.Hash())
	}
	if err := k.setWritten(name, hashes...); err != nil {
		return err
	}
	for _, p := range want.Paths() {
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			return fmt.Errorf("skill %s: file %q is not inside its directory", name, p)
		}
		f := want[p]
		if old, ok := snap[p]; ok && old.Sum() == f.Sum() && old.Mode == f.Mode {
			continue
		}
		if !f.Kept() {
			continue // only its hash is in the log: whatever is on disk stays
		}
		target := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := replaceFile(target, f.Data, mode); err != nil {
			return err
		}
	}
	if err := removeFiles(dir, snap, want); err != nil {
		return err
	}
	return k.setWritten(name, want.Hash())
}

func sameModes(a, b Snapshot) bool {
	for p, f := range a {
		if b[p].Mode != 0 && f.Mode != b[p].Mode {
			return false
		}
	}
	return true
}

// removeFiles removes from dir the files of had that keep does not hold,
// then the directories they leave empty (dir among them): nothing else.
func removeFiles(dir string, had, keep Snapshot) error {
	dirs := map[string]bool{}
	for p := range had {
		if _, ok := keep[p]; ok {
			continue
		}
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	sub := slices.Collect(maps.Keys(dirs))
	// Deepest first, so a parent is empty when its turn comes.
	slices.SortFunc(sub, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, d := range sub {
		os.Remove(filepath.Join(dir, filepath.FromSlash(d))) // fails, as it should, when not empty
	}
	if keep == nil {
		os.Remove(dir)
	}
	return nil
}

// replaceFile writes data to p atomically, through a temporary file of its
// own beside it (several processes may write).
func replaceFile(p string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+"-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// Rollback appends a SkillWritten that restores the files of the skill's
// version number (0: the one before the last), by author; history is
// never rewritten. It returns the version appended.
func (k *Keeper) Rollback(ctx context.Context, name string, number int, author schema.SkillAuthor) (Version, error) {
	return k.Change(ctx, name, func(latest *Version) (schema.Payload, error) {
		hist, _, err := History(ctx, k.Store, name)
		if err != nil {
			return nil, err
		}
		if len(hist) == 0 {
			return nil, fmt.Errorf("skill %s has no history", name)
		}
		n := number
		if n == 0 {
			n = len(hist) - 1
		}
		if n < 1 || n > len(hist) {
			return nil, fmt.Errorf("skill %s has versions 1 to %d, not %d", name, len(hist), n)
		}
		v := hist[n-1]
		return schema.SkillWritten{Name: name, Action: "rollback", Content: v.Files.SkillMD(), Dir: latest.Dir, Files: v.Files.linked(),
			Author: &author, Reason: fmt.Sprintf("rollback to v%d", n)}, nil
	})
}

// Install makes the skill in the directory src (or the directory of the
// SKILL.md src) a version of the home library's skill of its name, by
// author, with its linked files; a skill of that name that is there
// already (on disk or in its stream, not archived) is replaced only when
// replace is set, as a new version: its history stays. It returns the
// version and the path of the installed SKILL.md.
func (k *Keeper) Install(ctx context.Context, src string, replace bool, author schema.SkillAuthor) (Version, string, error) {
	info, err := os.Stat(src)
	if err != nil {
		return Version{}, "", err
	}
	dir := src
	if !info.IsDir() {
		dir = filepath.Dir(src)
	}
	snap, _, err := ReadDir(dir, "")
	if err != nil {
		return Version{}, "", err
	}
	if snap == nil {
		return Version{}, "", fmt.Errorf("%s holds no SKILL.md", dir)
	}
	s, _ := Parse(snap.SkillMD())
	abs, _ := filepath.Abs(dir)
	v, err := k.Change(ctx, s.Name, func(latest *Version) (schema.Payload, error) {
		rel := s.Name
		if latest != nil {
			if !latest.Archived && !replace {
				at, _ := k.locate(s.Name, latest)
				return nil, fmt.Errorf("%w: %s (use --force to replace it)", ErrSkillExists, at)
			}
			rel = latest.Dir
		}
		return schema.SkillWritten{Name: s.Name, Action: "install", Content: snap.SkillMD(), Dir: rel, Files: snap.linked(),
			Author: &author, Reason: "installed from " + abs}, nil
	})
	if err != nil {
		return v, "", err
	}
	at, err := k.locate(s.Name, &v)
	return v, filepath.Join(at, skillMD), err
}

// Archive takes the skill name out of use, by author: a SkillArchived on
// its stream, its directory removed; its history stays, and Restore (or
// Rollback) brings it back.
func (k *Keeper) Archive(ctx context.Context, name string, author schema.SkillAuthor, reason string) (Version, error) {
	return k.Change(ctx, name, func(latest *Version) (schema.Payload, error) {
		if latest == nil || latest.Archived {
			return nil, fmt.Errorf("no skill %s in %s to archive", name, k.Dir)
		}
		return schema.SkillArchived{Name: name, Author: author, Reason: reason}, nil
	})
}

// Restore brings the archived skill name back as it was when archived, by
// author: a SkillRestored on its stream.
func (k *Keeper) Restore(ctx context.Context, name string, author schema.SkillAuthor, reason string) (Version, error) {
	return k.Change(ctx, name, func(latest *Version) (schema.Payload, error) {
		if latest == nil {
			return nil, fmt.Errorf("skill %s has no history", name)
		}
		if !latest.Archived {
			return nil, fmt.Errorf("skill %s is not archived", name)
		}
		return schema.SkillRestored{Name: name, Author: author, Reason: reason}, nil
	})
}

// Names lists the skills that have a stream in the home library, by name,
// read from the skills directory's record and the directories on disk
// (see AdoptAll: every skill on disk has one once the home is opened).
func (k *Keeper) Names() []string {
	seen := map[string]bool{}
	entries, _ := os.ReadDir(filepath.Join(k.state(), "written"))
	for _, e := range entries {
		if validName.MatchString(e.Name()) {
			seen[e.Name()] = true
		}
	}
	all, _ := Library{Dirs: []string{k.Dir}}.All()
	for _, s := range all {
		seen[s.Name] = true
	}
	return slices.Sorted(maps.Keys(seen))
}
