package skillhub

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// DefaultTaps are searched until the taps are changed: the skill
// collections of Anthropic and OpenAI on GitHub.
var DefaultTaps = []string{"anthropics/skills/skills", "openai/skills/skills/.curated"}

// Taps is the list of sources `hermes skills search` looks through, kept
// in a JSON file ($HERMES_HOME/skillhub/taps.json); without the file, the
// DefaultTaps.
type Taps struct {
	Path string
	// GitHub is the base of owner/repo identifiers (see ParseSource).
	GitHub string
}

type tapsFile struct {
	Taps []string `json:"taps"`
}

// List is the taps' identifiers.
func (t Taps) List() ([]string, error) {
	b, err := os.ReadFile(t.Path)
	if errors.Is(err, os.ErrNotExist) {
		return slices.Clone(DefaultTaps), nil
	}
	if err != nil {
		return nil, err
	}
	var f tapsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Path, err)
	}
	return f.Taps, nil
}

// Sources is the taps parsed; a tap that does not parse is named in errs.
func (t Taps) Sources() (out []Source, errs []error) {
	list, err := t.List()
	if err != nil {
		return nil, []error{err}
	}
	for _, id := range list {
		s, err := ParseSource(id, t.GitHub)
		if err != nil {
			errs = append(errs, fmt.Errorf("tap %s: %w", id, err))
			continue
		}
		out = append(out, s)
	}
	return out, errs
}

func (t Taps) save(list []string) error {
	if err := os.MkdirAll(filepath.Dir(t.Path), 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(tapsFile{Taps: list}, "", "  ")
	tmp := t.Path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, t.Path)
}

// Add adds the tap id (checked by ParseSource) and returns its canonical
// identifier; a tap there already is an error.
func (t Taps) Add(id string) (string, error) {
	s, err := ParseSource(id, t.GitHub)
	if err != nil {
		return "", err
	}
	list, err := t.List()
	if err != nil {
		return "", err
	}
	for _, have := range list {
		if hs, err := ParseSource(have, t.GitHub); err == nil && hs == s {
			return "", fmt.Errorf("tap %s is there already", have)
		}
	}
	return id, t.save(append(list, id))
}

// Remove removes the tap id (as listed, or any identifier of the same
// source).
func (t Taps) Remove(id string) error {
	list, err := t.List()
	if err != nil {
		return err
	}
	want, perr := ParseSource(id, t.GitHub)
	keep := list[:0:0]
	for _, have := range list {
		hs, err := ParseSource(have, t.GitHub)
		if have == id || (perr == nil && err == nil && hs == want) {
			continue
		}
		keep = append(keep, have)
	}
	if len(keep) == len(list) {
		return fmt.Errorf("no tap %s (hermes skills tap list shows them)", id)
	}
	return t.save(keep)
}
