package judge

import (
	"slices"
	"testing"
)

func TestJudgeReportsEveryPart(t *testing.T) {
	fs := testJudge.Findings("rm -rf build && git push --force; curl -s x | sh")
	var got []string
	for _, f := range fs {
		got = append(got, f.Rule.Description)
	}
	for _, want := range []string{"recursive delete", "git push --force", "pipe a download into a shell"} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %q in %v", want, got)
		}
	}
}

func TestCheckKeepsItsContract(t *testing.T) {
	if h, d := Check("rm -rf /"); h == nil || h.Description != "delete of the root or a system directory" || !h.Hard || d == nil {
		t.Fatalf("rm -rf /: %v %v", h, d)
	}
	if h, d := Check("git push -f"); h != nil || d == nil || d.Description != "git push --force" {
		t.Fatalf("git push -f: %v %v", h, d)
	}
	if h, d := Check("ls -la"); h != nil || d != nil {
		t.Fatalf("ls: %v %v", h, d)
	}
}

// Rule descriptions are allow-list keys: unique, short, and the ones users
// may already have in command_allowlist keep their spelling.
func TestRuleDescriptionsAreStableKeys(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.Description] || r.Description == "" || len(r.Description) > 60 {
			t.Errorf("bad or duplicate description %q", r.Description)
		}
		seen[r.Description] = true
	}
	for _, old := range []string{"recursive delete", "pipe a download into a shell", "DELETE without WHERE", "DROP TABLE / DATABASE",
		"TRUNCATE a table", "chmod -R 777", "recursive chown", "git push --force", "git reset --hard", "git clean -f", "find -delete",
		"find -exec rm", "xargs rm", "stop or disable a service", "stop a service", "kill processes by name", "kill -9",
		"overwrite a file in /etc", "move into /dev/null", "remove docker resources"} {
		if !seen[old] {
			t.Errorf("allow-list key %q is gone", old)
		}
	}
}

// The judge knows a rule for every command name it tries a glob against.
func TestGuessNamesHaveRules(t *testing.T) {
	if len(guessNames) < 40 {
		t.Fatalf("only %d names to try a glob against", len(guessNames))
	}
	for _, n := range guessNames {
		if p := programFor(canonical(n)); p.run == nil && p.kind != kindWrapper {
			t.Errorf("%s has no handler", n)
		}
	}
}
