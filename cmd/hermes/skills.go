package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/mattn/go-isatty"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/skillhub"
	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/schema"
)

func skillsCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "skills", Short: "List, show, install (from a path or a hub) and pin skills; see, compare and roll back their versions"}
	cmd.AddCommand(skillsListCmd(g), skillsShowCmd(g), skillInstallCmd(g), skillsHistoryCmd(g), skillsDiffCmd(g), skillsRollbackCmd(g),
		skillsSearchCmd(g), skillsInspectCmd(g), skillsCheckCmd(g), skillsUpdateCmd(g), skillsUninstallCmd(g), skillsTapCmd(g),
		skillsPinCmd(g, true), skillsPinCmd(g, false), skillsRestoreCmd(g), skillsTryCmd(g))
	return cmd
}

// skillsLibrary is the skills of the home, and of the working directory.
func skillsLibrary(g *app.Factory) (skills.Library, error) {
	home, err := g.ResolveHome()
	if err != nil {
		return skills.Library{}, err
	}
	wd, _ := os.Getwd()
	return app.Library(home, wd), nil
}

// skillsKeeper is the keeper of the home's skills, kept as events in a's
// store (the home was adopted when a was opened).
func skillsKeeper(a *app.App) *skills.Keeper {
	return skills.NewKeeper(a.Store, filepath.Join(a.Home, "skills"))
}

// person is who runs the command, as a skill's history names its author.
func person() schema.SkillAuthor {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "cli"
	}
	return schema.SkillAuthor{Kind: schema.AuthorPerson, Person: name}
}

// githubBase is where owner/repo skill identifiers are cloned from:
// $HERMES_SKILLS_GITHUB, else https://github.com.
func githubBase() string { return os.Getenv("HERMES_SKILLS_GITHUB") }

// skillHub is the skills hub of the home: its git cache and its taps.
func skillHub(home string) (*skillhub.Hub, skillhub.Taps) {
	dir := filepath.Join(home, "skillhub")
	return &skillhub.Hub{CacheDir: filepath.Join(dir, "cache"), GitHub: githubBase()},
		skillhub.Taps{Path: filepath.Join(dir, "taps.json"), GitHub: githubBase()}
}

// confirm asks the person at the terminal question, unless yes; without a
// terminal to ask it refuses, saying to pass --yes.
func confirm(io app.IOStreams, question string, yes bool) error {
	if yes {
		return nil
	}
	f, ok := io.In.(*os.File)
	if !ok || !isatty.IsTerminal(f.Fd()) {
		return errors.New("nobody to ask (stdin is not a terminal): read the above and run again with --yes to go ahead")
	}
	fmt.Fprintf(io.ErrOut, "%s [y/N] ", question)
	line, _ := bufio.NewReader(io.In).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return errors.New("not done: declined")
	}
	return nil
}

// describeBundle prints what a hub offers: the skill, where from, its
// files, the scan's findings and what could not be verified.
func describeBundle(w io.Writer, b skillhub.Bundle, findings []skillhub.Finding) {
	fmt.Fprintf(w, "skill %s: %s\n", b.Name, b.Description)
	pin := "commit " + b.Origin.Pin
	if b.Origin.Source.Kind == skillhub.KindIndex {
		pin = "content " + b.Origin.Pin
	}
	fmt.Fprintf(w, "from %s\npinned to %s\nfiles:\n", b.Origin.Source, pin)
	for _, p := range b.Files.Paths() {
		f := b.Files[p]
		exec := ""
		if f.Mode&0o111 != 0 {
			exec = ", executable"
		}
		fmt.Fprintf(w, "  %s (%d B%s)\n", p, len(f.Data), exec)
	}
	for _, n := range b.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(findings) == 0 {
		fmt.Fprintln(w, "scan: nothing found")
		return
	}
	fmt.Fprintf(w, "scan: %d finding(s), worst %s\n", len(findings), skillhub.Worst(findings))
	for _, f := range findings {
		fmt.Fprintf(w, "  %s\n", f)
	}
}

// scanSummary is the scan's result as a version's reason holds it.
func scanSummary(findings []skillhub.Finding) string {
	if len(findings) == 0 {
		return "scan: nothing found"
	}
	return fmt.Sprintf("scan: %d finding(s), worst %s", len(findings), skillhub.Worst(findings))
}

// vetBundle scans b, shows it, and refuses it when the scan found
// something of high severity (unless force) or the person declines.
func vetBundle(io app.IOStreams, b skillhub.Bundle, action string, yes, force bool) ([]skillhub.Finding, error) {
	verb := map[string]string{"install": "installed", "update": "updated"}[action]
	findings := skillhub.Scan(b.Files)
	describeBundle(io.Out, b, findings)
	if skillhub.Worst(findings) == skillhub.High && !force {
		return findings, fmt.Errorf("refused: the scan found high-severity problems in %s (above); nothing was %s. If you have read the skill and trust it, run again with --force", b.Name, verb)
	}
	if err := confirm(io, fmt.Sprintf("%s %s %s?", strings.ToUpper(action[:1])+action[1:], b.Name, shortPin(b.Origin.Pin)), yes); err != nil {
		return findings, fmt.Errorf("%s was not %s: %w", b.Name, verb, err)
	}
	return findings, nil
}

// shortPin is a pin as people read it: 12 hex digits.
func shortPin(pin string) string {
	hex := strings.TrimPrefix(pin, "sha256:")
	if len(hex) > 12 {
		hex = hex[:12]
	}
	if hex != pin {
		return "sha256:" + hex
	}
	return hex
}
