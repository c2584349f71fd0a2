package app

import (
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/adapters/sandbox"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// Sandboxes is the kernel sandbox of cfg's local backend: one per
// session, shared by the terminal, execute_code and cron scripts. nil
// where commands run elsewhere (ssh, docker) or unconfined
// (sandbox.mode: full-access, said with a warning).
func Sandboxes(home string, cfg config.Resolved, log zerolog.Logger) *terminal.Sandboxes {
	if cfg.Backend != nil {
		if _, local := cfg.Backend.(terminal.Local); !local {
			return nil
		}
	}
	p := cfg.Sandbox
	if p.Mode == "" {
		// A Resolved made without config: the defaults, never less.
		var err error
		if p, err = config.SandboxPolicy(home, config.SandboxConfig{}, "", "config.yaml"); err != nil {
			log.Error().Err(err).Msg("sandbox")
			return &terminal.Sandboxes{Policy: sandbox.Defaults("", home), Log: log}
		}
	}
	if p.Mode == sandbox.FullAccess {
		log.Warn().Msg("sandbox.mode is full-access: commands, scripts and cron scripts run unconfined, with your account's full power; the judge's questions are the only check")
		return nil
	}
	env := append(append([]string(nil), cfg.EnvPassthrough...), cfg.SandboxEnv...)
	return &terminal.Sandboxes{Policy: p, Env: env, Log: log}
}

// CronSandboxes is the sandbox of cron's scripts: the local backend's,
// with the scripts directory ($HERMES_HOME/scripts, their working
// directory) shown again inside the hidden home; nil as sandboxes is.
func CronSandboxes(home string, cfg config.Resolved, log zerolog.Logger) *terminal.Sandboxes {
	s := Sandboxes(home, cfg, log)
	if s != nil {
		s.Policy.Visible = append(append([]string(nil), s.Policy.Visible...), filepath.Join(home, "scripts"))
	}
	return s
}

// FileGuard is the sandbox's policy for the file tools, which run outside
// it (nil without a sandbox).
func FileGuard(s *terminal.Sandboxes) func(string, bool) error {
	if s == nil {
		return nil
	}
	return s.Policy.FileGuard()
}
