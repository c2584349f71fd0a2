package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// gatewayStatusOptions are the flags and arguments of `hermes gateway status`.
type gatewayStatusOptions struct {
	app    *app.Factory
	io     app.IOStreams
	asJSON bool
}

// gatewayStatusCmd is `hermes gateway status`.
func gatewayStatusCmd(g *app.Factory) *cobra.Command {
	opts := &gatewayStatusOptions{app: g}
	status := &cobra.Command{
		Use:   "status",
		Short: "Platforms, whether connected, sessions active, messages in and out, last error",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runGatewayStatus(cmd.Context(), opts)
		},
	}
	status.Flags().BoolVar(&opts.asJSON, "json", false, "JSON output")
	return status
}

// runGatewayStatus runs `hermes gateway status`.
func runGatewayStatus(ctx context.Context, opts *gatewayStatusOptions) error {
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	return printGatewayStatus(opts.io.Out, home, opts.asJSON)
}

func printGatewayStatus(w io.Writer, home string, asJSON bool) error {
	data, err := os.ReadFile(filepath.Join(home, "gateway", "status.json"))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("the gateway has never run in %s: start it with `hermes gateway run`", home)
	}
	if err != nil {
		return err
	}
	var st gatewayStatus
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(home, "gateway", "status.json"), err)
	}
	running := !st.Stopped && processAlive(st.PID)
	if asJSON {
		out := map[string]any{"running": running, "status": st}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if running {
		fmt.Fprintf(w, "gateway: running (pid %d, since %s, bus %s), %d session(s) active\n", st.PID, st.Started.Local().Format(time.DateTime), st.Bus, st.Active)
	} else {
		fmt.Fprintf(w, "gateway: not running (last seen %s)\n", st.Updated.Local().Format(time.DateTime))
	}
	if c := st.Cluster; c != nil {
		fmt.Fprintf(w, "cluster: %d agent node(s) (etcd %s; this gateway at %s)\n", len(c.Members), strings.Join(c.Etcd, ","), c.Address)
		for _, m := range c.Members {
			fmt.Fprintf(w, "  node %s\n", m)
		}
		if c.Warning != "" {
			fmt.Fprintf(w, "  warning: %s\n", c.Warning)
		}
	}
	sort.Slice(st.Platforms, func(i, j int) bool { return st.Platforms[i].Platform < st.Platforms[j].Platform })
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "PLATFORM\tCONNECTED\tIN\tOUT\tREFUSED\tLAST ERROR")
	for _, p := range st.Platforms {
		conn := "no"
		if p.Connected && running {
			conn = "yes"
		}
		last := p.LastError
		if last != "" {
			last = p.ErrorAt.Local().Format(time.DateTime) + " " + last
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", p.Platform, conn, p.In, p.Out, p.Refused, last)
	}
	return tw.Flush()
}
