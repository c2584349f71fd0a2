package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/adapters/sandbox"
)

// SpecEnv is the variable that hands the launcher (`hermes plugins
// exec`, started by the MCP client as the plugin's stdio server) the Spec
// of the plugin to run.
const SpecEnv = "HERMES_PLUGIN_SPEC"

// Spec is how one plugin's process starts.
type Spec struct {
	Name string `json:"name"`
	// Dir is the plugin's directory: its working directory.
	Dir     string   `json:"dir"`
	Command []string `json:"command"`
	// Env is its whole environment.
	Env []string `json:"env"`
	// Policy is the sandbox it runs in; nil: none (sandbox.mode:
	// full-access).
	Policy *sandbox.Policy `json:"policy,omitempty"`
}

// ReadSpec reads the Spec the launcher was started with.
func ReadSpec() (Spec, error) {
	raw := os.Getenv(SpecEnv)
	if raw == "" {
		return Spec{}, fmt.Errorf("%s is not set: hermes plugins exec is started by hermes itself, for a plugin", SpecEnv)
	}
	var s Spec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return Spec{}, fmt.Errorf("%s: %v", SpecEnv, err)
	}
	if len(s.Command) == 0 {
		return Spec{}, errors.New("the plugin has no command")
	}
	return s, nil
}

// argv is the command with a relative program (one with a slash) made
// absolute within the plugin's directory.
func (s Spec) argv() []string {
	out := append([]string(nil), s.Command...)
	if strings.Contains(out[0], "/") && !filepath.IsAbs(out[0]) {
		out[0] = filepath.Join(s.Dir, out[0])
	}
	return out
}

// Exec runs the plugin of s with in, out and errOut as its standard
// streams, in its sandbox, until it exits or ctx ends, and returns its
// exit code. The sandbox gives a command no standard input and pipes its
// output, so the plugin's stdin and stdout arrive as descriptors 3 and 4
// and a shell moves them to 0 and 1 before the plugin starts.
func Exec(ctx context.Context, s Spec, in io.Reader, out, errOut io.Writer, log zerolog.Logger) (int, error) {
	argv := s.argv()
	if s.Policy == nil {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = s.Dir, s.Env
		cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, errOut
		err := cmd.Run()
		if cmd.ProcessState != nil {
			return cmd.ProcessState.ExitCode(), nil
		}
		return -1, err
	}
	sb, err := sandbox.Start(ctx, *s.Policy, sandbox.Options{Log: log})
	if err != nil {
		return -1, fmt.Errorf("plugin %s: start its sandbox: %w", s.Name, err)
	}
	defer sb.Close()
	// The plugin's standard input and output are the launcher's own
	// (the pipes to Hermes' MCP client) when they are files: no copy on
	// the way. Otherwise they are relayed through a pipe.
	inF, inOK := in.(*os.File)
	outF, outOK := out.(*os.File)
	var relay *os.File
	if !inOK {
		pr, pw, err := os.Pipe()
		if err != nil {
			return -1, err
		}
		defer pr.Close()
		inF, relay = pr, pw
	}
	extra, redirect := []*os.File{inF}, `exec "$@" <&3 3<&-`
	stdout := out
	if outOK {
		extra, redirect, stdout = append(extra, outF), `exec "$@" <&3 >&4 3<&- 4<&-`, io.Discard
	}
	args := append([]string{"/bin/sh", "-c", redirect, "sh"}, argv...)
	p, err := sb.Start(ctx, sandbox.Cmd{Args: args, Dir: s.Dir, Env: s.Env, Stdout: stdout, Stderr: errOut, ExtraFiles: extra})
	if err != nil {
		if relay != nil {
			relay.Close()
		}
		return -1, fmt.Errorf("plugin %s: %w", s.Name, err)
	}
	if relay != nil {
		go func() {
			io.Copy(relay, in)
			relay.Close() // the client hung up: the plugin reads its end
		}()
	}
	go func() {
		<-ctx.Done()
		p.Kill()
	}()
	return p.Wait()
}

// policyFor narrows base, the terminal's sandbox, to what the plugin
// declared it needs: its own directory readable (the home it lies in is
// hidden), the working directory writable only if it asked, the network
// only as far as it asked and base allows.
func policyFor(base sandbox.Policy, p Plugin, wd string) sandbox.Policy {
	pol := base
	pol.Visible = append(append([]string(nil), base.Visible...), p.Dir)
	pol.Writable = nil
	if p.Workspace == "write" && wd != "" && sandbox.CheckWritable(wd, base.Home) == nil && base.Mode != sandbox.ReadOnly {
		pol.Writable = []string{wd}
		pol.Mode = sandbox.WorkspaceWrite
	} else {
		pol.Mode = sandbox.ReadOnly
	}
	pol.Tmp = ""
	switch p.Network {
	case "on":
		// As much as base allows.
	case "allow":
		if base.Network == sandbox.NetOff {
			pol.Network, pol.Allow = sandbox.NetOff, nil
		} else if base.Network == sandbox.NetAllow {
			pol.Allow = intersect(p.Hosts, base.Allow)
			if len(pol.Allow) == 0 {
				pol.Network = sandbox.NetOff
			}
		} else {
			pol.Network, pol.Allow = sandbox.NetAllow, append([]string(nil), p.Hosts...)
		}
	default:
		pol.Network, pol.Allow = sandbox.NetOff, nil
	}
	return pol
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
			}
		}
	}
	return out
}
