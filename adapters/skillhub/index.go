package skillhub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/hermes-go/hermes/adapters/tools/skills"
)

// An index is the Agent Skills discovery format: {"version": "0.2.0",
// "skills": [{"name", "description", "digest": "sha256:<hex>", "files":
// [{"path", "digest"}]}]}, each file served at <base>/<name>/<path>. A
// file's digest is the SHA-256 of its bytes; the skill's is the SHA-256 of
// "<path>\x00<hex>\n" over its files sorted by path, which is
// skills.Snapshot.Hash. Version 0.1.0 indexes (files a list of paths, no
// digests; the Python Hermes Agent's /.well-known/skills) are read too:
// their content is pinned to its own hash, with a note that the source
// promised none.

type index struct {
	Version string       `json:"version"`
	Skills  []indexEntry `json:"skills"`
	base    string
}

type indexEntry struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Digest      string            `json:"digest"`
	Files       []json.RawMessage `json:"files"`
}

type indexFile struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

func (e indexEntry) files() ([]indexFile, error) {
	if len(e.Files) == 0 {
		return []indexFile{{Path: "SKILL.md"}}, nil
	}
	var out []indexFile
	for _, raw := range e.Files {
		var f indexFile
		if err := json.Unmarshal(raw, &f.Path); err != nil {
			if err := json.Unmarshal(raw, &f); err != nil {
				return nil, fmt.Errorf("skill %s: a files entry is neither a path nor {path, digest}", e.Name)
			}
		}
		if err := checkPath(f.Path); err != nil {
			return nil, fmt.Errorf("skill %s: %w", e.Name, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// checkPath refuses a file path an index may not name.
func checkPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.HasPrefix(p, "../") || p == ".." {
		return fmt.Errorf("file path %q is not inside the skill", p)
	}
	for _, r := range p {
		if r < 0x20 || r > 0x7e || strings.ContainsRune(`\?#[]`, r) {
			return fmt.Errorf("file path %q holds a character an index may not use", p)
		}
	}
	return nil
}

func (h *Hub) get(ctx context.Context, u string, max int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := h.client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("GET %s: more than %d bytes", u, max)
	}
	return b, nil
}

// index reads the index of src (its Base, or the well-known indexes under
// it, newest format first).
func (h *Hub) index(ctx context.Context, src Source) (*index, error) {
	bases := []string{src.Base}
	if !isWellKnown(src.Base) {
		bases = nil
		for _, wk := range wellKnown {
			bases = append(bases, strings.TrimSuffix(src.Base, "/")+wk)
		}
	}
	var errs []error
	for _, base := range bases {
		b, err := h.get(ctx, base+"/index.json", 4<<20)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var ix index
		if err := json.Unmarshal(b, &ix); err != nil {
			return nil, fmt.Errorf("%s/index.json: %w", base, err)
		}
		if major, _, _ := strings.Cut(ix.Version, "."); ix.Version != "" && major != "0" {
			return nil, fmt.Errorf("%s/index.json is version %s; this build reads 0.x", base, ix.Version)
		}
		ix.base = base
		return &ix, nil
	}
	return nil, fmt.Errorf("no skills index at %s: %w", src.Base, errors.Join(errs...))
}

func (h *Hub) entry(ctx context.Context, src Source) (*index, indexEntry, error) {
	if src.Name == "" {
		return nil, indexEntry{}, fmt.Errorf("%s: name a skill of the index (%s/NAME)", src.Base, src.Base)
	}
	ix, err := h.index(ctx, src)
	if err != nil {
		return nil, indexEntry{}, err
	}
	for _, e := range ix.Skills {
		if e.Name == src.Name {
			return ix, e, nil
		}
	}
	return nil, indexEntry{}, fmt.Errorf("%w: the index %s/index.json has no skill %s", ErrNotFound, ix.base, src.Name)
}

func (h *Hub) fetchIndex(ctx context.Context, src Source, pin string) (Bundle, error) {
	ix, e, err := h.entry(ctx, src)
	if err != nil {
		return Bundle{}, err
	}
	return h.fetchEntry(ctx, src, ix, e, pin)
}

// fetchEntry downloads e's files, each checked against its digest, and the
// whole against the skill's digest and pin ("": any).
func (h *Hub) fetchEntry(ctx context.Context, src Source, ix *index, e indexEntry, pin string) (Bundle, error) {
	files, err := e.files()
	if err != nil {
		return Bundle{}, err
	}
	src.Base = ix.base
	snap, all := skills.Snapshot{}, skills.Snapshot{}
	var notes []string
	total, verified := 0, 0
	for _, f := range files {
		u, err := url.JoinPath(ix.base, e.Name, f.Path)
		if err != nil {
			return Bundle{}, err
		}
		data, err := h.get(ctx, u, maxFile)
		if err != nil {
			return Bundle{}, err
		}
		if total += len(data); total > maxSkill {
			return Bundle{}, fmt.Errorf("skill %s is larger than %d bytes", e.Name, maxSkill)
		}
		if f.Digest != "" {
			verified++
			sum := sha256.Sum256(data)
			if got := "sha256:" + hex.EncodeToString(sum[:]); got != strings.ToLower(f.Digest) {
				return Bundle{}, &TamperedError{What: u, Detail: fmt.Sprintf("the index gives %s, the file served is %s", f.Digest, got)}
			}
		}
		// Files from an index are never executable: a script runs only
		// when someone makes it so.
		all[f.Path] = skills.File{Data: data, Mode: 0o644}
	}
	if _, ok := all["SKILL.md"]; !ok {
		return Bundle{}, fmt.Errorf("skill %s: the index lists no SKILL.md", e.Name)
	}
	got := "sha256:" + all.Hash()
	for p, f := range all {
		if !hidden(p) {
			snap[p] = f
		}
	}
	switch {
	case e.Digest != "" && got != strings.ToLower(e.Digest):
		return Bundle{}, &TamperedError{What: "skill " + e.Name + " of " + ix.base, Detail: fmt.Sprintf("the index gives %s, the files served make %s", e.Digest, got)}
	case e.Digest == "" && verified < len(files):
		notes = append(notes, fmt.Sprintf("the index %s/index.json gives no digests for this skill (format 0.1): the content could not be verified, and is pinned to its own hash", ix.base))
	}
	if pin != "" && got != pin {
		return Bundle{}, &TamperedError{What: "skill " + e.Name + " of " + ix.base, Detail: fmt.Sprintf("wanted %s, the files served make %s", pin, got)}
	}
	return Bundle{Origin: Origin{Source: src, Pin: got}, Files: snap, Notes: notes}, nil
}
