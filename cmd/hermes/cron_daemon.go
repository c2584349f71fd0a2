package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/adapters/bus"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// cronDaemonOptions are the flags of `hermes cron daemon`.
type cronDaemonOptions struct {
	app *app.Factory
	io  app.IOStreams
	ov  config.Overrides
}

// cronDaemonCmd is `hermes cron daemon`.
func cronDaemonCmd(g *app.Factory) *cobra.Command {
	opts := &cronDaemonOptions{app: g}
	daemon := &cobra.Command{Use: "daemon", Short: "Run the scheduler in the foreground without a gateway (Ctrl-C or SIGTERM stops it)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runCronDaemon(ctx, opts)
		},
	}
	modelFlags(daemon, &opts.ov)
	return daemon
}

// runCronDaemon runs the scheduler without a gateway. With gateway.bus
// set to NATS it delivers through the gateway of that bus; otherwise
// platform targets are recorded as failed, saying why.
func runCronDaemon(ctx context.Context, opts *cronDaemonOptions) error {
	c, err := newChatter(opts.app, opts.ov, nil)
	if err != nil {
		return err
	}
	defer c.Stop()
	fileCfg, err := config.Load(c.App.Home)
	if err != nil {
		return err
	}
	gset, err := resolveGateway(fileCfg)
	if err != nil {
		return err
	}
	var pub cron.Publisher
	via := "platform targets need `hermes gateway run` (or gateway.bus: nats://…)"
	if bus.IsNATS(gset.Bus) {
		btls, err := busTLS(c.App.Home, gset.BusTLS)
		if err != nil {
			return err
		}
		b, err := bus.OpenWith(gset.Bus, btls, opts.app.Log)
		if err != nil {
			return err
		}
		defer b.Close()
		pub, via = bus.OutboundPublisher{Bus: b}, "platform targets through "+gset.Bus
	}
	s := c.scheduler(pub, nil)
	c.cron().tool.SetRunner(s)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-s.Ready():
	case err := <-done:
		return err
	}
	all, _ := c.cron().jobs.Load(ctx)
	fmt.Fprintf(opts.io.ErrOut, "hermes cron: scheduler running (%d job(s); %s); Ctrl-C stops it\n", len(all), via)
	err = <-done
	fmt.Fprintln(opts.io.ErrOut, "hermes cron: stopped")
	return err
}
