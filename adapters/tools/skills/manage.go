package skills

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/schema"
)

// manageArgs are skill_manage's arguments.
type manageArgs struct {
	Action    string `json:"action"`
	Name      string `json:"name"`
	Content   string `json:"content"`
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
	Reason    string `json:"reason"`
	// Category files a new skill under a directory of the skills
	// directory (create); FilePath and FileContent are a linked file
	// (write_file, remove_file).
	Category    string `json:"category"`
	FilePath    string `json:"file_path"`
	FileContent string `json:"file_content"`
}

// validCategory is a category: directories named as skills are, one or
// more, slash-separated.
var validCategory = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}(/[a-z0-9][a-z0-9._-]{0,63})*$`)

// check refuses a category or a linked file's path that would leave the
// skills directory or the skill's linked-file directories.
func (a manageArgs) check() error {
	if a.Category != "" && (a.Action != "create" || !validCategory.MatchString(a.Category)) {
		if a.Action != "create" {
			return errors.New("category is given with action=create only (a skill keeps its directory)")
		}
		return fmt.Errorf("category %q: use lowercase directory names (devops, or devops/deploy)", a.Category)
	}
	if a.Action == "write_file" || a.Action == "remove_file" {
		p := path.Clean(a.FilePath)
		top, _, _ := strings.Cut(p, "/")
		if a.FilePath == "" || !filepath.IsLocal(filepath.FromSlash(p)) || !strings.Contains(p, "/") || !slices.Contains(linkDirs, top) {
			return fmt.Errorf("file_path %q: give a file under %s of the skill", a.FilePath, strings.Join(linkDirs, "/, ")+"/")
		}
	}
	return nil
}

// keep runs skill_manage on a library kept as events: each action is an
// event of the skill's stream, made on top of what the directory holds
// (adopted first), and the answer names the version written.
func (t manageTool) keep(ctx context.Context, a manageArgs) (string, error) {
	k := t.l.Keeper
	env := tool.EnvFrom(ctx)
	author := schema.SkillAuthor{Kind: schema.AuthorSession, SessionID: env.SessionID, TurnID: env.TurnID}
	if env.ReviewOf != "" {
		author = schema.SkillAuthor{Kind: schema.AuthorReview, ReviewID: env.SessionID, SessionID: env.ReviewOf, TurnID: env.ReviewOfTurn}
	}
	reason := a.Reason
	if reason == "" {
		reason = "skill_manage " + a.Action
	}
	checkContent := func() error {
		s, err := Parse(a.Content)
		if err != nil {
			return fmt.Errorf("content is not a valid SKILL.md: %w", err)
		}
		if s.Name != a.Name {
			return fmt.Errorf("the frontmatter names %q but name is %q", s.Name, a.Name)
		}
		return nil
	}
	live := func(latest *Version) error {
		if latest == nil || latest.Archived {
			return fmt.Errorf("no skill %s in %s", a.Name, k.Dir)
		}
		return nil
	}
	var change func(latest *Version) (schema.Payload, error)
	switch a.Action {
	case "create":
		if err := checkContent(); err != nil {
			return "", err
		}
		change = func(latest *Version) (schema.Payload, error) {
			if latest != nil && !latest.Archived {
				return nil, fmt.Errorf("skill %s exists; use action=patch or edit to change it", a.Name)
			}
			dir := a.Name
			if a.Category != "" {
				dir = a.Category + "/" + a.Name
			}
			if latest != nil {
				dir = latest.Dir
			}
			return schema.SkillWritten{Name: a.Name, Action: "create", Content: a.Content, Dir: dir, Author: &author, Reason: reason}, nil
		}
	case "edit":
		if err := checkContent(); err != nil {
			return "", err
		}
		change = func(latest *Version) (schema.Payload, error) {
			if err := live(latest); err != nil {
				return nil, err
			}
			return schema.SkillWritten{Name: a.Name, Action: "edit", Content: a.Content, Dir: latest.Dir, Files: latest.Files.linked(), Author: &author, Reason: reason}, nil
		}
	case "patch":
		change = func(latest *Version) (schema.Payload, error) {
			if err := live(latest); err != nil {
				return nil, err
			}
			old := latest.Files.SkillMD()
			if n := strings.Count(old, a.OldString); a.OldString == "" || n != 1 {
				return nil, fmt.Errorf("old_string must match exactly once in %s (matches %d)", a.Name, n)
			}
			content := strings.Replace(old, a.OldString, a.NewString, 1)
			s, err := Parse(content)
			if err != nil {
				return nil, fmt.Errorf("the patch would break the skill: %w", err)
			}
			if s.Name != a.Name {
				return nil, fmt.Errorf("the patch would rename the skill to %q: create a new one instead", s.Name)
			}
			return schema.SkillPatched{Name: a.Name, Base: digest([]byte(old)), OldString: a.OldString, NewString: a.NewString, Content: content, Author: author, Reason: reason}, nil
		}
	case "write_file", "remove_file":
		file := path.Clean(a.FilePath)
		change = func(latest *Version) (schema.Payload, error) {
			if err := live(latest); err != nil {
				return nil, err
			}
			files := maps.Clone(latest.Files)
			if a.Action == "write_file" {
				if len(a.FileContent) > maxFileBytes {
					return nil, fmt.Errorf("file_content is %d bytes, over the %d a linked file may hold", len(a.FileContent), maxFileBytes)
				}
				mode := files[file].Mode
				if mode == 0 {
					mode = 0o644
				}
				files[file] = File{Data: []byte(a.FileContent), Mode: mode}
			} else {
				if _, ok := files[file]; !ok {
					return nil, fmt.Errorf("skill %s has no file %s (its files: %s)", a.Name, file, strings.Join(latest.Files.Paths(), ", "))
				}
				delete(files, file)
			}
			return schema.SkillWritten{Name: a.Name, Action: a.Action, Content: latest.Files.SkillMD(), Dir: latest.Dir, Files: files.linked(), Author: &author, Reason: reason}, nil
		}
	case "delete":
		change = func(latest *Version) (schema.Payload, error) {
			if err := live(latest); err != nil {
				return nil, err
			}
			return schema.SkillArchived{Name: a.Name, Author: author, Reason: reason}, nil
		}
	default:
		return "", fmt.Errorf("action must be create, edit, patch, write_file, remove_file or delete, not %q", a.Action)
	}
	v, err := k.Change(ctx, a.Name, change)
	if err != nil {
		var fe *ForeignError
		if errors.As(err, &fe) {
			return fmt.Sprintf("wrote version %d of skill %s, but %v", v.Number, a.Name, fe), nil
		}
		return "", err
	}
	if a.Action == "delete" {
		return fmt.Sprintf("deleted skill %s (version %d archives it; its history is kept and hermes skills rollback %s brings it back)", a.Name, v.Number, a.Name), nil
	}
	if a.Action == "write_file" || a.Action == "remove_file" {
		return fmt.Sprintf("%s %s of skill %s: version %d", map[string]string{"write_file": "wrote", "remove_file": "removed"}[a.Action], path.Clean(a.FilePath), a.Name, v.Number), nil
	}
	done := map[string]string{"create": "created", "edit": "edited", "patch": "patched"}[a.Action]
	return fmt.Sprintf("%s skill %s: version %d (%s)", done, a.Name, v.Number, filepath.Join(k.Dir, filepath.FromSlash(v.Dir), skillMD)), nil
}
