package cron

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
)

// Shell runs job scripts on a terminal backend, each command judged by
// the terminal's approver first. Nobody can be asked during a run: a
// dangerous command runs only when command_allowlist allows it, a
// hard-line one never.
type Shell struct {
	Approver *terminal.Approver
	// Backend runs the command (nil: this machine).
	Backend terminal.Backend
	// Dir is the working directory ($HERMES_HOME/scripts).
	Dir string
	// Shell is the shell (default /bin/bash, else /bin/sh).
	Shell string
	// MaxOutput bounds what is kept of the output (default 50,000 bytes).
	MaxOutput int
	// Timeout bounds a script on its own (0: only the run's timeout).
	Timeout time.Duration
}

// Run implements Scripts.
func (sh Shell) Run(ctx context.Context, command string) (string, error) {
	approver := sh.Approver
	if approver == nil {
		approver = &terminal.Approver{}
	}
	backend := sh.Backend
	if backend == nil {
		backend = terminal.Local{}
	}
	if sh.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, sh.Timeout, fmt.Errorf("the script timed out after %s", sh.Timeout))
		defer cancel()
	}
	if backend.Checked() {
		env := &agent.Env{Values: agent.NewSessionValues(), WorkingDir: sh.Dir}
		if err := approver.Approve(agent.WithEnv(ctx, env), command); err != nil {
			return "", err
		}
	}
	shell := sh.Shell
	if shell == "" {
		shell = "/bin/bash"
		if _, err := os.Stat(shell); err != nil {
			shell = "/bin/sh"
		}
	}
	if sh.Dir != "" {
		if err := os.MkdirAll(sh.Dir, 0o700); err != nil {
			return "", err
		}
	}
	max := sh.MaxOutput
	if max <= 0 {
		max = 50_000
	}
	cmd := backend.Command(ctx, shell, sh.Dir, command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &terminal.Capped{Max: max}
	cmd.Stdout, cmd.Stderr, cmd.Stdin = out, out, nil
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %q: %w", command, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return out.String(), context.Cause(ctx)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), fmt.Errorf("exit status %d", ee.ExitCode())
	}
	if err != nil {
		return out.String(), err
	}
	return strings.TrimRight(out.String(), "\n"), nil
}
