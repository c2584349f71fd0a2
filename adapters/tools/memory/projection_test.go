package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/schema"
)

// TestMain lets the test binary act as a helper process: the crash test
// starts it again with HERMES_HELPER set.
func TestMain(m *testing.M) {
	var err error
	switch os.Getenv("HERMES_HELPER") {
	case "memory-feeder":
		err = feedForever(os.Getenv("HERMES_HOME"))
	case "memory-crash-in-flush":
		err = crashInFlush(os.Getenv("HERMES_HOME"))
	default:
		os.Exit(m.Run())
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// home is an event store, a projections database and the memory files
// projection of one directory.
type home struct {
	dir   string
	store *embedded.Store
	db    *projections.DB
	run   *projections.Runner
}

func openHome(t testing.TB, dir string) *home {
	h, err := open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.db.Close(); h.store.Close() })
	return h
}

func open(dir string) (*home, error) {
	return openWith(dir, NewFilesModel(filepath.Join(dir, "memories")))
}

func openWith(dir string, m projections.Model) (*home, error) {
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		return nil, err
	}
	db, err := projections.OpenDB(filepath.Join(dir, "projections.db"))
	if err != nil {
		store.Close()
		return nil, err
	}
	run := projections.NewRunner(store, zerolog.Nop(), db.Projection(m))
	return &home{dir: dir, store: store, db: db, run: run}, nil
}

func (h *home) memories() string { return filepath.Join(h.dir, "memories") }

// remember appends a memory change of target without the tool (which
// writes the file itself): only the projection writes the file.
func remember(ctx context.Context, s events.Store, target string, entries ...string) (uint64, error) {
	ev, err := schema.NewEnvelope(schema.Meta{SessionID: "s1"}, schema.MemoryUpdated{Target: target, Action: "add", Entries: entries})
	if err != nil {
		return 0, err
	}
	res, err := s.Append(ctx, Stream, events.Any, ev)
	return res.Position, err
}

// chatter appends an event no memory file depends on.
func chatter(t *testing.T, s events.Store, i int) {
	ev, err := schema.NewEnvelope(schema.Meta{SessionID: fmt.Sprintf("chat%d", i)}, schema.SessionStarted{Source: "cli", Reason: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(context.Background(), events.SessionStream(fmt.Sprintf("chat%d", i)), events.Any, ev); err != nil {
		t.Fatal(err)
	}
}

// snapshot is what a directory holds: each entry's name, inode, size and
// modification time; the locks and the records of what was written (see
// disk.go) are left out.
func snapshot(t *testing.T, dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".lock") || strings.HasSuffix(e.Name(), ".written") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sys().(*syscall.Stat_t)
		out = append(out, fmt.Sprintf("%s ino=%d size=%d mtime=%d", e.Name(), st.Ino, info.Size(), info.ModTime().UnixNano()))
	}
	return out
}

func checkpoint(t *testing.T, h *home) uint64 {
	cp, err := h.run.Projections()[0].Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func TestFilesAreAProjection(t *testing.T) {
	tool, ctx, _ := setup(t)
	h := openHome(t, filepath.Dir(tool.Dir))
	tool.Store = h.store
	call(t, tool, ctx, map[string]any{"action": "add", "target": "memory", "content": "one"})
	call(t, tool, ctx, map[string]any{"action": "add", "target": "user", "content": "likes tea"})
	os.RemoveAll(tool.Dir)
	if err := h.run.Rebuild(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	m, _ := os.ReadFile(filepath.Join(tool.Dir, "MEMORY.md"))
	u, _ := os.ReadFile(filepath.Join(tool.Dir, "USER.md"))
	if string(m) != "one\n" || string(u) != "likes tea\n" {
		t.Fatalf("rebuilt %q %q", m, u)
	}
}

// TestBatchesThatChangeNothingWriteNothing: batches without a memory
// change, and one whose change leaves the file as it is, neither create,
// replace nor touch a file (the directory's entries keep their inodes and
// times), while the checkpoint follows the log; a change that alters the
// file still writes it.
func TestBatchesThatChangeNothingWriteNothing(t *testing.T) {
	ctx := context.Background()
	h := openHome(t, t.TempDir())
	if _, err := remember(ctx, h.store, "memory", "one"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, h.memories())
	if len(before) != 1 || !strings.HasPrefix(before[0], "MEMORY.md ") {
		t.Fatalf("after the first change the directory holds %v, want MEMORY.md alone", before)
	}
	for i := range 20 {
		chatter(t, h.store, i)
		if i == 10 {
			if _, err := remember(ctx, h.store, "memory", "one"); err != nil { // the same entries again
				t.Fatal(err)
			}
		}
		head, err := h.run.CatchUp(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cp := checkpoint(t, h); cp != head {
			t.Fatalf("batch %d: checkpoint %d, head %d", i, cp, head)
		}
	}
	if after := snapshot(t, h.memories()); !slices.Equal(before, after) {
		t.Fatalf("batches that changed nothing touched the files:\nbefore %v\nafter  %v", before, after)
	}
	// Positive control: a change is written.
	if _, err := remember(ctx, h.store, "memory", "one", "two"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(h.memories(), "MEMORY.md")); string(b) != "one\n§\ntwo\n" {
		t.Fatalf("MEMORY.md %q after a change", b)
	}
	if after := snapshot(t, h.memories()); slices.Equal(before, after) {
		t.Fatal("a change left MEMORY.md as it was")
	}
}

// TestResetSweepsStaleFiles: a rebuild over a log without a target's
// events removes that target's file if this build wrote it (from another
// log), and one interrupted before its commit leaves the files its
// checkpoint describes.
func TestResetSweepsStaleFiles(t *testing.T) {
	ctx := context.Background()
	h := openHome(t, t.TempDir())
	if _, err := remember(ctx, h.store, "memory", "kept"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(h.memories(), "USER.md")
	if err := WriteFile(h.memories(), "user", []string{"from a log replaced since"}); err != nil {
		t.Fatal(err)
	}
	// A reset alone (a rebuild that has applied nothing yet) keeps every
	// file: its checkpoint, 0, lags them.
	p, _ := h.run.Find("memory_files")
	if err := p.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("the reset removed USER.md before any batch: %v", err)
	}
	if _, err := h.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("USER.md, of no event in the log, survived the rebuild: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(h.memories(), "MEMORY.md")); string(b) != "kept\n" {
		t.Fatalf("MEMORY.md %q after the rebuild", b)
	}
}

// TestRebuildLeavesForeignFiles: a file this build did not write (the
// Python agent's USER.md, of no event in the log; a MEMORY.md edited by
// hand after the projection wrote it) is neither removed nor written over
// by a rebuild, byte for byte.
func TestRebuildLeavesForeignFiles(t *testing.T) {
	ctx := context.Background()
	h := openHome(t, t.TempDir())
	if _, err := remember(ctx, h.store, "memory", "one"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	user := filepath.Join(h.memories(), "USER.md")
	mem := filepath.Join(h.memories(), "MEMORY.md")
	const userText = "Name: Ada\n§\nPrefers metric units"
	const memText = "one\n§\nadded in an editor\n"
	os.WriteFile(user, []byte(userText), 0o644)
	os.WriteFile(mem, []byte(memText), 0o644)
	if err := h.run.Rebuild(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := remember(ctx, h.store, "memory", "two"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(user); err != nil || string(b) != userText {
		t.Fatalf("USER.md after the rebuild: %q %v", b, err)
	}
	if b, err := os.ReadFile(mem); err != nil || string(b) != memText {
		t.Fatalf("MEMORY.md after the rebuild and a change: %q %v", b, err)
	}
}

// TestLegacyCheckpointFileIsAdopted: a home whose files the earlier
// projection wrote (its .checkpoint file beside them) keeps them untouched
// through the rebuild the new checkpoint starts, and loses the old file.
func TestLegacyCheckpointFileIsAdopted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	pos, err := remember(ctx, store, "user", "likes tea")
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	mem := filepath.Join(dir, "memories")
	os.MkdirAll(mem, 0o700)
	os.WriteFile(filepath.Join(mem, "USER.md"), []byte("likes tea\n"), 0o600)
	os.WriteFile(filepath.Join(mem, "MEMORY.md"), []byte(""), 0o600)
	os.WriteFile(filepath.Join(mem, ".checkpoint"), []byte(strconv.FormatUint(pos, 10)), 0o600)
	before := snapshot(t, mem)
	h := openHome(t, dir)
	if _, err := h.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, mem)
	want := slices.DeleteFunc(before, func(s string) bool { return strings.HasPrefix(s, ".checkpoint ") })
	if !slices.Equal(after, want) {
		t.Fatalf("adopting the earlier projection's files:\nbefore %v\nafter  %v", before, after)
	}
}

// feedForever is the helper process of the crash test: it feeds the memory
// files projection live while appending memory changes ("fact N", one
// entry), each once the projection has applied the one before (one change
// a batch), until it is killed.
func feedForever(dir string) error {
	h, err := open(dir)
	if err != nil {
		return err
	}
	ctx := context.Background()
	go h.run.Run(ctx)
	n, _, err := Current(ctx, h.store, "memory")
	if err != nil {
		return err
	}
	next := 0
	if len(n) == 1 {
		next, _ = strconv.Atoi(strings.TrimPrefix(n[0], "fact "))
		next++
	}
	for ; ; next++ {
		pos, err := remember(ctx, h.store, "memory", fmt.Sprintf("fact %d", next))
		if err != nil {
			return err
		}
		if err := h.run.WaitFor(ctx, pos); err != nil {
			return err
		}
	}
}

// crashingModel kills its process in the Flush that has written the files
// of a batch holding a change, before the batch's transaction commits.
type crashingModel struct{ *FilesModel }

func (c crashingModel) Flush(tx *projections.Tx) error {
	changed := len(c.pending) > 0
	if err := c.FilesModel.Flush(tx); err != nil {
		return err
	}
	if changed {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	return nil
}

// crashInFlush is the helper process that dies between writing the files
// of a change and committing its checkpoint.
func crashInFlush(dir string) error {
	h, err := openWith(dir, crashingModel{NewFilesModel(filepath.Join(dir, "memories"))})
	if err != nil {
		return err
	}
	_, err = h.run.CatchUp(context.Background())
	return err
}

// TestCrashBetweenFilesAndCheckpoint: a process killed after writing a
// change's file but before committing the batch leaves the checkpoint
// behind the file; the next catch-up re-applies the change without
// rewriting the file, and the checkpoint reaches the log's head.
func TestCrashBetweenFilesAndCheckpoint(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	h := openHome(t, dir)
	if _, err := remember(ctx, h.store, "memory", "one"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	before := checkpoint(t, h)
	pos, err := remember(ctx, h.store, "memory", "one", "two")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HERMES_HELPER=memory-crash-in-flush", "HERMES_HOME="+dir)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the helper did not die in its flush: %v\n%s", err, out)
	}
	file := filepath.Join(dir, "memories", "MEMORY.md")
	if b, _ := os.ReadFile(file); string(b) != "one\n§\ntwo\n" {
		t.Fatalf("the helper did not write the change before dying: %q", b)
	}
	if cp := checkpoint(t, h); cp != before {
		t.Fatalf("checkpoint %d after the crash, want %d: the dead batch's checkpoint was committed", cp, before)
	}
	written := snapshot(t, filepath.Join(dir, "memories"))
	head, err := h.run.CatchUp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cp := checkpoint(t, h); cp != head || head < pos {
		t.Fatalf("after recovery checkpoint %d, head %d, the change at %d", cp, head, pos)
	}
	if after := snapshot(t, filepath.Join(dir, "memories")); !slices.Equal(written, after) {
		t.Fatalf("recovery rewrote a file that already held its state:\nbefore %v\nafter  %v", written, after)
	}
}

// TestKill9NeverLeavesTheCheckpointAhead kills the process feeding the
// projection at random moments: each time, the files hold the state of
// the checkpoint's position or of a later one, never an earlier one, and a
// catch-up then brings them to the log's last state.
func TestKill9NeverLeavesTheCheckpointAhead(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	ctx := context.Background()
	dir := t.TempDir()
	checked := 0
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "HERMES_HELPER=memory-feeder", "HERMES_HOME="+dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(150+rand.IntN(250)) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		if stderr.Len() > 0 {
			t.Fatalf("round %d: helper: %s", round, stderr.String())
		}
		h, err := open(dir)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := h.run.Projections()[0].Checkpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The position of each "fact N" event.
		rs, err := h.store.ReadStream(ctx, Stream, events.Forward, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		at := map[string]uint64{}
		var covered uint64 // the last change the checkpoint says is applied
		for _, r := range rs {
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.Join(p.(schema.MemoryUpdated).Entries, Separator) + "\n"
			at[text] = r.Position
			if r.Position <= cp {
				covered = r.Position
			}
		}
		b, err := os.ReadFile(filepath.Join(dir, "memories", "MEMORY.md"))
		switch {
		case err != nil && covered > 0:
			t.Fatalf("round %d: checkpoint %d covers the change at %d, but MEMORY.md: %v", round, cp, covered, err)
		case err == nil && at[string(b)] < covered:
			t.Fatalf("round %d: checkpoint %d is ahead of MEMORY.md %q (the change at %d; the checkpoint covers %d)",
				round, cp, b, at[string(b)], covered)
		}
		if covered > 0 {
			checked++
		}
		h.db.Close()
		h.store.Close()
	}
	if checked == 0 {
		t.Fatal("the helper never got a change applied before it was killed: nothing was checked")
	}
	h := openHome(t, dir)
	if _, err := h.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	last, _, err := Current(ctx, h.store, "memory")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "memories", "MEMORY.md")); string(b) != strings.Join(last, Separator)+"\n" {
		t.Fatalf("after recovery MEMORY.md %q, the log's last state %q", b, last)
	}
}

// hookedModel runs hook once, in the first Flush, before the files are
// written: a memory tool in another process changing memory while the
// projection's batch is in flight.
type hookedModel struct {
	*FilesModel
	hook *func()
}

func (m hookedModel) Flush(tx *projections.Tx) error {
	if f := *m.hook; f != nil {
		*m.hook = nil
		f()
	}
	return m.FilesModel.Flush(tx)
}

// TestLaggingProjectionKeepsNewerFile: a batch applying a change older
// than the one a memory tool has since written to the file leaves the
// file as the tool wrote it (the Python agent may read it in between).
func TestLaggingProjectionKeepsNewerFile(t *testing.T) {
	tool, ctx, _ := setup(t)
	dir := filepath.Dir(tool.Dir)
	store, err := embedded.Open(filepath.Join(dir, "lagging.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tool.Store = store
	fm := NewFilesModel(tool.Dir)
	fm.Store = store
	var hook func()
	h, err := openWithStore(dir, store, hookedModel{fm, &hook})
	if err != nil {
		t.Fatal(err)
	}
	defer h.db.Close()
	if _, err := remember(ctx, store, "memory", "one"); err != nil {
		t.Fatal(err)
	}
	hook = func() {
		if _, err := call(t, tool, ctx, map[string]any{"action": "add", "target": "memory", "content": "two"}); err != nil {
			t.Error(err)
		}
	}
	if _, err := h.run.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(tool.Dir, "MEMORY.md")); string(b) != "one\n§\ntwo\n" {
		t.Fatalf("MEMORY.md %q: the lagging batch wrote its older state", b)
	}
}

func openWithStore(dir string, store *embedded.Store, m projections.Model) (*home, error) {
	db, err := projections.OpenDB(filepath.Join(dir, "lagging-projections.db"))
	if err != nil {
		return nil, err
	}
	run := projections.NewRunner(store, zerolog.Nop(), db.Projection(m))
	return &home{dir: dir, store: store, db: db, run: run}, nil
}
