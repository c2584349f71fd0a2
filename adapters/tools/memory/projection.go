package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/schema"
)

// FilesModel is the projection that writes MEMORY.md and USER.md from the
// memory stream. It is kept as a model of the home's projections database
// (see projections.DB.Projection): its checkpoint is a row there, advanced
// in the transaction of each batch after the batch's files are written, so
// it may lag the files but never lead them, and a batch costs no file
// operation unless it holds a memory change that alters a file. Writing
// the latest state is idempotent, so re-applying a batch after a crash
// changes nothing.
//
// Its table, memory_files, lists the targets whose files the projection has
// written or swept since it was last reset: a reset empties it (in the
// reset's transaction, leaving the files alone), and the first batch after
// it removes the file of every target not listed and not in the batch,
// which a log without that target's events must not keep, if this build
// wrote that file. A file it did not write (the Python agent's, a hand
// edit: see disk.go) is never written over nor removed: it is left for
// Adopt to take into the stream, and Log says so.
type FilesModel struct {
	// Dir is $HERMES_HOME/memories.
	Dir string
	// Log hears of files left alone (the zero Logger: nothing).
	Log zerolog.Logger
	// Store, when set, is the log the projection follows: a batch then
	// writes a target's file only if its state is the stream's latest, so
	// that a projection lagging behind a memory tool (which writes the
	// file itself) never puts an older state on disk for the Python agent
	// to read and build on.
	Store events.Store
	// pending is the latest entries of each target met in the batch.
	pending map[string][]string
	// swept is set once this process saw every target listed; cleared by
	// Forget.
	swept bool
}

// NewFilesModel returns the memory files projection writing into dir.
func NewFilesModel(dir string) *FilesModel {
	return &FilesModel{Dir: dir, pending: map[string][]string{}}
}

// Name names the projection in status and rebuild commands.
func (*FilesModel) Name() string { return "memory_files" }

// Version is the shape of its table.
func (*FilesModel) Version() int { return 1 }

// PayloadTypes implements projections.Selective.
func (*FilesModel) PayloadTypes() []string { return []string{schema.TypeMemoryUpdated} }

// legacyCheckpoint is where the projection kept its checkpoint before it
// moved into the projections database: a file replaced after every batch.
func (m *FilesModel) legacyCheckpoint() string { return filepath.Join(m.Dir, ".checkpoint") }

// Create makes the table. A home whose files were written by the earlier
// projection (its checkpoint file is there) keeps them: they are listed as
// owned, so the first batch does not sweep them, and the rebuild from the
// log that the new checkpoint starts rewrites only what differs.
func (m *FilesModel) Create(tx *projections.Tx) error {
	if err := tx.ExecSchema(`CREATE TABLE IF NOT EXISTS memory_files (target TEXT PRIMARY KEY) WITHOUT ROWID`); err != nil {
		return err
	}
	if _, err := os.Lstat(m.legacyCheckpoint()); err != nil {
		return nil
	}
	for target := range Files {
		if err := m.own(tx, target); err != nil {
			return err
		}
	}
	if err := os.Remove(m.legacyCheckpoint()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	m.swept = false
	return nil
}

// Drop removes the table; the files stay until the next batch sweeps them
// (see FilesModel), so that a reset that does not commit leaves the files
// its checkpoint describes.
func (m *FilesModel) Drop(tx *projections.Tx) error {
	_, err := tx.Exec(`DROP TABLE IF EXISTS memory_files`)
	m.swept = false
	return err
}

// Forget drops what the model gathered or learnt: another process wrote
// the projection, or a transaction was rolled back.
func (m *FilesModel) Forget() {
	clear(m.pending)
	m.swept = false
}

// Apply gathers the latest entries of each target.
func (m *FilesModel) Apply(_ *projections.Tx, ev projections.Event) error {
	if ev.Stream != Stream || ev.Payload == nil {
		return nil
	}
	if u, ok := ev.Payload.(schema.MemoryUpdated); ok {
		m.pending[u.Target] = u.Entries
	}
	return nil
}

// Flush writes the files of the targets the batch changed (those whose
// content differs), and after a reset sweeps the files of the others.
func (m *FilesModel) Flush(tx *projections.Tx) error {
	defer clear(m.pending)
	if !m.swept {
		if err := m.sweep(tx); err != nil {
			return err
		}
	}
	for target, entries := range m.pending {
		if _, ok := Files[target]; !ok {
			continue
		}
		if err := m.write(disk{m.Dir, target}, entries); err != nil {
			return err
		}
		if err := m.own(tx, target); err != nil {
			return err
		}
	}
	return nil
}

// write writes d's file from entries if the file is ours or missing, under
// its lock; a foreign or unreadable file is left alone, with a warning.
func (m *FilesModel) write(d disk, entries []string) error {
	unlock, err := lockFile(d)
	if err != nil {
		return err
	}
	defer unlock()
	if m.Store != nil {
		latest, _, err := Current(context.Background(), m.Store, d.target)
		if err != nil {
			return err
		}
		if !slices.Equal(latest, entries) {
			return nil // a later change is in the log: its batch writes the file
		}
	}
	text, exists, err := d.read()
	if err != nil {
		m.Log.Warn().Err(err).Str("file", d.path()).Msg("memory file left as it is")
		return nil
	}
	if exists && !d.ours(text, entries) {
		m.Log.Warn().Str("file", d.path()).Msg("memory file changed outside hermes: left as it is, to be adopted the next time hermes starts")
		return nil
	}
	return d.write(text, exists, entries)
}

// sweep removes the file of every target the table does not list and the
// batch does not write, and lists them.
func (m *FilesModel) sweep(tx *projections.Tx) error {
	rows, err := tx.Query(`SELECT target FROM memory_files`)
	if err != nil {
		return err
	}
	owned := map[string]bool{}
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		owned[t] = true
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for target, name := range Files {
		if owned[target] {
			continue
		}
		if _, ok := m.pending[target]; !ok {
			if err := m.remove(disk{m.Dir, target}); err != nil {
				return fmt.Errorf("remove %s: %w", name, err)
			}
		}
		if err := m.own(tx, target); err != nil {
			return err
		}
	}
	m.swept = true
	return nil
}

// remove removes d's file if this build wrote it, under its lock — unless
// the log already holds entries for it: a change committed after this
// batch was read (its command wrote the file), which a later batch owns.
func (m *FilesModel) remove(d disk) error {
	if _, err := os.Lstat(d.path()); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	unlock, err := lockFile(d)
	if err != nil {
		return err
	}
	defer unlock()
	if m.Store != nil {
		latest, _, err := Current(context.Background(), m.Store, d.target)
		if err != nil {
			return err
		}
		if len(latest) > 0 {
			return nil
		}
	}
	return d.remove()
}

// own lists target in the table.
func (m *FilesModel) own(tx *projections.Tx, target string) error {
	_, err := tx.Exec(`INSERT INTO memory_files (target) VALUES (?) ON CONFLICT (target) DO NOTHING`, target)
	return err
}

var (
	_ projections.Model     = (*FilesModel)(nil)
	_ projections.Selective = (*FilesModel)(nil)
)
