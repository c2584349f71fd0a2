package browser

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Usage is what a set of processes holds.
type Usage struct {
	// Procs is how many processes there are.
	Procs int
	// RSS is the sum of their resident sets in bytes (pages they share
	// are counted once per process).
	RSS int64
	// PSS is the sum of their proportional sets in bytes (a shared page
	// is divided among the processes sharing it): what they cost the
	// machine together.
	PSS int64
}

// Usage returns what every browser process started by b holds now: the
// processes whose environment carries b's mark (helpers inherit it).
func (b *Browsers) Usage() Usage {
	var u Usage
	for _, pid := range marked(b.mark) {
		u.Procs++
		u.RSS += statusKB(pid, "VmRSS:") * 1024
		u.PSS += rollupKB(pid, "Pss:") * 1024
	}
	return u
}

// marked lists the processes whose environment holds markEnv=mark.
func marked(mark string) []int {
	want := []byte(markEnv + "=" + mark + "\x00")
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if bytes.Contains(append(env, 0), want) {
			out = append(out, pid)
		}
	}
	return out
}

func statusKB(pid int, key string) int64 {
	return fieldKB(filepath.Join("/proc", strconv.Itoa(pid), "status"), key)
}

func rollupKB(pid int, key string) int64 {
	return fieldKB(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"), key)
}

func fieldKB(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}
