package skills

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Pins: a pinned skill is one the curator never archives nor
// consolidates. The pins are a list in skills/.hermes/pinned, one name a
// line; a skill the Python Hermes Agent pinned (skills/.usage.json,
// "pinned": true) is pinned here too.

func (k *Keeper) pinsFile() string { return filepath.Join(k.state(), "pinned") }

// Pinned is the set of pinned skills.
func (k *Keeper) Pinned() (map[string]bool, error) {
	out := map[string]bool{}
	b, err := os.ReadFile(k.pinsFile())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, l := range strings.Fields(string(b)) {
		out[l] = true
	}
	if b, err := os.ReadFile(filepath.Join(k.Dir, ".usage.json")); err == nil {
		var usage map[string]struct {
			Pinned bool `json:"pinned"`
		}
		if json.Unmarshal(b, &usage) == nil {
			for name, u := range usage {
				if u.Pinned {
					out[name] = true
				}
			}
		}
	}
	return out, nil
}

// Pin pins (or, with on false, unpins) the skill name. A skill the Python
// agent pinned is unpinned there with `hermes curator unpin` of that agent.
func (k *Keeper) Pin(name string, on bool) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("name %q: not a skill name", name)
	}
	if err := os.MkdirAll(k.state(), 0o755); err != nil {
		return err
	}
	unlock, err := lockPath(filepath.Join(k.state(), "pinned.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	b, err := os.ReadFile(k.pinsFile())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	names := strings.Fields(string(b))
	names = slices.DeleteFunc(names, func(n string) bool { return n == name })
	if on {
		names = append(names, name)
	}
	slices.Sort(names)
	return replaceFile(k.pinsFile(), []byte(strings.Join(names, "\n")+"\n"), 0o644)
}
