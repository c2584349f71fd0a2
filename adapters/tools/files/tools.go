package files

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
)

// Limits bound what the tools return and what they read to get there: no
// tool holds a file in memory whole unless it is small enough to edit.
const (
	maxOutputChars = 100_000
	defaultLines   = 2000
	// maxLineChars is how much of one line read_file shows.
	maxLineChars = 2000
	// maxScanBytes is how far read_file reads from the first line asked
	// for, to show the lines and count the rest; past it the file's lines
	// are not counted and the model is told how to read on.
	maxScanBytes = 16 << 20
	// maxEditBytes is the largest file patch edits (it holds the file in
	// memory) and read_file hashes for the changed-underneath check.
	maxEditBytes = 8 << 20
	// maxPatchBytes bounds all the files of one unified diff together.
	maxPatchBytes = 32 << 20
	// maxSearchBytes is the largest file search_files looks into.
	maxSearchBytes = 4 << 20
	// binaryProbe is how much of a file's start decides it is binary.
	binaryProbe = 8000
)

// Tools returns the file tools confined to roots.
func Tools(roots Roots) []tool.Tool {
	return []tool.Tool{readFile{roots}, writeFile{roots}, patchTool{roots}, searchFiles{roots}}
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

func (readFile) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "read_file", Description: "Read a text file with line numbers. Use offset (1-based first line) and limit (number of lines) for large files.",
		Parameters: obj(map[string]any{
			"path":   map[string]any{"type": "string", "description": "file path, absolute or relative to the working directory"},
			"offset": map[string]any{"type": "integer", "description": "first line to read, 1-based (default 1)"},
			"limit":  map[string]any{"type": "integer", "description": "number of lines to read (default 2000)"},
		}, "path")}
}
func (readFile) Flags() tool.Flags { return tool.Flags{ReadOnly: true} }

func (t readFile) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	env := tool.EnvFrom(ctx)
	p, err := t.roots.resolve(env, a.Path, reading)
	if err != nil {
		return "", err
	}
	f, err := openReal(p)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", a.Path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read %s: %w", a.Path, err)
	}
	if info.IsDir() {
		return "", fmt.Errorf("%s is a directory; use search_files to list it", a.Path)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (%s); read_file reads files only", a.Path, info.Mode().Type())
	}
	// The file is read as a stream and only the lines shown are kept. A
	// small file is hashed on the way, so that an edit after someone
	// else's change is refused (seen).
	var h hash.Hash
	var src io.Reader = f
	if info.Size() <= maxEditBytes {
		h = sha256.New()
		src = io.TeeReader(f, h)
	}
	br := bufio.NewReaderSize(src, 64<<10)
	if head, _ := br.Peek(binaryProbe); isBinary(head) {
		return "", fmt.Errorf("%s looks binary (%d bytes); read_file only reads text", a.Path, info.Size())
	}
	start := max(a.Offset, 1)
	limit := a.Limit
	if limit <= 0 {
		limit = defaultLines
	}
	sc := newLineScanner(br)
	var b strings.Builder
	lines, shown := 0, 0 // lines read, last line shown
	full := false        // the output reached maxOutputChars
	eof := false
	for {
		if lines%4096 == 0 && ctx.Err() != nil {
			return "", ctx.Err()
		}
		showing := !full && lines+1 >= start && lines+1 < start+limit
		if lines+1 == start {
			// Past what was asked for, the rest is only counted, and
			// only so far.
			sc.stop = sc.n + maxScanBytes
		}
		keep := 0
		if showing {
			keep = maxLineChars
		}
		line, cut, err := sc.next(keep)
		if errors.Is(err, io.EOF) {
			eof = true
			break
		}
		if err != nil && !errors.Is(err, errScanBudget) {
			return "", fmt.Errorf("read %s: %w", a.Path, err)
		}
		if errors.Is(err, errScanBudget) && len(line) == 0 {
			break
		}
		lines++
		if showing {
			line = clipUTF8(line, maxLineChars)
			fmt.Fprintf(&b, "%6d|%s", lines, line)
			if cut {
				b.WriteString("… [line cut]")
			}
			b.WriteByte('\n')
			shown = lines
			full = b.Len() > maxOutputChars
		}
		if err != nil {
			break
		}
	}
	if eof {
		m := mark{size: sc.n, mod: info.ModTime()}
		if h != nil {
			m.sum, m.summed = [32]byte(h.Sum(nil)), true
		}
		seenOf(env).note(p, m)
	} else {
		seenOf(env).note(p, mark{size: info.Size(), mod: info.ModTime()})
	}
	switch {
	case lines == 0 && eof:
		return "(empty file)", nil
	case start > lines && eof:
		return "", fmt.Errorf("offset %d is past the end of %s (%d lines)", start, a.Path, lines)
	case full && eof:
		fmt.Fprintf(&b, "[output cut at line %d of %d: read on with offset=%d]\n", shown, lines, shown+1)
	case full:
		fmt.Fprintf(&b, "[output cut at line %d of a %s file, too large to count its lines: read on with offset=%d]\n", shown, size(info.Size()), shown+1)
	case eof && shown < lines:
		fmt.Fprintf(&b, "[%d more lines: read on with offset=%d]\n", lines-shown, shown+1)
	case !eof:
		fmt.Fprintf(&b, "[the file is %s, too large to count its lines; more follow line %d: read on with offset=%d (and a limit), or search it with grep in the terminal]\n",
			size(info.Size()), shown, shown+1)
	}
	return b.String(), nil
}

func isBinary(data []byte) bool {
	head := data[:min(len(data), binaryProbe)]
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	return !utf8.Valid(head) && !utf8.Valid(head[:max(len(head)-3, 0)])
}

// --- write_file ---

type writeFile struct{ roots Roots }

func (writeFile) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "write_file", Description: "Write a whole file, creating parent directories. Overwrites an existing file.",
		Parameters: obj(map[string]any{
			"path":    map[string]any{"type": "string"},
			"content": map[string]any{"type": "string"},
		}, "path", "content")}
}
func (writeFile) Flags() tool.Flags { return tool.Flags{WritesPaths: pathsArg} }

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
	env := tool.EnvFrom(ctx)
	p, err := t.roots.resolve(env, a.Path, writing)
	if err != nil {
		return "", err
	}
	// The old content is compared by its hash, streamed: a huge file it
	// replaces is never loaded.
	if err := seenOf(env).checkFile(p); err != nil {
		return "", err
	}
	if err := writeAtomic(p, []byte(*a.Content)); err != nil {
		return "", err
	}
	seenOf(env).wrote(p, []byte(*a.Content))
	return fmt.Sprintf("wrote %d bytes to %s", len(*a.Content), a.Path), nil
}

// --- search_files ---

type searchFiles struct{ roots Roots }

func (searchFiles) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "search_files", Description: "Search file contents with a regular expression (target=content), or find files whose names match a glob (target=files).",
		Parameters: obj(map[string]any{
			"pattern":   map[string]any{"type": "string", "description": "regex for content, glob such as *.go for files"},
			"target":    map[string]any{"type": "string", "enum": []string{"content", "files"}},
			"path":      map[string]any{"type": "string", "description": "directory to search (default: working directory)"},
			"file_glob": map[string]any{"type": "string", "description": "only search files whose names match this glob"},
			"limit":     map[string]any{"type": "integer", "description": "maximum results (default 50)"},
		}, "pattern")}
}
func (searchFiles) Flags() tool.Flags { return tool.Flags{ReadOnly: true} }

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
	env := tool.EnvFrom(ctx)
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
	var hits, skipped []string
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
		if err != nil || isSecret(info, secrets) {
			return nil
		}
		if info.Size() > maxSearchBytes {
			skipped = append(skipped, rel)
			return nil
		}
		full, err := searchFile(ctx, p, re, func(n int, line []byte) bool {
			if len(hits) >= a.Limit {
				more = true
				return false
			}
			hits = append(hits, fmt.Sprintf("%s:%d:%s", rel, n, clipUTF8(line, 300)))
			if len(line) > 300 {
				hits[len(hits)-1] += "…"
			}
			return true
		})
		switch {
		case more:
			return filepath.SkipAll
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil && !full:
			skipped = append(skipped, rel)
		}
		return nil
	})
	if walkErr != nil && walkErr != filepath.SkipAll {
		return "", walkErr
	}
	out := "no matches"
	if len(hits) > 0 {
		if a.Target == "files" {
			sort.Strings(hits)
		}
		out = strings.Join(hits, "\n")
	}
	if more {
		out += fmt.Sprintf("\n[results cut at %d: narrow the pattern or raise limit]", a.Limit)
	}
	if len(skipped) > 0 {
		names := strings.Join(skipped[:min(len(skipped), 5)], ", ")
		if len(skipped) > 5 {
			names += fmt.Sprintf(" and %d more", len(skipped)-5)
		}
		out += fmt.Sprintf("\n[not searched: %s, larger than %s; read them by ranges with read_file or grep them in the terminal]", names, size(maxSearchBytes))
	}
	return out, nil
}

// searchFile calls hit with each line of the file at p that re matches
// (1-based number, the line without its newline) until hit returns false.
// A binary file is not searched. The file is read as a stream of lines,
// no more than maxSearchBytes of it: full is false when it turned out
// larger (it grew since it was listed).
func searchFile(ctx context.Context, p string, re *regexp.Regexp, hit func(int, []byte) bool) (full bool, err error) {
	f, err := openReal(p)
	if err != nil {
		return true, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(io.LimitReader(f, maxSearchBytes+1), 64<<10)
	if head, _ := br.Peek(binaryProbe); isBinary(head) {
		return true, nil
	}
	sc := newLineScanner(br)
	for n := 1; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return true, ctx.Err()
		}
		line, _, err := sc.next(maxSearchBytes + 1)
		if errors.Is(err, io.EOF) {
			return sc.n <= maxSearchBytes, nil
		}
		if err != nil {
			return true, err
		}
		if sc.n > maxSearchBytes {
			return false, nil
		}
		if re.Match(line) && !hit(n, line) {
			return true, nil
		}
	}
}
