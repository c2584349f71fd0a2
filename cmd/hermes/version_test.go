package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// The version line says what the build info holds, and says so honestly
// when it holds nothing.
func TestBuildVersion(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "hermes (devel), commit unknown, " + runtime.Version()},
		{"a checkout without VCS stamp", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "hermes (devel), commit unknown, " + runtime.Version()},
		{"go install of a tag", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}, true, "hermes v0.4.0, commit unknown, " + runtime.Version()},
		{"go install of a commit", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261127100000-0123456789ab"}}, true,
			"hermes v0.0.0-20261127100000-0123456789ab, commit 0123456789ab, " + runtime.Version()},
		{"a checkout with changes", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-11-27T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}, true,
			"hermes (devel), commit 0123456789ab of 2026-11-27T10:00:00Z (with uncommitted changes), " + runtime.Version()},
	} {
		if got := buildVersion(c.info, c.ok); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// --version, -V and version print the same line, this binary's.
func TestVersionInProcess(t *testing.T) {
	quietEnv(t)
	for _, args := range [][]string{{"--version"}, {"-V"}, {"version"}} {
		out, _, err := execute(t, "", args...)
		if err != nil || out != versionLine()+"\n" || !strings.HasPrefix(out, "hermes ") {
			t.Errorf("hermes %s: %q %v", strings.Join(args, " "), out, err)
		}
	}
}
