package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/adapters/curator"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// curatorCmd is `hermes curator`.
func curatorCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "curator", Short: "Keep the skill library small: find duplicates, near-duplicates and long-unused skills, and archive them (reversibly; pinned skills never)"}
	cmd.AddCommand(curatorRunCmd(g), curatorStatusCmd(g))
	return cmd
}

// curatorFlags are the survey's settings, shared by run and status.
type curatorFlags struct {
	staleDays, archiveDays int
	similarity             float64
}

func (f *curatorFlags) register(cmd *cobra.Command) {
	d := curator.Defaults()
	cmd.Flags().IntVar(&f.staleDays, "stale-days", int(d.StaleAfter.Hours()/24), "days without use that make a skill stale (reported)")
	cmd.Flags().IntVar(&f.archiveDays, "archive-days", int(d.ArchiveAfter.Hours()/24), "days without use that make a skill proposed for archiving")
	cmd.Flags().Float64Var(&f.similarity, "similarity", d.NearDuplicate, "least similarity (Jaccard index of 3-word shingles, 0 to 1) of two near-duplicates")
}

func (f curatorFlags) config() (curator.Config, error) {
	if f.similarity <= 0 || f.similarity > 1 {
		return curator.Config{}, fmt.Errorf("--similarity %v: give a number above 0, at most 1", f.similarity)
	}
	if f.staleDays < 0 || f.archiveDays < 0 {
		return curator.Config{}, fmt.Errorf("--stale-days and --archive-days are whole days, 0 or more")
	}
	return curator.Config{StaleAfter: time.Duration(f.staleDays) * 24 * time.Hour, ArchiveAfter: time.Duration(f.archiveDays) * 24 * time.Hour, NearDuplicate: f.similarity}, nil
}

// curatorLastRun is what `hermes curator status` says of the last run,
// kept in $HERMES_HOME/curator/last_run.json (the changes themselves are
// events on the skills' streams, by the run).
type curatorLastRun struct {
	Run      string    `json:"run"`
	Time     time.Time `json:"time"`
	Proposed int       `json:"proposed"`
	Archived []string  `json:"archived,omitempty"`
	Failed   []string  `json:"failed,omitempty"`
}

func lastRunPath(home string) string { return filepath.Join(home, "curator", "last_run.json") }

// printCuratorReport prints a survey's proposals and what it spared.
func printCuratorReport(w io.Writer, r curator.Report) {
	fmt.Fprintf(w, "%d skill(s) surveyed\n", len(r.Skills))
	for _, p := range r.Proposals {
		fmt.Fprintf(w, "  archive %s: %s\n", p.Skill, p.Reason)
	}
	for _, s := range r.Spared {
		fmt.Fprintf(w, "  leave %s\n", s)
	}
	if len(r.Stale) > 0 {
		fmt.Fprintf(w, "  stale (not yet proposed): %s\n", strings.Join(r.Stale, ", "))
	}
	if len(r.Proposals) == 0 {
		fmt.Fprintln(w, "nothing to archive")
	}
}

// runCurator surveys a's library and, unless dryRun, archives what it
// proposes once the person agrees (yes: without asking).
func runCurator(ctx context.Context, a *app.App, ios app.IOStreams, cfg curator.Config, yes, dryRun bool) error {
	k := skillsKeeper(a)
	r, err := curator.Survey(ctx, a.Store, k, cfg)
	if err != nil {
		return err
	}
	printCuratorReport(ios.Out, r)
	if dryRun || len(r.Proposals) == 0 {
		return nil
	}
	if err := confirm(ios, fmt.Sprintf("Archive %d skill(s)?", len(r.Proposals)), yes); err != nil {
		return err
	}
	now := time.Now()
	run := curator.NewRun(now)
	rec := curatorLastRun{Run: run, Time: now.UTC(), Proposed: len(r.Proposals)}
	for _, ap := range curator.Apply(ctx, k, run, r.Proposals) {
		if ap.Err != nil {
			fmt.Fprintf(ios.ErrOut, "%s: not archived: %v\n", ap.Skill, ap.Err)
			rec.Failed = append(rec.Failed, ap.Skill)
			continue
		}
		rec.Archived = append(rec.Archived, ap.Skill)
		fmt.Fprintf(ios.Out, "archived %s (version %d; hermes skills rollback %s brings it back)\n", ap.Skill, ap.Version, ap.Skill)
	}
	fmt.Fprintf(ios.Out, "curator run %s\n", run)
	if err := os.MkdirAll(filepath.Dir(lastRunPath(a.Home)), 0o755); err == nil {
		b, _ := json.MarshalIndent(rec, "", "  ")
		os.WriteFile(lastRunPath(a.Home), append(b, '\n'), 0o644)
	}
	if len(rec.Failed) > 0 {
		return fmt.Errorf("%d of %d skill(s) not archived", len(rec.Failed), len(r.Proposals))
	}
	return nil
}

// curatorScripts runs a cron job's script `hermes curator run [--yes]
// [--dry-run]` in this process, on the home's store, and every other
// script as scripts: so the curator is scheduled through cron (hermes cron
// add --no-agent --script "hermes curator run --yes" --schedule "every
// 7d") without the script's sandbox, which hides the home, having to run
// hermes. Nothing else of the command line is taken: no other command,
// flag or home.
type curatorScripts struct {
	cron.Scripts
	app *app.App
}

// Run implements cron.Scripts.
func (s curatorScripts) Run(ctx context.Context, command string) (string, error) {
	f := strings.Fields(command)
	if len(f) < 3 || f[0] != "hermes" || f[1] != "curator" || f[2] != "run" {
		return s.Scripts.Run(ctx, command)
	}
	yes, dry := false, false
	for _, a := range f[3:] {
		switch a {
		case "--yes", "-y":
			yes = true
		case "--dry-run":
			dry = true
		default:
			return "", fmt.Errorf("a scheduled curator run takes --yes and --dry-run only, not %q", a)
		}
	}
	var out strings.Builder
	err := runCurator(ctx, s.app, app.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, curator.Defaults(), yes, dry)
	return strings.TrimRight(out.String(), "\n"), err
}
