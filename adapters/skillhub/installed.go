package skillhub

import (
	"context"
	"fmt"

	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/schema"
)

// Installed is what the hub last wrote of a skill, read from its history:
// no state of the hub's own is kept beside the skills' streams.
type Installed struct {
	Name   string
	Origin Origin
	// Version is the version the hub wrote (install or update).
	Version skills.Version
	// Modified: a later version (a hand edit, skill_manage, a rollback)
	// changed the files since.
	Modified bool
	// Archived: uninstalled or archived since.
	Archived bool
}

// InstalledOf reads from a skill's history what the hub installed of it;
// false when the hub never did.
func InstalledOf(hist []skills.Version, github string) (Installed, bool, error) {
	for i := len(hist) - 1; i >= 0; i-- {
		v := hist[i]
		if v.Author.Kind != schema.AuthorHub || (v.Action != "install" && v.Action != "update") {
			continue
		}
		o, err := ParseOrigin(v.Author.Hub, github)
		if err != nil {
			return Installed{}, false, fmt.Errorf("version %d: %w", v.Number, err)
		}
		s, _ := skills.Parse(v.Files.SkillMD())
		latest := hist[len(hist)-1]
		return Installed{Name: s.Name, Origin: o, Version: v, Archived: latest.Archived,
			Modified: !latest.Archived && latest.Files.Hash() != v.Files.Hash()}, true, nil
	}
	return Installed{}, false, nil
}

// Write makes b a version of the home library's skill of its name, by the
// hub (action install or update): a skill of that name there already, not
// archived, is replaced only when replace is set, as a new version.
func Write(ctx context.Context, k *skills.Keeper, b Bundle, action string, replace bool, reason string) (skills.Version, error) {
	author := schema.SkillAuthor{Kind: schema.AuthorHub, Hub: b.Origin.String()}
	return k.Change(ctx, b.Name, func(latest *skills.Version) (schema.Payload, error) {
		dir := b.Name
		if latest != nil {
			if !latest.Archived && !replace {
				return nil, fmt.Errorf("%w: %s (use --force to replace it; its history stays)", skills.ErrSkillExists, b.Name)
			}
			dir = latest.Dir
		}
		return schema.SkillWritten{Name: b.Name, Action: action, Content: b.Files.SkillMD(), Dir: dir, Files: b.Files.Linked(),
			Author: &author, Reason: reason}, nil
	})
}
