package storetest

import (
	"testing"

	"github.com/hermes-go/hermes/events"
)

// TestCasesAreListed: every case has a name of its own, something to run,
// and needs only features the suite knows.
func TestCasesAreListed(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Cases() {
		if c.Name == "" || seen[c.Name] || c.run == nil {
			t.Fatalf("case %q: empty, repeated or with nothing to run", c.Name)
		}
		seen[c.Name] = true
		for _, need := range c.Needs {
			if need != Reopen && need != Shared {
				t.Fatalf("case %s needs the unknown feature %q", c.Name, need)
			}
		}
	}
	for _, name := range []string{"AppendAndReadBack", "AppendsAfterClose", "ReadStreamBesideAppends", "SurvivesReopen", "SharedLog"} {
		if !seen[name] {
			t.Errorf("no case %s", name)
		}
	}
}

// A case the store declares unsupported, or whose features it lacks, is
// skipped by the suite before a store is made; with the features it runs.
func TestCaseSkips(t *testing.T) {
	byName := map[string]Case{}
	for _, c := range Cases() {
		byName[c.Name] = c
	}
	made := 0
	none := func(t *testing.T) events.Store { made++; return nil }
	reopen := func(t *testing.T, s events.Store) events.Store { return s }
	for _, tc := range []struct {
		name, c string
		f       Features
	}{
		{"unsupported", "AppendAndReadBack", Features{Unsupported: map[string]string{"AppendAndReadBack": "it cannot"}}},
		{"no Reopen", "SurvivesReopen", Features{}},
		{"Reopen but not Shared", "SharedLog", Features{Reopen: reopen}},
		{"Shared without Reopen", "SharedLog", Features{Shared: true}},
	} {
		var skipped bool
		t.Run(tc.name, func(t *testing.T) {
			defer func() { skipped = t.Skipped() }()
			byName[tc.c].Run(t, none, tc.f)
		})
		if !skipped {
			t.Errorf("%s: case %s was not skipped", tc.name, tc.c)
		}
	}
	if made != 0 {
		t.Fatalf("the skipped cases made %d stores", made)
	}
	for _, tc := range []struct {
		f    Features
		need Feature
		want bool
	}{
		{Features{Reopen: reopen}, Reopen, true},
		{Features{Reopen: reopen}, Shared, false},
		{Features{Reopen: reopen, Shared: true}, Shared, true},
		{Features{}, Feature("Teleport"), false},
	} {
		if got := tc.f.has(tc.need); got != tc.want {
			t.Errorf("has(%s) = %v, want %v", tc.need, got, tc.want)
		}
	}
}
