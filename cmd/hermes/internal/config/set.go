package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Set sets dotted key to value in config.yaml. The key must be one
// this build knows (a misspelt key would silently do nothing); value is
// read as YAML (true, 40, [a, b], a string). The file is checked as a
// whole before it is replaced, atomically.
//
// A scalar set on a key that holds a model's mapping form (model:
// {default, provider, base_url}) sets the mapping's default, as Hermes
// reads it, and keeps the rest: `config set model NAME` changes the model
// and leaves its provider and base URL alone.
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
	if slices.Contains(modelKeys, key) && val.Content[0].Kind == yaml.ScalarNode {
		if m := lookup(root, parts); m != nil && m.Kind == yaml.MappingNode {
			parts = append(parts, "default")
		}
	}
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
					keepComments(found, val.Content[0])
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
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2) // as Hermes writes it, and most people
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	out := buf.Bytes()
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

// modelKeys are the keys that take a model's name or its mapping form
// (ModelRef), whose name is under default.
var modelKeys = []string{"model", "auxiliary.compression"}

// lookup is the node at the dotted path parts under the mapping n, or nil.
func lookup(n *yaml.Node, parts []string) *yaml.Node {
	for _, p := range parts {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == p {
				next = n.Content[j+1]
			}
		}
		n = next
	}
	return n
}

// keepComments gives the value replacing old the comments old had, when
// both are scalars ("default: a  # the usual" keeps "# the usual").
func keepComments(old, nv *yaml.Node) {
	if old.Kind != yaml.ScalarNode || nv.Kind != yaml.ScalarNode {
		return
	}
	nv.HeadComment = first(nv.HeadComment, old.HeadComment)
	nv.LineComment = first(nv.LineComment, old.LineComment)
	nv.FootComment = first(nv.FootComment, old.FootComment)
}
