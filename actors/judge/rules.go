package judge

// Rule is one kind of command that needs a decision. Description is shown
// to the user and is the key of the allow-list (command_allowlist) and of
// ApprovalDecided events, so it is short and stays stable. Hard rules are
// refused even with --yolo or an allow-list entry.
type Rule struct {
	Description string
	Hard        bool
}

// The hard-line rules: every spelling of these is refused.
var (
	ruleRootDelete      = &Rule{"delete of the root or a system directory", true}
	ruleMkfs            = &Rule{"format a filesystem (mkfs)", true}
	ruleDD              = &Rule{"dd onto a disk device", true}
	ruleDisk            = &Rule{"write over a disk device", true}
	ruleForkBomb        = &Rule{"fork bomb", true}
	ruleKillAll         = &Rule{"kill every process (kill -1)", true}
	ruleShutdown        = &Rule{"shut down or reboot the machine", true}
	ruleInit            = &Rule{"shut down or reboot the machine (init)", true}
	ruleChmodSystem     = &Rule{"recursive chmod or chown of the root or a system directory", true}
	ruleAccounts        = &Rule{"overwrite /etc/passwd, /etc/shadow or /etc/sudoers", true}
	ruleAgentHomeDelete = &Rule{"delete the agent's home ($HERMES_HOME)", true}
)

// The rules that ask.
var (
	ruleRecursiveDelete = &Rule{Description: "recursive delete"}
	ruleDownloadShell   = &Rule{Description: "pipe a download into a shell"}
	rulePipeShell       = &Rule{Description: "pipe into a shell"}
	ruleGenerated       = &Rule{Description: "run generated code"}
	ruleDynamic         = &Rule{Description: "dynamic command name"}
	ruleInline          = &Rule{Description: "inline script that runs commands"}
	ruleUnparsable      = &Rule{Description: "command that could not be parsed"}
	ruleDeleteFrom      = &Rule{Description: "DELETE without WHERE"}
	ruleDrop            = &Rule{Description: "DROP TABLE / DATABASE"}
	ruleTruncate        = &Rule{Description: "TRUNCATE a table"}
	ruleChmod777R       = &Rule{Description: "chmod -R 777"}
	ruleChmod777        = &Rule{Description: "chmod 777"}
	ruleChmodR          = &Rule{Description: "recursive chmod"}
	ruleSetuid          = &Rule{Description: "chmod setuid"}
	ruleChownR          = &Rule{Description: "recursive chown"}
	ruleChmodSystemDir  = &Rule{Description: "chmod or chown of a system directory"}
	ruleGitForce        = &Rule{Description: "git push --force"}
	ruleGitReset        = &Rule{Description: "git reset --hard"}
	ruleGitClean        = &Rule{Description: "git clean -f"}
	ruleFindDelete      = &Rule{Description: "find -delete"}
	ruleFindRm          = &Rule{Description: "find -exec rm"}
	ruleXargsRm         = &Rule{Description: "xargs rm"}
	ruleServiceStop     = &Rule{Description: "stop or disable a service"}
	ruleService         = &Rule{Description: "stop a service"}
	rulePkill           = &Rule{Description: "kill processes by name"}
	ruleKill9           = &Rule{Description: "kill -9"}
	ruleEtc             = &Rule{Description: "overwrite a file in /etc"}
	ruleDevNull         = &Rule{Description: "move into /dev/null"}
	ruleDocker          = &Rule{Description: "remove docker resources"}
	ruleSSH             = &Rule{Description: "write to ~/.ssh"}
	ruleStartup         = &Rule{Description: "write to a shell startup file"}
	ruleHistory         = &Rule{Description: "erase shell history"}
	ruleCrontab         = &Rule{Description: "edit a crontab"}
	ruleCrontabRemove   = &Rule{Description: "remove the crontab"}
	ruleBoot            = &Rule{Description: "write to /boot"}
	ruleKernel          = &Rule{Description: "write to kernel settings (/proc, /sys)"}
	ruleSystemWrite     = &Rule{Description: "write into a system directory"}
	ruleAgentHomeWrite  = &Rule{Description: "write to the agent's home ($HERMES_HOME)"}
	ruleReverseShell    = &Rule{Description: "reverse shell"}
	ruleDevice          = &Rule{Description: "write to a device"}
	ruleSecretRead      = &Rule{Description: "read a private key or password file"}
	ruleDiskTool        = &Rule{Description: "partition or wipe a disk"}
)

// Rules lists every rule the judge reports, hard-line ones first.
func Rules() []*Rule {
	return []*Rule{ruleRootDelete, ruleMkfs, ruleDD, ruleDisk, ruleForkBomb, ruleKillAll, ruleShutdown, ruleInit,
		ruleChmodSystem, ruleAccounts, ruleAgentHomeDelete,
		ruleRecursiveDelete, ruleDownloadShell, rulePipeShell, ruleGenerated, ruleDynamic, ruleInline, ruleUnparsable,
		ruleDeleteFrom, ruleDrop, ruleTruncate, ruleChmod777R, ruleChmod777, ruleChmodR, ruleSetuid, ruleChownR,
		ruleChmodSystemDir, ruleGitForce, ruleGitReset, ruleGitClean, ruleFindDelete, ruleFindRm, ruleXargsRm,
		ruleServiceStop, ruleService, rulePkill, ruleKill9, ruleEtc, ruleDevNull, ruleDocker, ruleSSH, ruleStartup,
		ruleHistory, ruleCrontab, ruleCrontabRemove, ruleBoot, ruleKernel, ruleSystemWrite, ruleAgentHomeWrite,
		ruleReverseShell, ruleDevice, ruleSecretRead, ruleDiskTool}
}

// Check judges command for the current user and returns its first
// hard-line finding and its first finding that needs approval (either may
// be nil). Approver.Approve looks at every finding, not just these two.
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

// CheckDescriptions is Check for a caller that knows rules by their
// descriptions (the cron scheduler's Rules.Judge, which cmd/hermes wires to
// it): "" where Check found no rule.
func CheckDescriptions(command string) (hard, danger string) {
	h, d := Check(command)
	if h != nil {
		hard = h.Description
	}
	if d != nil {
		danger = d.Description
	}
	return hard, danger
}
