package main

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion is what `hermes --version` and `hermes version` print: the
// module's version and the commit it was built from, as the Go toolchain
// recorded them in the binary. A build from a checkout has the version
// "(devel)"; one without VCS information (go run, a test binary, a tree
// that is not a git checkout) says its commit is unknown.
func buildVersion(info *debug.BuildInfo, ok bool) string {
	version, commit, when, modified := "(devel)", "unknown", "", false
	if ok {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if m := pseudoVersion.FindStringSubmatch(version); commit == "unknown" && m != nil {
		// go install of a commit records no VCS settings, but its
		// pseudo-version ends with the commit.
		commit = m[1]
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	line := fmt.Sprintf("hermes %s, commit %s", version, commit)
	if when != "" {
		line += " of " + when
	}
	if modified {
		line += " (with uncommitted changes)"
	}
	return line + ", " + runtime.Version()
}

// pseudoVersion matches a Go pseudo-version (v0.0.0-20261127100000-0123456789ab,
// or v1.2.4-0.20261127100000-0123456789ab), capturing its commit.
var pseudoVersion = regexp.MustCompile(`[-.]\d{14}-([0-9a-f]{12})(\+incompatible)?$`)

// versionLine is buildVersion of this binary.
func versionLine() string {
	info, ok := debug.ReadBuildInfo()
	return buildVersion(info, ok)
}

// versionCmd is `hermes version`, as `hermes --version` (-V).
func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the commit this hermes was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}
