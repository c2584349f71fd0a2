package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// rings are the module's rings, innermost first (ARCHITECTURE.md): a
// package belongs to the ring its first path element names, and imports
// only packages of its own ring or of one further in.
var rings = []string{"internal", "schema", "events", "projections", "actors", "adapters", "cmd"}

// stores are the concrete event stores: imported only by cmd, by the
// store's own packages and by test helpers.
var stores = []string{"events/embedded", "events/postgres", "events/eventstoredb"}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Imports    []string
	Error      *struct{ Err string }
}

// TestImportsPointInwards checks every import edge between the module's
// packages, as the Go files of a build (test files excluded) make them,
// against the rules of ARCHITECTURE.md, and names each edge that breaks
// one with the rule it breaks.
func TestImportsPointInwards(t *testing.T) {
	module, pkgs := load(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages of %s: is the test run inside the module?", len(pkgs), module)
	}
	rel := func(p string) (string, bool) {
		if p == module {
			return "", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	for _, p := range pkgs {
		from, _ := rel(p.ImportPath)
		if ringOf(from) < 0 {
			t.Errorf("%s is in no ring: put it under one of %v, or add its ring to ARCHITECTURE.md and to rings here", p.ImportPath, rings)
			continue
		}
		for _, imp := range p.Imports {
			to, ours := rel(imp)
			if !ours {
				continue
			}
			if why := forbidden(from, to); why != "" {
				t.Errorf("%s imports %s: %s", from, to, why)
			}
		}
	}
}

// forbidden says which rule the edge from → to (paths inside the module)
// breaks, "" if none.
func forbidden(from, to string) string {
	rf, rt := ringOf(from), ringOf(to)
	if rt > rf {
		return "an inner ring imports an outer one (" + rings[rf] + " may import only " + strings.Join(rings[:rf+1], ", ") + "); define a port in " + rings[rf] + " and have cmd/hermes hand the implementation in"
	}
	if p, q := platform(from), platform(to); p != "" && q != "" && p != q && q != "internal" && !helper(to) {
		return "a platform adapter imports another (adapters/gateway/" + p + " → adapters/gateway/" + q + "); move what they share into adapters/gateway or adapters/gateway/internal"
	}
	if s := storeOf(to); s != "" && !under(from, "cmd") && !under(from, s) && !helper(from) {
		return "a concrete store is imported outside cmd, its own packages and test helpers; depend on the events.Store port (or a port of your own) and have cmd/hermes hand the store in"
	}
	return ""
}

// ringOf is the index in rings of p's ring, -1 for none.
func ringOf(p string) int {
	first, _, _ := strings.Cut(p, "/")
	for i, r := range rings {
		if first == r {
			return i
		}
	}
	return -1
}

// platform is the directory under adapters/gateway that p is in ("" when
// p is not below adapters/gateway).
func platform(p string) string {
	rest, ok := strings.CutPrefix(p, "adapters/gateway/")
	if !ok {
		return ""
	}
	dir, _, _ := strings.Cut(rest, "/")
	return dir
}

// storeOf is the concrete store p belongs to ("" for none).
func storeOf(p string) string {
	for _, s := range stores {
		if under(p, s) {
			return s
		}
	}
	return ""
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// helper reports whether p is a test helper: a package named …test
// (llmtest, pgtest, gatewaytest) that tests of other packages use.
func helper(p string) bool { return strings.HasSuffix(path.Base(p), "test") }

// load lists the module's packages with go list (non-test imports only).
func load(t *testing.T) (string, []pkg) {
	t.Helper()
	mod, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", exitErr(err))
	}
	module := strings.TrimSpace(string(mod))
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", exitErr(err))
	}
	touchSources(t, strings.TrimSpace(string(root)))
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Error", module+"/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", exitErr(err))
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list: %v", err)
		}
		if p.Error != nil {
			t.Errorf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	return module, pkgs
}

// touchSources stats every directory and Go file of the module. The
// imports come from a go list subprocess, which go test's result cache
// cannot see; the files a test stats it does see, so with this a pass is
// reused only while no source file or directory has changed (a cached pass
// would otherwise hide a new forbidden edge).
func touchSources(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || strings.HasSuffix(name, ".go") || name == "go.mod" {
			_, err = os.Stat(p)
		}
		return err
	})
	if err != nil {
		t.Fatalf("walk the module: %v", err)
	}
}

func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return errors.New(strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}
