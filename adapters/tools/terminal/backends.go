package terminal

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// SSH runs commands on another machine through the ssh client. Approval
// still applies: the remote machine is somebody's machine, not a sandbox.
type SSH struct {
	Host string
	Port int
	User string
	// KeyFile is the private key; KnownHosts the file of host keys (first
	// contact is accepted and remembered).
	KeyFile    string
	KnownHosts string
	// Dir is the remote working directory (default: the login directory).
	Dir string
}

func (SSH) Name() string  { return "ssh" }
func (SSH) Checked() bool { return true }

// Command implements Backend.
func (s SSH) Command(_ context.Context, shell, _ string, command string) *exec.Cmd {
	remote := shell + " -c " + shellQuote(command)
	if s.Dir != "" {
		remote = "cd " + shellQuote(s.Dir) + " && " + remote
	}
	args := []string{"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new", "-o", "ConnectTimeout=15", "-T"}
	if s.KnownHosts != "" {
		args = append(args, "-o", "UserKnownHostsFile="+s.KnownHosts)
	}
	if s.KeyFile != "" {
		args = append(args, "-i", s.KeyFile, "-o", "IdentitiesOnly=yes")
	}
	if s.Port != 0 {
		args = append(args, "-p", strconv.Itoa(s.Port))
	}
	target := s.Host
	if s.User != "" {
		target = s.User + "@" + s.Host
	}
	args = append(args, target, remote)
	return exec.Command("ssh", args...)
}

// Docker runs commands in one long-lived container per session, with
// `docker exec`; the container is the boundary, so there is no approval.
// Close removes the container at the end of the session.
type Docker struct {
	Image string
	// Container is the container's name (one per session).
	Container string
	// Mount binds the session's working directory at /workspace.
	Mount string

	once sync.Once
	err  error
}

func (d *Docker) start() error {
	d.once.Do(func() {
		args := []string{"run", "-d", "--rm", "--name", d.Container}
		if d.Mount != "" {
			args = append(args, "-v", d.Mount+":/workspace", "-w", "/workspace")
		}
		args = append(args, d.Image, "sleep", "infinity")
		if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil {
			d.err = fmt.Errorf("start container %s from %s: %v: %s", d.Container, d.Image, err, strings.TrimSpace(string(out)))
		}
	})
	return d.err
}

// Name implements Backend.
func (*Docker) Name() string { return "docker" }

// Checked implements Backend: the container is the boundary.
func (*Docker) Checked() bool { return false }

// Command implements Backend; the container starts on first use. When it
// cannot start, the command reports why.
func (d *Docker) Command(_ context.Context, shell, _ string, command string) *exec.Cmd {
	if err := d.start(); err != nil {
		return exec.Command("sh", "-c", "echo "+shellQuote(err.Error())+" >&2; exit 125")
	}
	// sh, not the local shell: images often have no bash.
	return exec.Command("docker", "exec", "-i", d.Container, "sh", "-c", command)
}

// Close removes the session's container, if it was started; no command
// starts one afterwards.
func (d *Docker) Close() error {
	started := true
	d.once.Do(func() {
		started = false
		d.err = errors.New("the docker backend is closed")
	})
	if !started || d.err != nil {
		return nil
	}
	return exec.Command("docker", "rm", "-f", d.Container).Run()
}
