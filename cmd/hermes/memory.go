package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/tools/memory"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events"
)

// memoryCmd is `hermes memory`: what the agent remembers (MEMORY.md,
// USER.md, kept as events on the "memory" stream), turning it off and
// on, and resetting it (reversibly).
func memoryCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "memory", Short: "What the agent remembers: status, off, on, reset (reversible with --undo)"}
	cmd.AddCommand(memoryStatusCmd(g), memorySwitchCmd(g, false), memorySwitchCmd(g, true), memoryResetCmd(g))
	return cmd
}

// memoryTargets are the targets --target names: all, memory or user.
func memoryTargets(target string) ([]string, error) {
	switch target {
	case "all", "":
		return []string{"memory", "user"}, nil
	case "memory", "user":
		return []string{target}, nil
	}
	return nil, fmt.Errorf("--target %q: give all, memory or user", target)
}

// memoryStatus is what hermes memory status and /memory say: whether
// memory is on, the review gate, the entries, and the changes waiting.
func memoryStatus(ctx context.Context, home string, store events.Store) (string, error) {
	file, err := config.Load(home)
	if err != nil {
		return "", err
	}
	m := file.Memory
	var b strings.Builder
	onOff := func(on bool) string {
		if on {
			return "on"
		}
		return "off"
	}
	fmt.Fprintf(&b, "memory %s (memory.memory_enabled), user profile %s (memory.user_profile_enabled), review gate %s (memory.write_approval)",
		onOff(m.On()), onOff(m.UserOn()), onOff(m.WriteApproval))
	for _, target := range []string{"memory", "user"} {
		entries, _, err := memory.Current(ctx, store, target)
		if err != nil {
			return "", err
		}
		b.WriteString("\n" + memory.Describe(target, entries))
	}
	pending, err := memoryPending(ctx, store)
	if err != nil {
		return "", err
	}
	b.WriteString("\n" + pending)
	return b.String(), nil
}

// memoryPending lists the changes waiting for review.
func memoryPending(ctx context.Context, store events.Store) (string, error) {
	pending, err := memory.Pending(ctx, store)
	if err != nil {
		return "", err
	}
	if len(pending) == 0 {
		return "no memory changes wait for review", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d memory change(s) wait for review (/memory approve ID|all, /memory reject ID|all):", len(pending))
	for _, p := range pending {
		fmt.Fprintf(&b, "\n  %s  %s  (session %s, %s)", p.ID, p.Summary(), short(p.SessionID), p.Time.Local().Format("2006-01-02 15:04"))
	}
	return b.String(), nil
}

// memoryCommand runs /memory's argument in a chat of platform by (cli,
// telegram, ...): alone, the status; pending; approve or reject ID|all;
// approval on|off (saved in config.yaml).
func memoryCommand(ctx context.Context, home string, store events.Store, by, arg string) (string, error) {
	f := strings.Fields(arg)
	if len(f) == 0 {
		return memoryStatus(ctx, home, store)
	}
	dir := filepath.Join(home, "memories")
	usage := fmt.Errorf("usage: /memory [pending | approve ID|all | reject ID|all | approval on|off]")
	switch strings.ToLower(f[0]) {
	case "pending":
		return memoryPending(ctx, store)
	case "approve", "apply", "reject", "deny", "drop":
		if len(f) != 2 {
			return "", usage
		}
		var lines []string
		var err error
		if v := strings.ToLower(f[0]); v == "approve" || v == "apply" {
			lines, err = memory.Approve(ctx, store, dir, f[1], by)
		} else {
			lines, err = memory.Reject(ctx, store, f[1], by)
		}
		return strings.Join(lines, "\n"), err
	case "approval", "mode":
		if len(f) != 2 {
			file, err := config.Load(home)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("memory.write_approval is %v; /memory approval on|off changes it", file.Memory.WriteApproval), nil
		}
		var on bool
		switch strings.ToLower(f[1]) {
		case "on", "true", "yes", "1":
			on = true
		case "off", "false", "no", "0":
		default:
			return "", usage
		}
		if err := config.Set(home, "memory.write_approval", fmt.Sprint(on)); err != nil {
			return "", err
		}
		if on {
			return "memory.write_approval on: what the agent wants to remember waits for your approval (/memory)", nil
		}
		return "memory.write_approval off: the agent's memory changes are saved as it makes them (those waiting still wait: /memory)", nil
	}
	return "", usage
}
