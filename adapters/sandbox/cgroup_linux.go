package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// cgroup bounds the processes and memory of one sandbox together, where
// this process may make a cgroup (cgroup v2 with the controllers
// delegated, or v1's pids and memory hierarchies). Elsewhere only the
// rlimits bind, and Probe says so.
type cgroup struct {
	dirs []string
}

// cgroupPlaces are the directories a sandbox's cgroup is made in, with
// the file that bounds processes and the one that bounds memory.
func cgroupPlaces() []struct{ dir, procs, mem string } {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []struct{ dir, procs, mem string }
	s := bufio.NewScanner(f)
	for s.Scan() {
		parts := strings.SplitN(s.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			base := "/sys/fs/cgroup"
			if _, err := os.Stat(filepath.Join(base, "cgroup.controllers")); err != nil {
				base = "/sys/fs/cgroup/unified"
			}
			ctl, err := os.ReadFile(filepath.Join(base, parts[2], "cgroup.subtree_control"))
			if err == nil && strings.Contains(string(ctl), "pids") {
				out = append(out, struct{ dir, procs, mem string }{filepath.Join(base, parts[2]), "pids.max", ifContains(string(ctl), "memory", "memory.max")})
			}
		case parts[1] == "pids":
			out = append(out, struct{ dir, procs, mem string }{filepath.Join("/sys/fs/cgroup/pids", parts[2]), "pids.max", ""})
		case parts[1] == "memory":
			out = append(out, struct{ dir, procs, mem string }{filepath.Join("/sys/fs/cgroup/memory", parts[2]), "", "memory.limit_in_bytes"})
		}
	}
	// v2 (delegated) replaces v1.
	for _, p := range out {
		if p.procs == "pids.max" && p.mem == "memory.max" {
			return []struct{ dir, procs, mem string }{p}
		}
	}
	return out
}

func ifContains(s, sub, v string) string {
	if strings.Contains(s, sub) {
		return v
	}
	return ""
}

// newCgroup puts pid in a new cgroup with l's ceilings, as far as it can.
func newCgroup(pid int, l Limits, log zerolog.Logger) *cgroup {
	l = l.withDefaults()
	cg := &cgroup{}
	for _, p := range cgroupPlaces() {
		dir := filepath.Join(p.dir, fmt.Sprintf("hermes-sandbox-%d-%d", os.Getpid(), pid))
		if err := os.Mkdir(dir, 0o755); err != nil {
			continue
		}
		ok := true
		if p.procs != "" {
			ok = os.WriteFile(filepath.Join(dir, p.procs), []byte(strconv.Itoa(l.Procs)), 0) == nil
		}
		if ok && p.mem != "" {
			ok = os.WriteFile(filepath.Join(dir, p.mem), []byte(strconv.FormatInt(l.Memory, 10)), 0) == nil
		}
		if ok {
			ok = os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0) == nil
		}
		if !ok {
			log.Debug().Str("cgroup", dir).Msg("sandbox: cgroup not usable")
			os.Remove(dir)
			continue
		}
		cg.dirs = append(cg.dirs, dir)
	}
	return cg
}

// remove deletes the cgroups once their processes are gone.
func (cg *cgroup) remove() {
	for _, d := range cg.dirs {
		for i := 0; i < 50; i++ {
			if os.Remove(d) == nil || os.IsNotExist(os.Remove(d)) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// cgroupKind says which cgroup ceilings this process can set.
func cgroupKind() string {
	var kinds []string
	for _, p := range cgroupPlaces() {
		probe := filepath.Join(p.dir, fmt.Sprintf("hermes-sandbox-probe-%d", os.Getpid()))
		if os.Mkdir(probe, 0o755) != nil {
			continue
		}
		os.Remove(probe)
		switch {
		case p.procs != "" && p.mem != "":
			kinds = append(kinds, "cgroup v2 (processes, memory)")
		case p.procs != "":
			kinds = append(kinds, "cgroup v1 pids")
		default:
			kinds = append(kinds, "cgroup v1 memory")
		}
	}
	return strings.Join(kinds, ", ")
}
