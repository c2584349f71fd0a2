package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// dashboardOptions are the flags and arguments of `hermes dashboard`.
type dashboardOptions struct {
	app  *app.Factory
	io   app.IOStreams
	port int
	ov   config.Overrides
}

// dashboardCmd serves the web dashboard alone on loopback: the gateway with
// only its API server (whose chat route the dashboard's chat form uses),
// no chat platforms and no cron scheduler.
func dashboardCmd(g *app.Factory) *cobra.Command {
	opts := &dashboardOptions{app: g}
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve the web dashboard on 127.0.0.1 and print a one-time login link",
		Long: "Serve the web dashboard (sessions, timelines, lineage, search, costs) on 127.0.0.1 alone.\n" +
			"It uses API_SERVER_KEY when one is set; otherwise a random key lives only in this process.\n" +
			"Either way it prints a login link that works once, within ten minutes.\n" +
			"While `hermes gateway run` runs with a key, its API server serves the same dashboard under /dashboard/.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runDashboard(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.port, "port", 8643, "port on 127.0.0.1 (0: any free port)")
	cmd.Flags().StringVarP(&opts.ov.Model, "model", "m", "", "model name (for the chat form's turns)")
	cmd.Flags().StringVar(&opts.ov.Provider, "provider", "", "provider name")
	cmd.Flags().StringVar(&opts.ov.BaseURL, "base-url", "", "API base URL")
	return cmd
}

// runDashboard runs `hermes dashboard`.
func runDashboard(ctx context.Context, opts *dashboardOptions) error {
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	// A gateway on this home already serves the dashboard.
	lock, err := lockFile(filepath.Join(home, "gateway", "gateway.lock"))
	if err == nil {
		lock.Close()
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w; while it runs, its API server serves the dashboard at /dashboard/ (log in with API_SERVER_KEY)", err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runGateway(ctx, opts.app, opts.ov, "", "", "", func(s *gatewaySettings) error {
		a := &s.Platforms.APIServer
		a.Enabled, a.Host, a.Port, a.CORSOrigins = true, "127.0.0.1", opts.port, nil
		on := true
		a.Dashboard = &on
		if a.Key == "" {
			var b [24]byte
			if _, err := rand.Read(b[:]); err != nil {
				return err
			}
			a.Key = "sk-dashboard-" + hex.EncodeToString(b[:])
		}
		s.Platforms.Telegram.Token = ""
		s.Platforms.Webhook.Enabled = false
		s.dashboardOnly = true
		s.onAPI = func(srv *apiserver.Server) {
			go func() {
				select {
				case <-srv.Listening():
				case <-ctx.Done():
					return
				}
				// The link, never the key: it logs one browser in once.
				fmt.Fprintf(os.Stderr, "hermes dashboard: http://%s/dashboard/\n  log in once with: http://%s%s\n", srv.Addr(), srv.Addr(), srv.Dashboard().LoginLink())
			}()
		}
		return nil
	})
}
