package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// Set sets dotted key to value in config.yaml. The key must be one
// this build knows (a misspelt key would silently do nothing); value is
// read as YAML (true, 40, [a, b], a string). The file is checked as a
// whole before it is replaced, atomically.
func Set(home, key, value string) error {
	path := filepath.Join(home, "config.yaml")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var doc yaml.Node
	if len(bytes.TrimSpace(data)) > 0 {
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: the top of the file is not a mapping", path)
	}
	var val yaml.Node
	if err := yaml.Unmarshal([]byte(value), &val); err != nil || len(val.Content) != 1 {
		val = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}}}
	}
	parts := strings.Split(key, ".")
	n := root
	for i, p := range parts {
		if p == "" {
			return fmt.Errorf("key %q: empty part", key)
		}
		var found *yaml.Node
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == p {
				found = n.Content[j+1]
				if i == len(parts)-1 {
					n.Content[j+1] = val.Content[0]
				}
				break
			}
		}
		if i == len(parts)-1 {
			if found == nil {
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: p}, val.Content[0])
			}
			break
		}
		if found == nil {
			found = &yaml.Node{Kind: yaml.MappingNode}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: p}, found)
		}
		if found.Kind != yaml.MappingNode {
			return fmt.Errorf("key %q: %s is not a section", key, strings.Join(parts[:i+1], "."))
		}
		n = found
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return err
	}
	// The result must be a config this build accepts, key and value.
	var check yaml.Node
	if err := yaml.Unmarshal(out, &check); err != nil {
		return err
	}
	keys := checkKeys(&check)
	for _, p := range keys.problems {
		return fmt.Errorf("not set: %s", p.msg)
	}
	for _, k := range keys.ignored {
		if k == parts[0] {
			return fmt.Errorf("not set: %s is not a key this build knows", key)
		}
	}
	var c Config
	if err := check.Decode(&c); err != nil {
		return fmt.Errorf("not set: %s %q: %w", key, value, err)
	}
	if bad := checkValues(c, keys.set); len(bad) > 0 {
		return fmt.Errorf("not set: %s", strings.Join(bad, "; "))
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
