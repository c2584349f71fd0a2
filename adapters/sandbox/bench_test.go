//go:build linux

package sandbox

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The cost of the wall: BenchmarkSandboxRun runs a program in a started
// sandbox, BenchmarkPlainExec runs the same program with os/exec (the
// baseline, in the same run), BenchmarkSandboxOverhead alternates the
// two and reports the difference, BenchmarkSandboxStart starts and
// closes sandboxes. Each reports its percentiles in milliseconds beside
// ns/op (the mean).

// benchPrograms are the commands measured: the smallest program, and the
// shell every terminal command goes through.
var benchPrograms = []struct {
	name string
	args []string
}{
	{"true", []string{"/bin/true"}},
	{"bash-c-true", []string{"/bin/bash", "-c", "true"}},
}

var benchEnv = []string{"PATH=" + escPath, "HOME=/nonexistent", "LANG=C"}

// benchPolicy is a terminal's usual policy: a workspace, a hidden agent
// home and the network off.
func benchPolicy(b *testing.B) Policy {
	dir := b.TempDir()
	work, agent := filepath.Join(dir, "work"), filepath.Join(dir, "agent")
	os.MkdirAll(work, 0o755)
	os.MkdirAll(agent, 0o700)
	return Policy{Writable: []string{work}, Hidden: []string{agent}, Network: NetOff}
}

// durations collects per-operation times and reports their percentiles.
type durations []time.Duration

func (d durations) report(b *testing.B, prefix string) {
	if len(d) == 0 {
		return
	}
	s := slices.Clone(d)
	slices.Sort(s)
	pct := func(p float64) float64 {
		return float64(s[min(len(s)-1, int(p*float64(len(s))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), prefix+"p50-ms")
	b.ReportMetric(pct(0.90), prefix+"p90-ms")
	b.ReportMetric(pct(0.99), prefix+"p99-ms")
}

func (d durations) p50() time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func benchSandbox(b *testing.B) *Sandbox {
	sb, err := Start(context.Background(), benchPolicy(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sb.Close() })
	return sb
}

func runSandboxed(b *testing.B, sb *Sandbox, args []string) time.Duration {
	start := time.Now()
	p, err := sb.Start(context.Background(), Cmd{Args: args, Dir: "/", Env: benchEnv, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	if code, err := p.Wait(); err != nil || code != 0 {
		b.Fatalf("%v: %d %v", args, code, err)
	}
	return time.Since(start)
}

func runPlain(b *testing.B, args []string) time.Duration {
	start := time.Now()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = "/", benchEnv, io.Discard, io.Discard
	if err := cmd.Run(); err != nil {
		b.Fatalf("%v: %v", args, err)
	}
	return time.Since(start)
}

// BenchmarkSandboxRun runs a program per iteration in one sandbox
// started beforehand.
func BenchmarkSandboxRun(b *testing.B) {
	for _, prog := range benchPrograms {
		b.Run(prog.name, func(b *testing.B) {
			sb := benchSandbox(b)
			runSandboxed(b, sb, prog.args) // warm the page cache
			d := make(durations, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d = append(d, runSandboxed(b, sb, prog.args))
			}
			b.StopTimer()
			d.report(b, "")
		})
	}
}

// BenchmarkPlainExec is the baseline: the same program with os/exec,
// its output through a pipe as in the sandbox.
func BenchmarkPlainExec(b *testing.B) {
	for _, prog := range benchPrograms {
		b.Run(prog.name, func(b *testing.B) {
			runPlain(b, prog.args)
			d := make(durations, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d = append(d, runPlain(b, prog.args))
			}
			b.StopTimer()
			d.report(b, "")
		})
	}
}

// BenchmarkSandboxOverhead alternates a sandboxed and a plain run of the
// same program per iteration (so that both see the same machine) and
// reports what the sandbox adds at the median.
func BenchmarkSandboxOverhead(b *testing.B) {
	for _, prog := range benchPrograms {
		b.Run(prog.name, func(b *testing.B) {
			sb := benchSandbox(b)
			runSandboxed(b, sb, prog.args)
			runPlain(b, prog.args)
			in, out := make(durations, 0, b.N), make(durations, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				in = append(in, runSandboxed(b, sb, prog.args))
				out = append(out, runPlain(b, prog.args))
			}
			b.StopTimer()
			in.report(b, "sandbox-")
			out.report(b, "plain-")
			b.ReportMetric(float64(in.p50()-out.p50())/float64(time.Millisecond), "added-p50-ms")
			b.ReportMetric(float64(in.p50())/float64(out.p50()), "ratio-p50")
		})
	}
}

// BenchmarkSandboxStart starts a sandbox (its init, namespaces, mounts,
// cgroup) and closes it per iteration.
func BenchmarkSandboxStart(b *testing.B) {
	for _, net := range []NetMode{NetOn, NetOff} {
		b.Run("network-"+string(net), func(b *testing.B) {
			p := benchPolicy(b)
			p.Network = net
			d := make(durations, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				sb, err := Start(context.Background(), p, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if err := sb.Close(); err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(start))
			}
			b.StopTimer()
			d.report(b, "")
		})
	}
}
