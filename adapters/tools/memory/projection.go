package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/schema"
)

// Files is the projection that writes MEMORY.md and USER.md from the
// memory stream. Writing the latest state is idempotent, so its checkpoint
// file may lag the files without harm.
type FilesProjection struct{ Dir string }

func (FilesProjection) Name() string { return "memory_files" }

// PayloadTypes implements projections.Selective.
func (FilesProjection) PayloadTypes() []string { return []string{schema.TypeMemoryUpdated} }

func (p FilesProjection) checkpointPath() string { return filepath.Join(p.Dir, ".checkpoint") }

func (p FilesProjection) Checkpoint(context.Context) (uint64, error) {
	b, err := os.ReadFile(p.checkpointPath())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

func (p FilesProjection) Apply(ctx context.Context, batch []projections.Event) error {
	cp, err := p.Checkpoint(ctx)
	if err != nil {
		return err
	}
	latest := map[string][]string{}
	for _, ev := range batch {
		if ev.Position <= cp || ev.Stream != Stream || ev.Payload == nil {
			continue
		}
		m := ev.Payload.(schema.MemoryUpdated)
		latest[m.Target] = m.Entries
	}
	for target, entries := range latest {
		if err := WriteFile(p.Dir, target, entries); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return err
	}
	// Other processes read the checkpoint at any moment: replace it whole.
	tmp, err := os.CreateTemp(p.Dir, ".checkpoint-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(strconv.FormatUint(batch[len(batch)-1].Position, 10)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p.checkpointPath())
}

func (p FilesProjection) Reset(context.Context) error {
	for _, f := range Files {
		if err := os.Remove(filepath.Join(p.Dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.Remove(p.checkpointPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
