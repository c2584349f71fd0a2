package catalog

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/model"
)

var update = flag.Bool("update", false, "rewrite the README's provider table from the catalog")

const (
	readme     = "../../../README.md"
	tableBegin = "<!-- providers table: generated from actors/model/catalog (go test ./actors/model/catalog -update) -->\n"
	tableEnd   = "<!-- end of providers table -->\n"
)

// Table is the README's table of providers: names, API, key variables
// and default endpoint.
func table() string {
	var b strings.Builder
	b.WriteString("| provider (aliases) | API | key variable | default base URL (its variable) |\n|---|---|---|---|\n")
	for _, p := range All() {
		name := "`" + p.ID + "`"
		if len(p.Aliases) > 0 {
			name += " (" + strings.Join(p.Aliases, ", ") + ")"
		}
		key := "`" + strings.Join(p.KeyEnv, "`, `") + "`"
		switch {
		case p.Mode == model.ModeBedrock:
			key = "AWS credentials (`AWS_ACCESS_KEY_ID`…, `AWS_PROFILE`, a role)"
		case len(p.KeyEnv) == 0:
			key = "none"
		case p.Local:
			key += " (optional)"
		}
		base := p.BaseURL
		switch {
		case base == "" && p.NeedsBaseURL:
			base = "set `base_url`"
		case base == "" && p.Mode == model.ModeBedrock:
			base = "the SDK's, in `AWS_REGION`"
		case base == "":
			base = "the SDK's"
		}
		if p.BaseURLEnv != "" {
			base += " (`" + p.BaseURLEnv + "`)"
		}
		b.WriteString("| " + name + " | " + p.Mode + " | " + key + " | " + base + " |\n")
	}
	return b.String()
}

// The README's provider table is the catalog's: a provider added to one
// and not the other fails here (-update rewrites the README's).
func TestReadmeTable(t *testing.T) {
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i, j := strings.Index(s, tableBegin), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no providers table between %q and %q", tableBegin, tableEnd)
	}
	got, want := s[i+len(tableBegin):j], table()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(readme, []byte(s[:i+len(tableBegin)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("README.md's providers table differs from the catalog (go test ./actors/model/catalog -update rewrites it):\n%s", want)
}
