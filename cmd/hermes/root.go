package main

import (
	"context"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/projections/sessions"
)

// newRoot is the hermes command over g, whose streams it reads and writes.
func newRoot(g *app.Factory) *cobra.Command {
	// hermes alone starts a chat, as Hermes does, and takes chat's flags.
	chat := &chatFlags{}
	root := &cobra.Command{
		Use:           "hermes",
		Short:         "Hermes: an event-sourced AI agent (alone: a chat, as hermes chat)",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionLine(),
		Args:          unknownCommand,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return g.Setup()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			chat.app, chat.io = g, ioOf(cmd)
			return runChat(cmd.Context(), chat)
		},
	}
	addChatFlags(root.Flags(), chat)
	root.Flags().BoolP("version", "V", false, "print the version and the commit this hermes was built from")
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(g.IO.In)
	root.SetOut(g.IO.Out)
	root.SetErr(g.IO.ErrOut)
	root.PersistentFlags().StringVar(&g.HomeFlag, "home", "", "Hermes home directory (default $HERMES_HOME or ~/.hermes)")
	root.PersistentFlags().StringVar(&g.LogLevel, "log-level", "warn", "diagnostics level on stderr: trace, debug, info, warn, error")
	root.PersistentFlags().StringVar(&g.StoreFlag, "store", "", "event store: embedded (default), postgres://user@host/db or esdb://host:2113 (default $HERMES_STORE, then store: in config.yaml)")
	root.PersistentFlags().BoolVar(&g.AcceptHooks, "accept-hooks", false, "run the shell hooks of config.yaml without asking about new ones (default $HERMES_ACCEPT_HOOKS, then hooks_auto_accept in config.yaml)")
	root.PersistentFlags().BoolVar(&g.ReadOnly, "read-only", false, "open the home without writing to it (automatic when its files cannot be written); commands that write fail")
	root.AddCommand(chatCmd(g), sessionsCmd(g), projectionsCmd(g), toolsCmd(g), skillsCmd(g), costsCmd(g), searchCmd(g), importCmd(g), gatewayCmd(g), dashboardCmd(g), nodeCmd(g), clusterCmd(g), pairingCmd(g), approvalsCmd(g), configCmd(g), modelCmd(g), doctorCmd(g), setupCmd(g), cronCmd(g), mcpCmd(g), hooksCmd(g), pluginsCmd(g), storeCmd(g), acpCmd(g), versionCmd(), insightsCmd(g), curatorCmd(g), memoryCmd(g), reviewCmd(g))
	refuseUnknownSubcommands(root)
	return root
}

// withSession opens the home, brings the projections up to date, resolves
// arg (an id or a unique prefix) and runs fn.
func withSession(ctx context.Context, g *app.Factory, arg string, fn func(a *app.App, s sessions.Summary) error) error {
	a, err := g.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.Fresh(ctx); err != nil {
		return err
	}
	s, err := findSession(ctx, a, arg)
	if err != nil {
		return err
	}
	return fn(a, s)
}

// ioOf are the streams cmd reads and writes: the Factory's, set on the
// root (see newRoot).
func ioOf(cmd *cobra.Command) app.IOStreams {
	return app.IOStreams{In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr()}
}
