package files

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
)

type patchTool struct{ roots Roots }

func (patchTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "patch", Description: "Edit files. mode=replace: replace old_string with new_string in path (whitespace differences in indentation are tolerated; the match must be unique unless replace_all). mode=patch: apply a unified diff (--- a/file, +++ b/file, @@ hunks).",
		Parameters: obj(map[string]any{
			"mode":        map[string]any{"type": "string", "enum": []string{"replace", "patch"}},
			"path":        map[string]any{"type": "string"},
			"old_string":  map[string]any{"type": "string"},
			"new_string":  map[string]any{"type": "string"},
			"replace_all": map[string]any{"type": "boolean"},
			"patch":       map[string]any{"type": "string", "description": "unified diff, for mode=patch"},
		})}
}

func (patchTool) Flags() tool.Flags {
	return tool.Flags{WritesPaths: func(args json.RawMessage) []string {
		var v struct {
			Path  string `json:"path"`
			Patch string `json:"patch"`
		}
		json.Unmarshal(args, &v)
		if v.Patch != "" {
			var out []string
			for _, fp := range parseDiff(v.Patch) {
				out = append(out, fp.path)
			}
			return out
		}
		if v.Path == "" {
			return nil
		}
		return []string{v.Path}
	}}
}

func (t patchTool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Mode       string `json:"mode"`
		Path       string `json:"path"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
		Patch      string `json:"patch"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if a.Mode == "" {
		a.Mode = "replace"
		if a.Patch != "" {
			a.Mode = "patch"
		}
	}
	env := tool.EnvFrom(ctx)
	switch a.Mode {
	case "replace":
		return t.replace(env, a.Path, a.OldString, a.NewString, a.ReplaceAll)
	case "patch":
		return t.applyDiff(env, a.Patch)
	}
	return "", fmt.Errorf("mode must be replace or patch, got %q", a.Mode)
}

func (t patchTool) load(env *tool.Env, path string) (string, string, error) {
	p, err := t.roots.resolve(env, path, reading|writing)
	if err != nil {
		return "", "", err
	}
	f, err := openReal(p)
	if err != nil {
		return "", "", fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", "", fmt.Errorf("read %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return "", "", fmt.Errorf("%s is not a regular file (%s); patch edits files only", path, info.Mode().Type())
	}
	tooLarge := func(n int64) error {
		return fmt.Errorf("%s is %s, too large for patch, which edits files of up to %s in memory; change it with the terminal (sed -i, a script) or split it",
			path, size(n), size(maxEditBytes))
	}
	if info.Size() > maxEditBytes {
		return "", "", tooLarge(info.Size())
	}
	// The size may have been a lie (a file growing now): read no more
	// than the limit in any case.
	data, err := io.ReadAll(io.LimitReader(f, maxEditBytes+1))
	if err != nil {
		return "", "", fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxEditBytes {
		return "", "", tooLarge(int64(len(data)))
	}
	if err := seenOf(env).check(p, data, info.ModTime()); err != nil {
		return "", "", err
	}
	return p, string(data), nil
}

func (t patchTool) replace(env *tool.Env, path, old, repl string, all bool) (string, error) {
	if old == "" {
		return "", fmt.Errorf("old_string is empty; use write_file to create a file")
	}
	p, text, err := t.load(env, path)
	if err != nil {
		return "", err
	}
	var out string
	switch n := strings.Count(text, old); {
	case n == 1 || (n > 1 && all):
		out = strings.ReplaceAll(text, old, repl)
	case n > 1:
		return "", fmt.Errorf("old_string matches %d places in %s; include more surrounding lines to make it unique, or set replace_all", n, path)
	default:
		start, end, count := fuzzyFind(text, old)
		if count == 0 {
			return "", fmt.Errorf("old_string was not found in %s (not even ignoring whitespace); read the file again and copy the text exactly", path)
		}
		if count > 1 {
			return "", fmt.Errorf("old_string matches %d places in %s when whitespace is ignored; include more context", count, path)
		}
		out = text[:start] + repl + text[end:]
	}
	if err := writeAtomic(p, []byte(out)); err != nil {
		return "", err
	}
	seenOf(env).wrote(p, []byte(out))
	return fmt.Sprintf("patched %s", path), nil
}

// fuzzyFind finds old in text line by line, comparing lines with their
// leading and trailing whitespace removed. It returns the byte range of
// the (last) match and how many matches there are.
func fuzzyFind(text, old string) (int, int, int) {
	norm := func(s string) string { return strings.TrimSpace(s) }
	want := strings.Split(strings.Trim(old, "\n"), "\n")
	lines := strings.SplitAfter(text, "\n")
	offsets := make([]int, len(lines)+1)
	for i, l := range lines {
		offsets[i+1] = offsets[i] + len(l)
	}
	count, start, end := 0, 0, 0
	for i := 0; i+len(want) <= len(lines); i++ {
		ok := true
		for j, w := range want {
			if norm(lines[i+j]) != norm(w) {
				ok = false
				break
			}
		}
		if ok {
			count++
			start = offsets[i]
			end = offsets[i+len(want)]
			if strings.HasSuffix(lines[i+len(want)-1], "\n") && !strings.HasSuffix(old, "\n") {
				end-- // keep the newline that old did not include
			}
		}
	}
	return start, end, count
}

type filePatch struct {
	path  string
	hunks []hunk
}

type hunk struct {
	oldStart int
	lines    []string // with their ' ', '-', '+' prefix
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@`)

func parseDiff(diff string) []filePatch {
	var out []filePatch
	var cur *filePatch
	for _, line := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "--- "):
			continue
		case strings.HasPrefix(line, "+++ "):
			name := strings.TrimSpace(strings.TrimPrefix(line, "+++ "))
			if i := strings.IndexByte(name, '\t'); i >= 0 {
				name = name[:i]
			}
			name = strings.TrimPrefix(strings.TrimPrefix(name, "b/"), "./")
			out = append(out, filePatch{path: name})
			cur = &out[len(out)-1]
		case hunkHeader.MatchString(line) && cur != nil:
			m := hunkHeader.FindStringSubmatch(line)
			n, _ := strconv.Atoi(m[1])
			cur.hunks = append(cur.hunks, hunk{oldStart: n})
		case cur != nil && len(cur.hunks) > 0 && len(line) > 0 && strings.ContainsRune(" +-", rune(line[0])):
			h := &cur.hunks[len(cur.hunks)-1]
			h.lines = append(h.lines, line)
		case cur != nil && len(cur.hunks) > 0 && line == "":
			h := &cur.hunks[len(cur.hunks)-1]
			h.lines = append(h.lines, " ")
		}
	}
	return out
}

func (t patchTool) applyDiff(env *tool.Env, diff string) (string, error) {
	fps := parseDiff(diff)
	if len(fps) == 0 {
		return "", fmt.Errorf("patch holds no file (expected --- a/FILE and +++ b/FILE lines)")
	}
	type result struct{ path, text string }
	var results []result
	total := 0
	// Apply every file in memory first: either all files change or none.
	for _, fp := range fps {
		if len(fp.hunks) == 0 {
			return "", fmt.Errorf("patch for %s has no @@ hunk", fp.path)
		}
		p, text, err := t.load(env, fp.path)
		if err != nil {
			return "", err
		}
		if total += len(text); total > maxPatchBytes {
			return "", fmt.Errorf("the files of this patch hold more than %s together, more than one patch edits in memory; patch them in several calls", size(maxPatchBytes))
		}
		lines := strings.Split(text, "\n")
		delta := 0
		for hi, h := range fp.hunks {
			var oldL, newL []string
			for _, l := range h.lines {
				switch l[0] {
				case ' ':
					oldL, newL = append(oldL, l[1:]), append(newL, l[1:])
				case '-':
					oldL = append(oldL, l[1:])
				case '+':
					newL = append(newL, l[1:])
				}
			}
			at := findLines(lines, oldL, h.oldStart-1+delta)
			if at < 0 {
				return "", fmt.Errorf("hunk %d of %s does not match the file (its context lines differ); read the file again", hi+1, fp.path)
			}
			lines = append(lines[:at], append(newL, lines[at+len(oldL):]...)...)
			delta += len(newL) - len(oldL)
		}
		results = append(results, result{p, strings.Join(lines, "\n")})
	}
	for _, r := range results {
		if err := writeAtomic(r.path, []byte(r.text)); err != nil {
			return "", err
		}
		seenOf(env).wrote(r.path, []byte(r.text))
	}
	return fmt.Sprintf("applied patch to %d file(s)", len(results)), nil
}

// findLines finds want in lines nearest to hint, tolerating trailing
// whitespace differences; -1 when it is nowhere.
func findLines(lines, want []string, hint int) int {
	match := func(at int) bool {
		if at < 0 || at+len(want) > len(lines) {
			return false
		}
		for i, w := range want {
			if strings.TrimRight(lines[at+i], " \t\r") != strings.TrimRight(w, " \t\r") {
				return false
			}
		}
		return true
	}
	for d := 0; d <= len(lines); d++ {
		if match(hint - d) {
			return hint - d
		}
		if d > 0 && match(hint+d) {
			return hint + d
		}
	}
	return -1
}
