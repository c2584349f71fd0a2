package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// kept is a home library kept as events in a real embedded store.
type kept struct {
	t      *testing.T
	home   string // $HERMES_HOME/skills
	lib    Library
	manage tool.Tool
}

func newKept(t *testing.T) *kept {
	t.Helper()
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	home := filepath.Join(dir, "skills")
	lib := Library{Dirs: []string{home}, Keeper: NewKeeper(store, home)}
	k := &kept{t: t, home: home, lib: lib}
	for _, tl := range Tools(lib) {
		if tl.Spec().Name == "skill_manage" {
			k.manage = tl
		}
	}
	return k
}

// run calls skill_manage as session sid would.
func (k *kept) run(sid string, args map[string]any) (string, error) {
	b, _ := json.Marshal(args)
	ctx := tool.WithEnv(context.Background(), &tool.Env{SessionID: sid, TurnID: "t1", Values: tool.NewSessionValues()})
	return k.manage.Run(ctx, b)
}

func (k *kept) must(sid string, args map[string]any) string {
	k.t.Helper()
	out, err := k.run(sid, args)
	if err != nil {
		k.t.Fatalf("skill_manage %v: %v", args, err)
	}
	return out
}

func (k *kept) history(name string) []Version {
	k.t.Helper()
	hist, _, err := History(context.Background(), k.lib.Keeper.Store, name)
	if err != nil {
		k.t.Fatal(err)
	}
	return hist
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func write(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestManageCreatePatchHistory(t *testing.T) {
	k := newKept(t)
	out := k.must("sess-aaaaaaaa-1", map[string]any{"action": "create", "name": "release-checklist", "content": release})
	if !strings.Contains(out, "version 1") {
		t.Fatalf("create answer %q does not name the version", out)
	}
	out = k.must("sess-bbbbbbbb-2", map[string]any{"action": "patch", "name": "release-checklist", "old_string": "2. Tag", "new_string": "2. Update CHANGELOG.\n3. Tag", "reason": "changelog was forgotten"})
	if !strings.Contains(out, "version 2") {
		t.Fatalf("patch answer %q does not name the version", out)
	}
	hist := k.history("release-checklist")
	if len(hist) != 2 {
		t.Fatalf("%d versions, want 2", len(hist))
	}
	if hist[0].Type != schema.TypeSkillWritten || hist[0].Author.Kind != schema.AuthorSession || hist[0].Author.SessionID != "sess-aaaaaaaa-1" || hist[0].Reason != "skill_manage create" {
		t.Fatalf("v1 %+v", hist[0])
	}
	if hist[1].Type != schema.TypeSkillPatched || hist[1].Author.SessionID != "sess-bbbbbbbb-2" || hist[1].Reason != "changelog was forgotten" {
		t.Fatalf("v2 %+v", hist[1])
	}
	want := strings.Replace(release, "2. Tag", "2. Update CHANGELOG.\n3. Tag", 1)
	if got := read(t, filepath.Join(k.home, "release-checklist", "SKILL.md")); got != want || hist[1].Files.SkillMD() != want {
		t.Fatalf("on disk %q, in the stream %q", got, hist[1].Files.SkillMD())
	}
	// A patch that does not match is refused and appends nothing.
	if _, err := k.run("s", map[string]any{"action": "patch", "name": "release-checklist", "old_string": "nowhere", "new_string": "x"}); err == nil {
		t.Fatal("a patch matching nothing succeeded")
	}
	if n := len(k.history("release-checklist")); n != 2 {
		t.Fatalf("a refused patch left %d versions", n)
	}
}

func TestHandEditIsAdoptedNotClobbered(t *testing.T) {
	k := newKept(t)
	k.must("s1", map[string]any{"action": "create", "name": "release-checklist", "content": release})
	md := filepath.Join(k.home, "release-checklist", "SKILL.md")
	edited := strings.Replace(release, "1. Run the tests.", "1. Run the tests with -race.", 1)
	write(t, md, edited)
	k.must("s2", map[string]any{"action": "patch", "name": "release-checklist", "old_string": "with -race", "new_string": "with -race and -count=2"})
	want := strings.Replace(edited, "with -race", "with -race and -count=2", 1)
	if got := read(t, md); got != want {
		t.Fatalf("the patch was not made on top of the hand edit: %q", got)
	}
	hist := k.history("release-checklist")
	if len(hist) != 3 || hist[1].Action != "adopt" || hist[1].Author.String() != "adopted from disk" || hist[1].Files.SkillMD() != edited {
		t.Fatalf("history %+v", hist)
	}
	// Adopted once: the next look finds nothing new.
	if v, err := k.lib.Keeper.Adopt(context.Background(), "release-checklist"); err != nil || v != nil {
		t.Fatalf("adopted again: %+v %v", v, err)
	}
}

func TestPythonSkillAdoptedAsItIs(t *testing.T) {
	k := newKept(t)
	dir := filepath.Join(k.home, "devops", "deploy_check.v2")
	py := "---\r\nname: deploy_check.v2\r\ndescription: Check a deploy\r\n---\r\n\r\nRun scripts/smoke.sh.\r\n"
	write(t, filepath.Join(dir, "SKILL.md"), py)
	write(t, filepath.Join(dir, "scripts", "smoke.sh"), "#!/bin/sh\ncurl -f localhost\n")
	os.Chmod(filepath.Join(dir, "scripts", "smoke.sh"), 0o755)
	write(t, filepath.Join(k.home, ".archive", "old", "SKILL.md"), "---\nname: old\ndescription: archived by the Python agent\n---\n")
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "SKILL.md"), old, old)

	vs, err := k.lib.Keeper.AdoptAll(context.Background())
	if err != nil || len(vs) != 1 || vs[0].Dir != "devops/deploy_check.v2" || vs[0].Author.Kind != schema.AuthorAdopted {
		t.Fatalf("adopted %+v, %v", vs, err)
	}
	hist := k.history("deploy_check.v2")
	if len(hist) != 1 || hist[0].Files["scripts/smoke.sh"].Mode != 0o755 || hist[0].Files.SkillMD() != py {
		t.Fatalf("history %+v", hist)
	}
	if len(k.history("old")) != 0 {
		t.Fatal("a skill in a hidden directory was adopted")
	}
	if info, _ := os.Stat(filepath.Join(dir, "SKILL.md")); !info.ModTime().Equal(old) || read(t, filepath.Join(dir, "SKILL.md")) != py {
		t.Fatal("adoption touched the Python agent's SKILL.md")
	}
	// Projecting what was adopted writes nothing.
	if err := k.lib.Keeper.Project(context.Background(), "deploy_check.v2"); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(filepath.Join(dir, "SKILL.md")); !info.ModTime().Equal(old) {
		t.Fatal("the projection rewrote a file that had not changed")
	}
	// A patch keeps it where it is, with its linked file.
	k.must("s", map[string]any{"action": "patch", "name": "deploy_check.v2", "old_string": "Run scripts", "new_string": "Run ./scripts"})
	if got := read(t, filepath.Join(dir, "SKILL.md")); !strings.Contains(got, "Run ./scripts/smoke.sh.\r\n") {
		t.Fatalf("%q", got)
	}
	if info, err := os.Stat(filepath.Join(dir, "scripts", "smoke.sh")); err != nil || info.Mode().Perm() != 0o755 {
		t.Fatalf("linked file: %v %v", info, err)
	}
	if again, err := k.lib.Keeper.AdoptAll(context.Background()); err != nil || len(again) != 0 {
		t.Fatalf("adopted again: %+v %v", again, err)
	}
}

func TestMalformedSkillReportedAndLeftAlone(t *testing.T) {
	k := newKept(t)
	md := filepath.Join(k.home, "broken", "SKILL.md")
	write(t, md, "no frontmatter here\n")
	write(t, filepath.Join(k.home, "fine", "SKILL.md"), "---\nname: fine\ndescription: ok\n---\nbody\n")
	vs, err := k.lib.Keeper.AdoptAll(context.Background())
	var me *MalformedError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), md) {
		t.Fatalf("error %v does not name %s", err, md)
	}
	if len(vs) != 1 || vs[0].Dir != "fine" {
		t.Fatalf("the good skill beside it was not adopted: %+v", vs)
	}
	if _, err := k.run("s", map[string]any{"action": "create", "name": "broken", "content": "---\nname: broken\ndescription: x\n---\ny\n"}); err == nil {
		t.Fatal("create over a malformed skill directory succeeded")
	}
	if got := read(t, md); got != "no frontmatter here\n" {
		t.Fatalf("the malformed SKILL.md was changed: %q", got)
	}
	if n := len(k.history("broken")); n != 0 {
		t.Fatalf("%d versions of a malformed skill", n)
	}
}

func TestConcurrentPatchesBothLand(t *testing.T) {
	k := newKept(t)
	const n = 6
	var body strings.Builder
	for i := range n {
		fmt.Fprintf(&body, "line %d: todo\n", i)
	}
	k.must("s", map[string]any{"action": "create", "name": "many", "content": "---\nname: many\ndescription: lines\n---\n" + body.String()})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := k.run(fmt.Sprintf("s%d", i), map[string]any{"action": "patch", "name": "many", "old_string": fmt.Sprintf("line %d: todo", i), "new_string": fmt.Sprintf("line %d: done", i)})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := read(t, filepath.Join(k.home, "many", "SKILL.md"))
	if strings.Contains(got, "todo") || len(k.history("many")) != n+1 {
		t.Fatalf("lost a patch: %d versions, %q", len(k.history("many")), got)
	}
}

func TestRollbackRestoresBytes(t *testing.T) {
	k := newKept(t)
	k.must("s", map[string]any{"action": "create", "name": "release-checklist", "content": release})
	k.must("s", map[string]any{"action": "patch", "name": "release-checklist", "old_string": "1. Run", "new_string": "1. Do not run"})
	k.must("s", map[string]any{"action": "edit", "name": "release-checklist", "content": "---\nname: release-checklist\ndescription: short\n---\nship it\n"})
	v, err := k.lib.Keeper.Rollback(context.Background(), "release-checklist", 1, schema.SkillAuthor{Kind: schema.AuthorPerson, Person: "ada"})
	if err != nil || v.Number != 4 || v.Reason != "rollback to v1" {
		t.Fatalf("%+v %v", v, err)
	}
	if got := read(t, filepath.Join(k.home, "release-checklist", "SKILL.md")); got != release {
		t.Fatalf("rolled back to %q", got)
	}
	hist := k.history("release-checklist")
	if len(hist) != 4 || hist[3].Author.String() != "person ada" || hist[2].Files.SkillMD() == release {
		t.Fatalf("history %+v", hist)
	}
	if _, err := k.lib.Keeper.Rollback(context.Background(), "release-checklist", 9, schema.SkillAuthor{Kind: schema.AuthorPerson}); err == nil {
		t.Fatal("rollback to a version that does not exist succeeded")
	}
}

func TestDeleteArchivesAndRemovesOnlyWhatItWrote(t *testing.T) {
	k := newKept(t)
	k.must("s", map[string]any{"action": "create", "name": "release-checklist", "content": release})
	dir := filepath.Join(k.home, "release-checklist")
	write(t, filepath.Join(dir, ".notes"), "mine") // hidden: not part of the skill
	out := k.must("s", map[string]any{"action": "delete", "name": "release-checklist"})
	if !strings.Contains(out, "version 2") {
		t.Fatalf("%q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "SKILL.md")); !os.IsNotExist(err) {
		t.Fatal("SKILL.md of a deleted skill is still there")
	}
	if read(t, filepath.Join(dir, ".notes")) != "mine" {
		t.Fatal("a file hermes did not write was removed")
	}
	if _, err := k.lib.Get("release-checklist"); err == nil {
		t.Fatal("a deleted skill is still listed")
	}
	hist := k.history("release-checklist")
	if len(hist) != 2 || !hist[1].Archived {
		t.Fatalf("%+v", hist)
	}
	// Rolling back to v1 brings it back.
	if _, err := k.lib.Keeper.Rollback(context.Background(), "release-checklist", 1, schema.SkillAuthor{Kind: schema.AuthorPerson, Person: "ada"}); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(dir, "SKILL.md")) != release {
		t.Fatal("rollback did not restore the archived skill")
	}
}

func TestLargeLinkedFileKeptByHash(t *testing.T) {
	k := newKept(t)
	dir := filepath.Join(k.home, "media")
	write(t, filepath.Join(dir, "SKILL.md"), "---\nname: media\ndescription: uses a big asset\n---\nsee assets/big.bin\n")
	big := strings.Repeat("x", maxFileBytes+1)
	write(t, filepath.Join(dir, "assets", "big.bin"), big)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "assets", "big.bin"), old, old)
	if _, err := k.lib.Keeper.AdoptAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := k.history("media")[0].Files["assets/big.bin"]
	if f.Kept() || f.Size != int64(len(big)) || f.Sum() != digest([]byte(big)) {
		t.Fatalf("big file in the stream: kept %v size %d", f.Kept(), f.Size)
	}
	k.must("s", map[string]any{"action": "patch", "name": "media", "old_string": "see assets", "new_string": "open assets"})
	if info, err := os.Stat(filepath.Join(dir, "assets", "big.bin")); err != nil || !info.ModTime().Equal(old) || info.Size() != int64(len(big)) {
		t.Fatalf("the big file was touched: %v %v", info, err)
	}
	// A change to it on disk is seen and adopted.
	write(t, filepath.Join(dir, "assets", "big.bin"), big+"y")
	vs, err := k.lib.Keeper.AdoptAll(context.Background())
	if err != nil || len(vs) != 1 || vs[0].Files["assets/big.bin"].Sum() != digest([]byte(big+"y")) {
		t.Fatalf("%+v %v", vs, err)
	}
}

func TestProjectionLeavesForeignDirectory(t *testing.T) {
	k := newKept(t)
	k.must("s", map[string]any{"action": "create", "name": "release-checklist", "content": release})
	md := filepath.Join(k.home, "release-checklist", "SKILL.md")
	edited := release + "3. Announce it.\n"
	write(t, md, edited)
	// The projection meets the hand edit before anything adopted it.
	err := k.lib.Keeper.Project(context.Background(), "release-checklist")
	var fe *ForeignError
	if !errors.As(err, &fe) || read(t, md) != edited {
		t.Fatalf("projection over a hand edit: %v, file %q", err, read(t, md))
	}
}

// BenchmarkAdoptAllUnchanged is what opening a home costs for its skills
// once they are adopted: every directory read and compared with its
// stream's last version.
func BenchmarkAdoptAllUnchanged(b *testing.B) {
	dir := b.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	home := filepath.Join(dir, "skills")
	const n = 100
	for i := range n {
		name := fmt.Sprintf("skill-%03d", i)
		p := filepath.Join(home, "cat", name, "SKILL.md")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("---\nname: "+name+"\ndescription: d\n---\n"+strings.Repeat("step\n", 200)), 0o644)
	}
	k := NewKeeper(store, home)
	start := time.Now()
	if vs, err := k.AdoptAll(context.Background()); err != nil || len(vs) != n {
		b.Fatalf("%d adopted, %v", len(vs), err)
	}
	first := time.Since(start)
	b.ResetTimer()
	for range b.N {
		if vs, err := k.AdoptAll(context.Background()); err != nil || len(vs) != 0 {
			b.Fatalf("%d adopted, %v", len(vs), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/n, "µs/skill")
	b.ReportMetric(float64(first.Milliseconds()), "ms/first-adoption")
}

func TestRestoreBringsBackTheArchivedFiles(t *testing.T) {
	k := newKept(t)
	k.must("s", map[string]any{"action": "create", "name": "release-checklist", "content": release})
	k.must("s", map[string]any{"action": "delete", "name": "release-checklist"})
	md := filepath.Join(k.home, "release-checklist", "SKILL.md")
	if _, err := os.Stat(md); !os.IsNotExist(err) {
		t.Fatal("not archived")
	}
	v, err := k.lib.Keeper.Change(context.Background(), "release-checklist", func(latest *Version) (schema.Payload, error) {
		return schema.SkillRestored{Name: "release-checklist", Author: schema.SkillAuthor{Kind: schema.AuthorCurator, CuratorRun: "run-1"}, Reason: "still used"}, nil
	})
	if err != nil || v.Number != 3 || v.Archived || v.Author.String() != "curator run-1" {
		t.Fatalf("%+v %v", v, err)
	}
	if read(t, md) != release {
		t.Fatal("restore did not bring the files back")
	}
}

func TestWrittenDirectoryWithoutStreamIsAdoptedOnChange(t *testing.T) {
	k := newKept(t)
	k.must("s", map[string]any{"action": "create", "name": "release-checklist", "content": release})
	// The log is replaced by an empty one; the record of what was written stays.
	store, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	k.lib.Keeper.Store = store
	k.must("s", map[string]any{"action": "patch", "name": "release-checklist", "old_string": "1. Run", "new_string": "1. Always run"})
	hist := k.history("release-checklist")
	if len(hist) != 2 || hist[0].Action != "adopt" || hist[1].Action != "patch" {
		t.Fatalf("%+v", hist)
	}
}
