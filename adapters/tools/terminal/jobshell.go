package terminal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/sandbox"
)

// JobShell runs scheduled jobs' scripts (it implements cron.Scripts; cmd/hermes
// hands it to the scheduler) on a terminal backend, each command judged by
// the terminal's approver first. Nobody can be asked during a run: a
// dangerous command runs only when command_allowlist allows it, a
// hard-line one never.
type JobShell struct {
	Approver *Approver
	// Backend runs the command (nil: this machine).
	Backend Backend
	// Dir is the working directory ($HERMES_HOME/scripts).
	Dir string
	// Shell is the shell (default /bin/bash, else /bin/sh).
	Shell string
	// MaxOutput bounds what is kept of the output (default 50,000 bytes).
	MaxOutput int
	// Timeout bounds a script on its own (0: only the run's timeout).
	Timeout time.Duration
	// Sandboxes runs the local backend's scripts in a kernel sandbox (one
	// per run), with the environment it allows; nil: unconfined.
	Sandboxes *Sandboxes
}

// Run implements cron.Scripts.
func (sh JobShell) Run(ctx context.Context, command string) (string, error) {
	approver := sh.Approver
	if approver == nil {
		approver = &Approver{}
	}
	backend := sh.Backend
	if backend == nil {
		backend = Local{}
	}
	if sh.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, sh.Timeout, fmt.Errorf("the script timed out after %s", sh.Timeout))
		defer cancel()
	}
	env := &tool.Env{Values: tool.NewSessionValues(), WorkingDir: sh.Dir}
	defer env.Values.Close()
	ctx = tool.WithEnv(ctx, env)
	if backend.Checked() {
		if err := approver.Approve(ctx, command); err != nil {
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
	if _, local := backend.(Local); local && sh.Sandboxes != nil {
		return sh.sandboxed(ctx, shell, command, max)
	}
	cmd := backend.Command(ctx, shell, sh.Dir, command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &Capped{Max: max}
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

// sandboxed runs command in the run's sandbox.
func (sh JobShell) sandboxed(ctx context.Context, shell, command string, max int) (string, error) {
	sb, err := sh.Sandboxes.For(ctx)
	if err != nil {
		return "", err
	}
	out := &Capped{Max: max}
	p, err := sb.Start(ctx, sandbox.Cmd{Args: []string{shell, "-c", command}, Dir: sh.Dir,
		Env: sh.Sandboxes.Environ(os.Environ()), Stdout: out, Stderr: out})
	if err != nil {
		return "", fmt.Errorf("start %q: %w", command, err)
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		p.Kill()
		p.Wait()
		return out.String(), context.Cause(ctx)
	}
	code, err := p.Wait()
	if err != nil {
		return out.String(), err
	}
	if code != 0 {
		return out.String(), fmt.Errorf("exit status %d", code)
	}
	return strings.TrimRight(out.String(), "\n"), nil
}
