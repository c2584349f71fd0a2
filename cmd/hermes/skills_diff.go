package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/internal/udiff"
)

// skillsDiffOptions are the flags and arguments of `hermes skills diff`.
type skillsDiffOptions struct {
	app      *app.Factory
	io       app.IOStreams
	name     string
	versions []int
}

// skillsDiffCmd is `hermes skills diff`.
func skillsDiffCmd(g *app.Factory) *cobra.Command {
	opts := &skillsDiffOptions{app: g}
	return &cobra.Command{
		Use:   "diff NAME [V1 [V2]]",
		Short: "Show what changed in a skill between two versions (default: the previous one and the current one; V1 alone: V1 and the current one)",
		Args:  cobra.RangeArgs(1, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.name = args[0]
			opts.versions = nil
			for _, s := range args[1:] {
				n, err := parseVersion(s)
				if err != nil {
					return err
				}
				opts.versions = append(opts.versions, n)
			}
			return runSkillsDiff(cmd.Context(), opts)
		},
	}
}

// parseVersion reads a version number: 3 or v3.
func parseVersion(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(strings.ToLower(s), "v"))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("version %q: give a number from hermes skills history (3 or v3)", s)
	}
	return n, nil
}

// runSkillsDiff runs `hermes skills diff`.
func runSkillsDiff(ctx context.Context, opts *skillsDiffOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	hist, _, err := skills.History(ctx, a.Store, opts.name)
	if err != nil {
		return err
	}
	if len(hist) == 0 {
		return fmt.Errorf("skill %s has no history: hermes skills list shows the skills there are", opts.name)
	}
	from, to := len(hist)-1, len(hist)
	switch len(opts.versions) {
	case 1:
		from = opts.versions[0]
	case 2:
		from, to = opts.versions[0], opts.versions[1]
	}
	for _, n := range []int{from, to} {
		if n > len(hist) {
			return fmt.Errorf("skill %s has versions v1 to v%d, not v%d", opts.name, len(hist), n)
		}
	}
	var old skills.Snapshot
	if from > 0 {
		old = hist[from-1].Files
	}
	cur := hist[to-1].Files
	paths := cur.Paths()
	for _, p := range old.Paths() {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	label := func(n int, p string, s skills.Snapshot) string {
		if _, ok := s[p]; !ok {
			return "/dev/null"
		}
		return fmt.Sprintf("%s@v%d/%s", opts.name, n, p)
	}
	for _, p := range paths {
		was, is := string(old[p].Data), string(cur[p].Data)
		_, inOld := old[p]
		_, inCur := cur[p]
		if inOld && inCur && old[p].Sum() == cur[p].Sum() {
			continue
		}
		if !old[p].Kept() || !cur[p].Kept() {
			fmt.Fprintf(opts.io.Out, "Files %s and %s differ (too large to keep in the log: compared by hash)\n", label(from, p, old), label(to, p, cur))
			continue
		}
		if !utf8.ValidString(was) || !utf8.ValidString(is) {
			fmt.Fprintf(opts.io.Out, "Binary files %s and %s differ\n", label(from, p, old), label(to, p, cur))
			continue
		}
		fmt.Fprint(opts.io.Out, udiff.Unified(label(from, p, old), label(to, p, cur), was, is, 3))
	}
	return nil
}
