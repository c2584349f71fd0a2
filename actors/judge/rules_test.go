package judge

import (
	"regexp"
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

// Rule descriptions are shown to people: unique and short. The ones users
// may already have in command_allowlist still name their rule (as its
// description or, once reworded, as an alias).
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
		if _, ok := Lookup(old); !ok {
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

// released are the rule IDs users may have saved. An ID is never changed
// or removed once released: add new rules here, never take one out.
var released = []string{
	"delete-system-dir", "mkfs", "dd-disk", "write-disk", "fork-bomb", "kill-all-processes", "shutdown", "init-shutdown",
	"chmod-system-recursive", "overwrite-accounts", "delete-agent-home",
	"recursive-delete", "download-to-shell", "pipe-to-shell", "run-generated-code", "dynamic-command", "inline-script",
	"unparsable", "sql-delete-all", "sql-drop", "sql-truncate", "chmod-777-recursive", "chmod-777", "chmod-recursive",
	"chmod-setuid", "chown-recursive", "chmod-system-dir", "git-push-force", "git-reset-hard", "git-clean", "find-delete",
	"find-exec-rm", "xargs-rm", "systemctl-stop", "service-stop", "kill-by-name", "kill-9", "write-etc", "mv-to-dev-null",
	"docker-remove", "write-ssh", "write-shell-startup", "erase-history", "crontab-edit", "crontab-remove", "write-boot",
	"write-kernel-settings", "write-system-dir", "write-agent-home", "reverse-shell", "write-device", "read-secrets",
	"partition-disk",
}

var kebab = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Rule IDs are the allow-list keys: non-empty, kebab-case, unique, every
// released one still there; and no key (ID, description, alias) names two
// rules, so Lookup resolves each to its own rule.
func TestRuleIDsAreStableKeys(t *testing.T) {
	ids := map[string]bool{}
	keys := map[string]string{}
	for _, r := range Rules() {
		if !kebab.MatchString(r.ID) || len(r.ID) > 30 {
			t.Errorf("rule %q: ID %q is not short kebab-case", r.Description, r.ID)
		}
		if ids[r.ID] {
			t.Errorf("ID %q twice", r.ID)
		}
		ids[r.ID] = true
		for _, k := range append([]string{r.ID, r.Description}, r.Aliases...) {
			if other, ok := keys[k]; ok && other != r.ID {
				t.Errorf("key %q names both %s and %s", k, other, r.ID)
			}
			keys[k] = r.ID
			if got, ok := Lookup(k); !ok || got != r {
				t.Errorf("Lookup(%q) = %v %v, want %s", k, got, ok, r.ID)
			}
			if Key(k) != r.ID {
				t.Errorf("Key(%q) = %q, want %s", k, Key(k), r.ID)
			}
		}
	}
	for _, id := range released {
		if !ids[id] {
			t.Errorf("released rule ID %q is gone: saved allow-lists name it", id)
		}
	}
	if len(ids) != len(released) {
		t.Errorf("%d rules, %d released IDs: list a new rule's ID in released", len(ids), len(released))
	}
}

// Lookup takes what a person types or a config file holds; what names no
// rule (a typo, an MCP tool) is not one.
func TestLookupUnknownKeys(t *testing.T) {
	// "shell -c wrapper" was a rule before the judge looked inside bash -c:
	// retired, it names nothing now (nor does Python's "find", which named
	// two of its rules at once).
	for _, k := range []string{"", "  ", "recursive-delet", "Recursive Delete", "mcp_github_*", "shell -c wrapper", "find"} {
		if r, ok := Lookup(k); ok {
			t.Errorf("Lookup(%q) = %s", k, r.ID)
		}
	}
	if Key("mcp_github_*") != "mcp_github_*" {
		t.Error("Key changes a pattern that is no rule")
	}
	if r, ok := Lookup("  git push --force "); !ok || r.ID != "git-push-force" {
		t.Errorf("blanks around a description: %v %v", r, ok)
	}
}

// A rule whose description is reworded keeps its old wording as an alias:
// entries saved with the old wording still name it.
func TestRewordedRuleKeepsOldKeys(t *testing.T) {
	reworded := slices.Clone(table)
	r := &reworded[slices.IndexFunc(reworded, func(r Rule) bool { return r.ID == "recursive-delete" })]
	old := r.Description
	r.Description = "delete a directory and everything in it"
	r.Aliases = append(slices.Clone(r.Aliases), old)
	for _, k := range []string{"recursive-delete", old, "delete a directory and everything in it", "recursive delete (long flag)"} {
		if got, ok := lookupIn(reworded, k); !ok || got.ID != "recursive-delete" {
			t.Errorf("after the rewording, %q names %v %v", k, got, ok)
		}
	}
	// Without the alias the old entries would name nothing: the alias is
	// what keeps them.
	r.Aliases = nil
	if _, ok := lookupIn(reworded, old); ok {
		t.Fatal("the old wording resolves without its alias")
	}
}

// Every rule of the table is reported for at least one command of the
// corpus (or of the few added here), so none is dead and each has a
// spelling that shows it.
func TestEveryRuleReachable(t *testing.T) {
	reached := map[string]bool{}
	var commands []string
	for _, l := range readCorpus(t) {
		commands = append(commands, l.command)
	}
	// rules the corpus has no line for yet
	commands = append(commands, `echo x > "/dev/$DEV"`)
	for _, c := range commands {
		for _, f := range testJudge.Findings(c) {
			reached[f.Rule.ID] = true
		}
	}
	for _, r := range Rules() {
		if !reached[r.ID] {
			t.Errorf("no corpus command is judged %s (%s)", r.ID, r.Description)
		}
	}
}

// What Python Hermes saved in command_allowlist names the rule that covers
// the same commands: its descriptions, and in its early versions the start
// of the pattern's regular expression.
func TestPythonHermesKeys(t *testing.T) {
	for key, id := range map[string]string{
		"recursive delete":                         "recursive-delete",
		"recursive delete (long flag)":             "recursive-delete",
		`rm\s+(-[^\s]*)?r`:                         "recursive-delete",
		"world/other-writable permissions":         "chmod-777",
		`chmod\s+(-[^\s]*\s+)*777`:                 "chmod-777",
		"SQL DROP":                                 "sql-drop",
		`DELETE\s+FROM`:                            "sql-delete-all",
		"pipe remote content to shell":             "download-to-shell",
		"git force push (rewrites remote history)": "git-push-force",
		"stop/disable system service":              "systemctl-stop",
		"xargs with rm":                            "xargs-rm",
		"find -exec rm":                            "find-exec-rm",
		"find -delete":                             "find-delete",
		"fork bomb":                                "fork-bomb",
	} {
		if r, ok := Lookup(key); !ok || r.ID != id {
			t.Errorf("Lookup(%q) = %v %v, want %s", key, r, ok, id)
		}
	}
}
