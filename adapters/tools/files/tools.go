package files

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hermes-go/hermes/actors/agent"
)

// Limits bound what the tools return.
const (
	maxReadBytes   = 256 << 10 // a file larger than this is read by ranges
	maxOutputChars = 100_000
	defaultLines   = 2000
)

// Tools returns the file tools confined to roots.
func Tools(roots Roots) []agent.Tool {
	return []agent.Tool{readFile{roots}, writeFile{roots}, patchTool{roots}, searchFiles{roots}}
}

func obj(props map[string]any, required ...string) map[string]any {
	return map[string]any{"type": "object", "properties": props, "required": required}
}

func decode(args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("invalid arguments: %v", err)
	}
	return nil
}

func pathsArg(args json.RawMessage) []string {
	var v struct {
		Path string `json:"path"`
	}
	json.Unmarshal(args, &v)
	if v.Path == "" {
		return nil
	}
	return []string{v.Path}
}

// --- read_file ---

type readFile struct{ roots Roots }

func (readFile) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: "read_file", Description: "Read a text file with line numbers. Use offset (1-based first line) and limit (number of lines) for large files.",
		Parameters: obj(map[string]any{
			"path":   map[string]any{"type": "string", "description": "file path, absolute or relative to the working directory"},
			"offset": map[string]any{"type": "integer", "description": "first line to read, 1-based (default 1)"},
			"limit":  map[string]any{"type": "integer", "description": "number of lines to read (default 2000)"},
		}, "path")}
}
func (readFile) Flags() agent.ToolFlags { return agent.ToolFlags{ReadOnly: true} }

func (t readFile) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	env := agent.EnvFrom(ctx)
	p, err := t.roots.resolve(env, a.Path, reading)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", a.Path, err)
	}
	if info.IsDir() {
		return "", fmt.Errorf("%s is a directory; use search_files to list it", a.Path)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", a.Path, err)
	}
	if isBinary(data) {
		return "", fmt.Errorf("%s looks binary (%d bytes); read_file only reads text", a.Path, len(data))
	}
	seenOf(env).note(p, data)
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	start := max(a.Offset, 1)
	limit := a.Limit
	if limit <= 0 {
		limit = defaultLines
	}
	if start > len(lines) && len(lines) > 0 {
		return "", fmt.Errorf("offset %d is past the end of %s (%d lines)", start, a.Path, len(lines))
	}
	var b strings.Builder
	end := min(start-1+limit, len(lines))
	for i := start - 1; i < end; i++ {
		line := strings.TrimRight(lines[i], "\n")
		if len(line) > 2000 {
			line = line[:2000] + "… [line cut]"
		}
		fmt.Fprintf(&b, "%6d|%s\n", i+1, line)
		if b.Len() > maxOutputChars {
			fmt.Fprintf(&b, "[output cut at line %d of %d: read on with offset=%d]\n", i+1, len(lines), i+2)
			return b.String(), nil
		}
	}
	if end < len(lines) {
		fmt.Fprintf(&b, "[%d more lines: read on with offset=%d]\n", len(lines)-end, end+1)
	}
	if len(lines) == 0 {
		return "(empty file)", nil
	}
	return b.String(), nil
}

func isBinary(data []byte) bool {
	head := data[:min(len(data), 8000)]
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	return !utf8.Valid(head) && !utf8.Valid(head[:max(len(head)-3, 0)])
}

// --- write_file ---

type writeFile struct{ roots Roots }

func (writeFile) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: "write_file", Description: "Write a whole file, creating parent directories. Overwrites an existing file.",
		Parameters: obj(map[string]any{
			"path":    map[string]any{"type": "string"},
			"content": map[string]any{"type": "string"},
		}, "path", "content")}
}
func (writeFile) Flags() agent.ToolFlags { return agent.ToolFlags{WritesPaths: pathsArg} }

func (t writeFile) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if a.Content == nil {
		return "", fmt.Errorf("content is required (use an empty string for an empty file)")
	}
	env := agent.EnvFrom(ctx)
	p, err := t.roots.resolve(env, a.Path, writing)
	if err != nil {
		return "", err
	}
	if old, err := os.ReadFile(p); err == nil {
		if err := seenOf(env).check(p, old); err != nil {
			return "", err
		}
	}
	if err := writeAtomic(p, []byte(*a.Content)); err != nil {
		return "", err
	}
	seenOf(env).note(p, []byte(*a.Content))
	return fmt.Sprintf("wrote %d bytes to %s", len(*a.Content), a.Path), nil
}

// writeAtomic writes through a temporary file and a rename, so a crash
// leaves either the old or the new file, never half of one.
func writeAtomic(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if info, err := os.Stat(p); err == nil {
		mode = info.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".hermes-write-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// --- search_files ---

type searchFiles struct{ roots Roots }

func (searchFiles) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: "search_files", Description: "Search file contents with a regular expression (target=content), or find files whose names match a glob (target=files).",
		Parameters: obj(map[string]any{
			"pattern":   map[string]any{"type": "string", "description": "regex for content, glob such as *.go for files"},
			"target":    map[string]any{"type": "string", "enum": []string{"content", "files"}},
			"path":      map[string]any{"type": "string", "description": "directory to search (default: working directory)"},
			"file_glob": map[string]any{"type": "string", "description": "only search files whose names match this glob"},
			"limit":     map[string]any{"type": "integer", "description": "maximum results (default 50)"},
		}, "pattern")}
}
func (searchFiles) Flags() agent.ToolFlags { return agent.ToolFlags{ReadOnly: true} }

var skipDirs = map[string]bool{".git": true, "node_modules": true, "__pycache__": true, ".venv": true, "vendor": true}

func (t searchFiles) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Pattern  string `json:"pattern"`
		Target   string `json:"target"`
		Path     string `json:"path"`
		FileGlob string `json:"file_glob"`
		Limit    int    `json:"limit"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if a.Pattern == "" {
		return "", fmt.Errorf("pattern is required")
	}
	if a.Limit <= 0 {
		a.Limit = 50
	}
	if a.Path == "" {
		a.Path = "."
	}
	env := agent.EnvFrom(ctx)
	root, err := t.roots.resolve(env, a.Path, reading)
	if err != nil {
		return "", err
	}
	var re *regexp.Regexp
	if a.Target != "files" {
		if re, err = regexp.Compile(a.Pattern); err != nil {
			return "", fmt.Errorf("pattern is not a valid regular expression: %v", err)
		}
	} else if _, err := filepath.Match(a.Pattern, ""); err != nil {
		return "", fmt.Errorf("pattern is not a valid glob: %v", err)
	}
	var hits []string
	more := false
	secrets := t.roots.secretInfos()
	walkErr := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if p != root && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if a.FileGlob != "" {
			if ok, _ := filepath.Match(a.FileGlob, d.Name()); !ok {
				return nil
			}
		}
		if a.Target == "files" {
			if ok, _ := filepath.Match(a.Pattern, d.Name()); ok {
				if len(hits) >= a.Limit {
					more = true
					return filepath.SkipAll
				}
				hits = append(hits, rel)
			}
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() > 4<<20 || isSecret(info, secrets) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil || isBinary(data) {
			return nil
		}
		for i, line := range strings.Split(string(data), "\n") {
			if re.MatchString(line) {
				if len(hits) >= a.Limit {
					more = true
					return filepath.SkipAll
				}
				if len(line) > 300 {
					line = line[:300] + "…"
				}
				hits = append(hits, fmt.Sprintf("%s:%d:%s", rel, i+1, line))
			}
		}
		return nil
	})
	if walkErr != nil && walkErr != filepath.SkipAll {
		return "", walkErr
	}
	if len(hits) == 0 {
		return "no matches", nil
	}
	if a.Target == "files" {
		sort.Strings(hits)
	}
	out := strings.Join(hits, "\n")
	if more {
		out += fmt.Sprintf("\n[results cut at %d: narrow the pattern or raise limit]", a.Limit)
	}
	return out, nil
}
