package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"gopkg.in/yaml.v3"
)

// ModelChoice is what `hermes model` writes: the model: section's
// provider, default and base_url (Hermes' keys).
type ModelChoice struct {
	Provider, Model, BaseURL string
	// APIMode is written only where the file already pins an api_mode,
	// which would otherwise outvote the new provider's.
	APIMode string
}

// SetModel writes c into config.yaml's model: section, keeping its other
// keys and the rest of the file, comments included. A `model: NAME`
// scalar becomes the mapping form first.
func SetModel(home string, c ModelChoice) error {
	path := filepath.Join(home, "config.yaml")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	pinned := false
	if len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode {
		root := doc.Content[0]
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i].Value, root.Content[i+1]
			switch {
			case k == "model" && v.Kind == yaml.ScalarNode && v.Value != "":
				if err := Set(home, "model", "default: "+yamlString(v.Value)); err != nil {
					return err
				}
			case k == "model" && v.Kind == yaml.MappingNode:
				for j := 0; j+1 < len(v.Content); j += 2 {
					if v.Content[j].Value == "api_mode" {
						pinned = true
					}
				}
			case k == "api_mode":
				pinned = true
			}
		}
	}
	set := [][2]string{{"model.provider", c.Provider}, {"model.default", c.Model}, {"model.base_url", c.BaseURL}}
	if pinned && c.APIMode != "" {
		set = append(set, [2]string{"model.api_mode", c.APIMode})
	}
	for _, kv := range set {
		if err := Set(home, kv[0], yamlString(kv[1])); err != nil {
			return err
		}
	}
	return nil
}

// yamlString is s as a YAML string: plain when YAML reads it back as the
// same string, quoted when it would read a number, a boolean, null or
// something else.
func yamlString(s string) string {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(s), &n); err == nil && len(n.Content) == 1 {
		if v := n.Content[0]; v.Kind == yaml.ScalarNode && v.Tag == "!!str" && v.Style == 0 && v.Value == s {
			return s
		}
	}
	return strconv.Quote(s)
}
