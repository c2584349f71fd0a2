package skills

import (
	"context"
	"errors"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/schema"
)

// FilesModel is the projection that writes the home library's skill
// directories from the skills' streams. It is kept as a model of the
// home's projections database (see projections.DB.Projection); a batch
// that holds a skill's event makes the skill's directory hold the
// stream's last version (Keeper.Project), so a batch re-applied after a
// crash, or a rebuild, changes nothing that is already right. A directory
// it did not write (the Python agent's, a hand edit) is never written over
// nor removed: it is left for Keeper.AdoptAll to take into the stream, and
// Log says so. A rebuild does not remove directories either: a skill
// without events is adopted, not swept.
//
// Its table, skill_dirs, lists the skills it has projected.
type FilesModel struct {
	Keeper *Keeper
	// Log hears of directories left alone (the zero Logger: nothing).
	Log     zerolog.Logger
	pending map[string]bool
}

// NewFilesModel returns the skills projection of k.
func NewFilesModel(k *Keeper) *FilesModel {
	return &FilesModel{Keeper: k, pending: map[string]bool{}}
}

// Name names the projection in status and rebuild commands.
func (*FilesModel) Name() string { return "skill_files" }

// Version is the shape of its table.
func (*FilesModel) Version() int { return 1 }

// PayloadTypes implements projections.Selective.
func (*FilesModel) PayloadTypes() []string {
	return []string{schema.TypeSkillWritten, schema.TypeSkillPatched, schema.TypeSkillArchived, schema.TypeSkillRestored}
}

// Create makes the table.
func (*FilesModel) Create(tx *projections.Tx) error {
	return tx.ExecSchema(`CREATE TABLE IF NOT EXISTS skill_dirs (name TEXT PRIMARY KEY) WITHOUT ROWID`)
}

// Drop removes the table; the directories stay.
func (*FilesModel) Drop(tx *projections.Tx) error {
	_, err := tx.Exec(`DROP TABLE IF EXISTS skill_dirs`)
	return err
}

// Forget drops what the batch gathered.
func (m *FilesModel) Forget() { clear(m.pending) }

// Apply notes the skills the batch changes.
func (m *FilesModel) Apply(_ *projections.Tx, ev projections.Event) error {
	if name := NameOf(ev.Stream); name != "" && ev.Payload != nil {
		m.pending[name] = true
	}
	return nil
}

// Flush writes the directories of the skills the batch changed.
func (m *FilesModel) Flush(tx *projections.Tx) error {
	defer clear(m.pending)
	for name := range m.pending {
		err := m.Keeper.Project(context.Background(), name)
		var fe *ForeignError
		var me *MalformedError
		switch {
		case errors.As(err, &fe) || errors.As(err, &me):
			m.Log.Warn().Err(err).Str("skill", name).Msg("skill directory left as it is")
		case err != nil:
			return err
		}
		if _, err := tx.Exec(`INSERT INTO skill_dirs (name) VALUES (?) ON CONFLICT (name) DO NOTHING`, name); err != nil {
			return err
		}
	}
	return nil
}

var (
	_ projections.Model     = (*FilesModel)(nil)
	_ projections.Selective = (*FilesModel)(nil)
)
