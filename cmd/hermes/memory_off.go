package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// memorySwitchCmd is `hermes memory off` (on false) and `hermes memory
// on`: memory.memory_enabled in config.yaml. Off, the memory tool refuses
// every change and new sessions' prompts hold no memory; the files and
// their events stay as they are. (The Python agent's `memory off` turns
// off an external memory provider; this build has none, so off is memory
// itself.)
func memorySwitchCmd(g *app.Factory, on bool) *cobra.Command {
	use, short := "off", "Turn memory off (memory.memory_enabled: false): nothing is remembered or recalled; what is remembered stays"
	if on {
		use, short = "on", "Turn memory back on (memory.memory_enabled: true)"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := g.ResolveHome()
			if err != nil {
				return err
			}
			if err := config.Set(home, "memory.memory_enabled", fmt.Sprint(on)); err != nil {
				return err
			}
			if on {
				_, err = fmt.Fprintln(ioOf(cmd).Out, "memory on: new sessions recall MEMORY.md and USER.md, and the agent may change them")
			} else {
				_, err = fmt.Fprintln(ioOf(cmd).Out, "memory off: the agent's memory changes are refused and new sessions recall nothing; MEMORY.md and USER.md stay (hermes memory on)")
			}
			return err
		},
	}
}
