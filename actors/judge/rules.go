package judge

import (
	"strings"
)

// Rule is one kind of command that needs a decision.
type Rule struct {
	// ID names the rule for good: it is the key of the allow-list
	// (command_allowlist, the grants of the event store), so it never
	// changes once released. Kebab-case, named for what the rule catches.
	ID string
	// Description is what the person is shown ("recursive delete"). It may
	// be reworded: the old wording then goes to Aliases, so allow-lists
	// that saved it keep working.
	Description string
	// Hard is the rule's level: a hard-line rule is refused, even with
	// --yolo or an allow-list entry; the others ask.
	Hard bool
	// Aliases are other keys that name this rule in allow-lists saved
	// before: earlier wordings of Description, and what Python Hermes
	// saved in command_allowlist for the patterns this rule covers (their
	// descriptions, and in its early versions the start of the pattern's
	// regular expression, such as rm\s+(-[^\s]*)?r). Never removed.
	Aliases []string
}

// table is every rule the judge reports, hard-line ones first: the one
// place a rule's ID, description, level and earlier names live.
var table = []Rule{
	// hard-line: every spelling of these is refused
	{ID: "delete-system-dir", Description: "delete of the root or a system directory", Hard: true,
		Aliases: []string{"recursive delete of root filesystem", "recursive delete of system directory"}},
	{ID: "mkfs", Description: "format a filesystem (mkfs)", Hard: true, Aliases: []string{"format filesystem", "format filesystem (mkfs)"}},
	{ID: "dd-disk", Description: "dd onto a disk device", Hard: true, Aliases: []string{"dd to raw block device"}},
	{ID: "write-disk", Description: "write over a disk device", Hard: true,
		Aliases: []string{"redirect to raw block device", "write to block device", `>\s*/dev/sd`}},
	{ID: "fork-bomb", Description: "fork bomb", Hard: true},
	{ID: "kill-all-processes", Description: "kill every process (kill -1)", Hard: true, Aliases: []string{"kill all processes", `kill\s+-9\s+-1`}},
	{ID: "shutdown", Description: "shut down or reboot the machine", Hard: true,
		Aliases: []string{"system shutdown/reboot", "systemctl poweroff/reboot"}},
	{ID: "init-shutdown", Description: "shut down or reboot the machine (init)", Hard: true,
		Aliases: []string{"init 0/6 (shutdown/reboot)", "telinit 0/6 (shutdown/reboot)"}},
	{ID: "chmod-system-recursive", Description: "recursive chmod or chown of the root or a system directory", Hard: true},
	{ID: "overwrite-accounts", Description: "overwrite /etc/passwd, /etc/shadow or /etc/sudoers", Hard: true},
	{ID: "delete-agent-home", Description: "delete the agent's home ($HERMES_HOME)", Hard: true},

	// the rules that ask
	{ID: "recursive-delete", Description: "recursive delete",
		Aliases: []string{"recursive delete (long flag)", "recursive delete (flags after operands)", `rm\s+(-[^\s]*)?r`, `rm\s+--recursive`}},
	{ID: "download-to-shell", Description: "pipe a download into a shell",
		Aliases: []string{"pipe remote content to shell", "execute remote script via process substitution",
			"execute remote content via command substitution", `(curl|wget)`}},
	{ID: "pipe-to-shell", Description: "pipe into a shell"},
	{ID: "run-generated-code", Description: "run generated code"},
	{ID: "dynamic-command", Description: "dynamic command name"},
	{ID: "inline-script", Description: "inline script that runs commands",
		Aliases: []string{"script execution via -e/-c flag", `(python[23]?|perl|ruby|node)\s+-[ec]\s+`}},
	{ID: "unparsable", Description: "command that could not be parsed"},
	{ID: "sql-delete-all", Description: "DELETE without WHERE", Aliases: []string{"SQL DELETE without WHERE", `DELETE\s+FROM`}},
	{ID: "sql-drop", Description: "DROP TABLE / DATABASE", Aliases: []string{"SQL DROP", `DROP\s+(TABLE|DATABASE)`}},
	{ID: "sql-truncate", Description: "TRUNCATE a table", Aliases: []string{"SQL TRUNCATE", `TRUNCATE\s+(TABLE)?\s*\w`}},
	{ID: "chmod-777-recursive", Description: "chmod -R 777",
		Aliases: []string{"recursive world/other-writable (long flag)", "recursive world-writable (long flag)", `chmod\s+--recursive`}},
	{ID: "chmod-777", Description: "chmod 777",
		Aliases: []string{"world/other-writable permissions", "world-writable permissions", `chmod\s+(-[^\s]*\s+)*777`}},
	{ID: "chmod-recursive", Description: "recursive chmod"},
	{ID: "chmod-setuid", Description: "chmod setuid"},
	{ID: "chown-recursive", Description: "recursive chown",
		Aliases: []string{"recursive chown to root", "recursive chown to root (long flag)", `chown\s+(-[^\s]*)?R\s+root`, `chown\s+--recursive`}},
	{ID: "chmod-system-dir", Description: "chmod or chown of a system directory"},
	{ID: "git-push-force", Description: "git push --force",
		Aliases: []string{"git force push (rewrites remote history)", "git force push short flag (rewrites remote history)"}},
	{ID: "git-reset-hard", Description: "git reset --hard", Aliases: []string{"git reset --hard (destroys uncommitted changes)"}},
	{ID: "git-clean", Description: "git clean -f", Aliases: []string{"git clean with force (deletes untracked files)"}},
	{ID: "find-delete", Description: "find -delete"},
	{ID: "find-exec-rm", Description: "find -exec rm", Aliases: []string{"find -exec/-execdir rm"}},
	{ID: "xargs-rm", Description: "xargs rm", Aliases: []string{"xargs with rm", `xargs\s+.*`}},
	{ID: "systemctl-stop", Description: "stop or disable a service",
		Aliases: []string{"stop/restart system service", "stop/disable system service", `systemctl\s+(stop|disable|mask)`}},
	{ID: "service-stop", Description: "stop a service"},
	{ID: "kill-by-name", Description: "kill processes by name",
		Aliases: []string{"force kill processes", "force kill processes (killall -KILL)", "force kill processes (killall -s KILL)",
			"kill processes by regex (killall -r)", `pkill\s+-9`}},
	{ID: "kill-9", Description: "kill -9"},
	{ID: "write-etc", Description: "overwrite a file in /etc",
		Aliases: []string{"overwrite system config", "copy/move file into system config path", "in-place edit of system config",
			"in-place edit of system config (long flag)", `>\s*/etc/`}},
	{ID: "mv-to-dev-null", Description: "move into /dev/null"},
	{ID: "docker-remove", Description: "remove docker resources"},
	{ID: "write-ssh", Description: "write to ~/.ssh"},
	{ID: "write-shell-startup", Description: "write to a shell startup file"},
	{ID: "erase-history", Description: "erase shell history"},
	{ID: "crontab-edit", Description: "edit a crontab"},
	{ID: "crontab-remove", Description: "remove the crontab"},
	{ID: "write-boot", Description: "write to /boot"},
	{ID: "write-kernel-settings", Description: "write to kernel settings (/proc, /sys)"},
	{ID: "write-system-dir", Description: "write into a system directory"},
	{ID: "write-agent-home", Description: "write to the agent's home ($HERMES_HOME)"},
	{ID: "reverse-shell", Description: "reverse shell"},
	{ID: "write-device", Description: "write to a device"},
	{ID: "read-secrets", Description: "read a private key or password file"},
	{ID: "partition-disk", Description: "partition or wipe a disk"},
}

// byID is the rule of table with id; the rules the walker reports are
// named through it, so a mistyped ID fails as the package loads.
func byID(id string) *Rule {
	for i := range table {
		if table[i].ID == id {
			return &table[i]
		}
	}
	panic("judge: no rule " + id)
}

// The rules as the code that reports them names them.
var (
	ruleRootDelete      = byID("delete-system-dir")
	ruleMkfs            = byID("mkfs")
	ruleDD              = byID("dd-disk")
	ruleDisk            = byID("write-disk")
	ruleForkBomb        = byID("fork-bomb")
	ruleKillAll         = byID("kill-all-processes")
	ruleShutdown        = byID("shutdown")
	ruleInit            = byID("init-shutdown")
	ruleChmodSystem     = byID("chmod-system-recursive")
	ruleAccounts        = byID("overwrite-accounts")
	ruleAgentHomeDelete = byID("delete-agent-home")
	ruleRecursiveDelete = byID("recursive-delete")
	ruleDownloadShell   = byID("download-to-shell")
	rulePipeShell       = byID("pipe-to-shell")
	ruleGenerated       = byID("run-generated-code")
	ruleDynamic         = byID("dynamic-command")
	ruleInline          = byID("inline-script")
	ruleUnparsable      = byID("unparsable")
	ruleDeleteFrom      = byID("sql-delete-all")
	ruleDrop            = byID("sql-drop")
	ruleTruncate        = byID("sql-truncate")
	ruleChmod777R       = byID("chmod-777-recursive")
	ruleChmod777        = byID("chmod-777")
	ruleChmodR          = byID("chmod-recursive")
	ruleSetuid          = byID("chmod-setuid")
	ruleChownR          = byID("chown-recursive")
	ruleChmodSystemDir  = byID("chmod-system-dir")
	ruleGitForce        = byID("git-push-force")
	ruleGitReset        = byID("git-reset-hard")
	ruleGitClean        = byID("git-clean")
	ruleFindDelete      = byID("find-delete")
	ruleFindRm          = byID("find-exec-rm")
	ruleXargsRm         = byID("xargs-rm")
	ruleServiceStop     = byID("systemctl-stop")
	ruleService         = byID("service-stop")
	rulePkill           = byID("kill-by-name")
	ruleKill9           = byID("kill-9")
	ruleEtc             = byID("write-etc")
	ruleDevNull         = byID("mv-to-dev-null")
	ruleDocker          = byID("docker-remove")
	ruleSSH             = byID("write-ssh")
	ruleStartup         = byID("write-shell-startup")
	ruleHistory         = byID("erase-history")
	ruleCrontab         = byID("crontab-edit")
	ruleCrontabRemove   = byID("crontab-remove")
	ruleBoot            = byID("write-boot")
	ruleKernel          = byID("write-kernel-settings")
	ruleSystemWrite     = byID("write-system-dir")
	ruleAgentHomeWrite  = byID("write-agent-home")
	ruleReverseShell    = byID("reverse-shell")
	ruleDevice          = byID("write-device")
	ruleSecretRead      = byID("read-secrets")
	ruleDiskTool        = byID("partition-disk")
)

// Rules lists every rule the judge reports, hard-line ones first.
func Rules() []*Rule {
	out := make([]*Rule, len(table))
	for i := range table {
		out[i] = &table[i]
	}
	return out
}

// Lookup finds the rule an allow-list key names: its ID, its description
// or one of its aliases (exact text; blanks around key are ignored).
func Lookup(key string) (*Rule, bool) {
	return lookupIn(table, key)
}

func lookupIn(rules []Rule, key string) (*Rule, bool) {
	key = strings.TrimSpace(key)
	if key == "" {
		return nil, false
	}
	for i := range rules {
		if rules[i].ID == key {
			return &rules[i], true
		}
	}
	for i := range rules {
		r := &rules[i]
		if r.Description == key {
			return r, true
		}
		for _, a := range r.Aliases {
			if a == key {
				return r, true
			}
		}
	}
	return nil, false
}

// Key is the allow-list key of pattern: the rule's ID when pattern names a
// rule (by ID, description or alias), pattern itself otherwise (an MCP
// tool such as mcp_github_*). Allow-lists compare keys, so an entry saved
// as a description allows what its rule's ID does.
func Key(pattern string) string {
	if r, ok := Lookup(pattern); ok {
		return r.ID
	}
	return pattern
}

// Check judges command for the current user and returns its first
// hard-line finding and its first finding that needs approval (either may
// be nil). The cron scheduler's Rules.Judge is wired to it; the terminal's
// Approver looks at every finding, not just these two.
func Check(command string) (hard, danger *Rule) {
	for _, f := range DefaultJudge().Findings(command) {
		switch {
		case f.Rule.Hard && hard == nil:
			hard = f.Rule
		case !f.Rule.Hard && danger == nil:
			danger = f.Rule
		}
	}
	return hard, danger
}
