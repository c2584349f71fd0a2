package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/node"
	"github.com/hermes-go/hermes/actors/review"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/bus"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/hooks"
	"github.com/hermes-go/hermes/adapters/telemetry"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// gatewaySettings is the gateway's configuration after the environment.
type gatewaySettings struct {
	config.GatewaySettings
	// dashboardOnly is `hermes dashboard`: the API server alone, and no
	// cron scheduler.
	dashboardOnly bool
	// onAPI is called with the API server once it is built.
	onAPI func(*apiserver.Server)
}

// resolveGateway is the gateway's configuration (see config.Gateway).
func resolveGateway(c config.Config) (gatewaySettings, error) {
	s, err := config.Gateway(c)
	return gatewaySettings{GatewaySettings: s}, err
}

func (s gatewaySettings) auth() gateway.Auth {
	a := gateway.Auth{AllowAll: s.AllowAllUsers, Global: s.AllowedUsers, Pairing: s.Pairing == nil || *s.Pairing,
		Platform: map[string][]string{
			"telegram": s.Platforms.Telegram.AllowedUsers,
			"slack":    s.Platforms.Slack.AllowedUsers,
			"matrix":   s.Platforms.Matrix.AllowedUsers,
			"email":    s.Platforms.Email.AllowedUsers,
		}}
	a.Platform["irc"] = s.Platforms.IRC.AllowedUsers
	a.Platform["xmpp"] = s.Platforms.XMPP.AllowedUsers
	return a
}

// gatewayEnv is what a platform's constructor may use.
type gatewayEnv struct {
	home   string
	set    gatewaySettings
	chat   *chatter
	router *gateway.Router
	bus    *bus.Bus
	// cron is the gateway's scheduler (the API's jobs routes run jobs on
	// it).
	cron *gatewayCron
	// served are the platforms on the bus, once they are (the dashboard's
	// gateway page).
	served atomic.Pointer[[]*gw.Served]
}

// lateAsker lets the session manager be built before the router whose
// asker it uses.
type lateAsker struct {
	mu sync.Mutex
	a  tool.Asker
}

func (l *lateAsker) Ask(ctx context.Context, q tool.Question) (string, error) {
	l.mu.Lock()
	a := l.a
	l.mu.Unlock()
	if a == nil {
		return "", tool.ErrNoAsker
	}
	return a.Ask(ctx, q)
}

// set makes a the asker.
func (l *lateAsker) set(a tool.Asker) {
	l.mu.Lock()
	l.a = a
	l.mu.Unlock()
}

func gatewayCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "gateway", Short: "The long-running gateway: chat platforms, the API server, webhooks"}
	cmd.AddCommand(gatewayRunCmd(g), gatewayStatusCmd(g))
	return cmd
}

// gatewayStatus is $HERMES_HOME/gateway/status.json, rewritten every few
// seconds by the running gateway.
type gatewayStatus struct {
	PID       int                    `json:"pid"`
	Started   time.Time              `json:"started"`
	Updated   time.Time              `json:"updated"`
	Stopped   bool                   `json:"stopped"`
	Bus       string                 `json:"bus"`
	Active    int                    `json:"sessions_active"`
	Platforms []platformStatusReport `json:"platforms"`
	// Cluster is the cluster the gateway runs turns on (cluster mode).
	Cluster *clusterReport `json:"cluster,omitempty"`
}

// clusterReport is the cluster as a gateway in cluster mode sees it.
type clusterReport struct {
	Etcd    []string `json:"etcd"`
	Address string   `json:"address"`
	// Members are the agent nodes' remote addresses in the gateway's
	// current view of the membership.
	Members []string `json:"members"`
	// Warning says what is wrong with etcd, the coordinator, when
	// something is (the gateway then runs turns on the last membership it
	// saw).
	Warning string `json:"warning,omitempty"`
}

type platformStatusReport struct {
	gw.Status
	In      int64 `json:"messages_in"`
	Out     int64 `json:"messages_out"`
	Refused int64 `json:"refused"`
}

// runGateway runs the gateway; clusterFlag, when set, runs its turns on the
// cluster's agent nodes; adjust, if given, changes its settings after the
// configuration is read (`hermes dashboard`).
func runGateway(ctx context.Context, g *app.Factory, ov config.Overrides, clusterFlag, listenFlag, metricsFlag string, adjust ...func(*gatewaySettings) error) error {
	late := &lateAsker{}
	c, err := newChatter(g, ov, late)
	if err != nil {
		return err
	}
	defer c.Stop()
	fileCfg, err := config.Load(c.App.Home)
	if err != nil {
		return err
	}
	set, err := resolveGateway(fileCfg)
	if err != nil {
		return err
	}
	stopTelemetry, err := startTelemetry(ctx, "hermes-gateway", fileCfg, metricsFlag, g.Log)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	for _, f := range adjust {
		if err := f(&set); err != nil {
			return err
		}
	}
	dir := filepath.Join(c.App.Home, "gateway")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	lock, err := lockFile(filepath.Join(dir, "gateway.lock"))
	if err != nil {
		return err
	}
	defer lock.Close()
	btls, err := busTLS(c.App.Home, set.BusTLS)
	if err != nil {
		return err
	}
	b, err := bus.OpenWith(set.Bus, btls, g.Log)
	if err != nil {
		return err
	}
	defer b.Close()
	jobs := c.gatewayCron(b)
	// A background review's note goes to the chat whose session it read.
	c.OnReview(func(f review.Finished) { reviewNoteToChat(c.App.Store, bus.OutboundPublisher{Bus: b}, f, g.Log) })
	defer c.OnReview(nil)
	rcfg := gateway.Config{Auth: set.auth(), Busy: set.Busy, GroupsWithoutMention: set.GroupsWithoutMention,
		SharedGroupSessions: set.SharedGroupSessions, Model: c.Cfg.Model, Prices: c.Cfg.Prices, Acks: jobs.Ack, Images: app.WithTranscripts(app.AttachmentImages(c.App.Blobs()), app.Transcriber(c.Cfg), g.Log),
		NewSession:    func(ctx context.Context, platform string) (string, error) { return c.newSession(ctx, platform) },
		CreateSession: func(ctx context.Context, platform, id string) error { return c.createSession(ctx, platform, id) }}
	if c.Hooks != nil && c.Hooks.Has(hooks.PreGatewayDispatch) {
		rcfg.Dispatch = c.Hooks.GatewayDispatch
	}
	rcfg.Skill, rcfg.Memory, rcfg.Insights, rcfg.Info = c.gatewaySkill, c.gatewayMemory, c.gatewayInsights, c.gatewayInfo
	rcfg.Display = func(platform string) gateway.Display { return set.Displays[platform] }
	rcfg.Version, rcfg.Personalities = versionLine(), map[string]string{}
	for name, p := range c.File.Personalities() {
		rcfg.Personalities[name] = p.Prompt()
	}
	// A chat's actor stops when idle as its session's does
	// (sessions.idle_after): the gateway's memory follows the chats at
	// work.
	switch idle := c.Cfg.IdleAfter; {
	case idle == 0:
		rcfg.ChatIdle = session.DefaultIdleAfter
	case idle > 0:
		rcfg.ChatIdle = idle
	}
	if set.SessionReset.Mode == "idle" {
		rcfg.IdleReset = time.Duration(set.SessionReset.IdleMinutes) * time.Minute
	}
	router := gateway.New(c.App.Store, b.Transport, c.Sys, rcfg, g.Log)
	_ = telemetry.Gauge("hermes.gateway.active_turns", "{turn}", "Chats with a turn in flight", func() int64 { return int64(router.Stats().Active()) })
	router.Sessions = c.Mgr
	if listenFlag != "" && clusterFlag == "" && len(fileCfg.Cluster.Etcd) == 0 {
		return errors.New("--listen is the gateway's address in a cluster: pass --cluster (or cluster.etcd in config.yaml) too")
	}
	var clusterView func() *clusterReport
	if clusterFlag != "" || len(fileCfg.Cluster.Etcd) > 0 {
		ncfg, err := nodeConfig(c.App.Home, clusterFlag, listenFlag)
		if err != nil {
			return err
		}
		if err := clusterStore(c.App); err != nil {
			return err
		}
		cl, err := node.Client(c.Sys, ncfg, g.Log)
		if err != nil {
			return err
		}
		defer cl.Leave()
		clusterView = func() *clusterReport {
			return &clusterReport{Etcd: ncfg.Etcd, Address: cl.Address(), Members: cl.Members(), Warning: cl.Warning()}
		}
		_ = telemetry.Gauge("hermes.cluster.members", "{member}", "Agent nodes in the gateway's view of the cluster", func() int64 { return int64(len(cl.Members())) })
		ns := node.NewSessions(cl)
		ns.Store = c.App.Store // a turn recorded completed is answered even if its member's reply is lost
		// Questions of turns running on nodes (clarify, approvals) are
		// asked in the chat, as for turns run here.
		ns.Asker = router.Asker()
		router.Sessions = ns
		g.Log.Info().Strs("etcd", ncfg.Etcd).Msg("gateway in cluster mode: turns run on agent nodes")
	}
	late.set(router.Asker())

	env := &gatewayEnv{home: c.App.Home, set: set, chat: c, router: router, bus: b, cron: jobs}
	var platforms []gw.Platform
	builders := []func(*gatewayEnv) (gw.Platform, error){
		apiPlatform,
		telegramPlatform,
		webhookPlatform,
		slackPlatform,
		ircPlatform,
		matrixPlatform,
		emailPlatform,
		xmppPlatform,
		homeassistantPlatform,
	}
	for _, build := range builders {
		p, err := build(env)
		if err != nil {
			return err
		}
		if p != nil {
			platforms = append(platforms, p)
		}
	}
	// The enabled plugins' platforms (installing a plugin is the
	// consent); their users are authorised as any platform's: the global
	// allow-list, or pairing.
	for _, p := range c.Plugins.Platforms(g.Log) {
		if slices.ContainsFunc(platforms, func(q gw.Platform) bool { return q.Name() == p.Name() }) {
			g.Log.Warn().Str("platform", p.Name()).Msg("two plugins declare this platform: the first one serves it")
			continue
		}
		platforms = append(platforms, p)
	}
	if len(platforms) == 0 {
		return errors.New("no platform is configured: set TELEGRAM_BOT_TOKEN, SLACK_BOT_TOKEN, IRC_SERVER, MATRIX_HOMESERVER (with MATRIX_ACCESS_TOKEN), EMAIL_ADDRESS (with EMAIL_PASSWORD, EMAIL_IMAP_HOST, EMAIL_SMTP_HOST), XMPP_JID, HASS_TOKEN, API_SERVER_ENABLED=true (with API_SERVER_KEY), or platforms.webhook.enabled in config.yaml")
	}
	if err := checkTargets(platforms, b.Kind); err != nil {
		return err
	}

	rctx, stopRouter := context.WithCancel(context.Background())
	defer stopRouter()
	routerDone := make(chan error, 1)
	go func() { routerDone <- router.Run(rctx) }()
	select {
	case <-router.Ready():
	case err := <-routerDone:
		stopRouter()
		return fmt.Errorf("gateway router: %w", err)
	}
	pctx, stopPlatforms := context.WithCancel(context.Background())
	defer stopPlatforms()
	served := make([]*gw.Served, len(platforms))
	var wg sync.WaitGroup
	for i, p := range platforms {
		served[i] = gw.NewServed(p, b, g.Log)
		served[i].EditEvery = set.EditEvery
		wg.Add(1)
		go func(s *gw.Served) {
			defer wg.Done()
			if err := s.Serve(pctx); err != nil {
				g.Log.Error().Err(err).Msg("platform")
			}
		}(served[i])
	}
	env.served.Store(&served)
	started := time.Now()
	names := make([]string, len(platforms))
	for i, p := range platforms {
		names[i] = p.Name()
	}
	if !set.dashboardOnly {
		defer jobs.start(names)()
	}
	g.Log.Info().Strs("platforms", names).Str("bus", b.Kind).Msg("gateway running")
	fmt.Fprintf(os.Stderr, "hermes gateway: running %s (bus: %s); Ctrl-C stops it\n", strings.Join(names, ", "), b.Kind)
	write := func(stopped bool) {
		st := gatewayStatus{PID: os.Getpid(), Started: started, Updated: time.Now(), Stopped: stopped, Bus: b.Kind, Active: router.Stats().Active()}
		if clusterView != nil {
			st.Cluster = clusterView()
			sort.Strings(st.Cluster.Members)
		}
		counts := router.Stats().Snapshot()
		for _, s := range served {
			ps := s.Status()
			c := counts[ps.Platform]
			if c.LastError != "" && (ps.LastError == "" || c.LastErrorAt.After(ps.ErrorAt)) {
				ps.LastError, ps.ErrorAt = c.LastError, c.LastErrorAt
			}
			st.Platforms = append(st.Platforms, platformStatusReport{Status: ps, In: c.In, Out: c.Out, Refused: c.Refused})
		}
		data, _ := json.MarshalIndent(st, "", "  ")
		tmp := filepath.Join(dir, "status.json.tmp")
		if err := os.WriteFile(tmp, data, 0o600); err == nil {
			_ = os.Rename(tmp, filepath.Join(dir, "status.json"))
		}
	}
	write(false)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-routerDone:
			stopPlatforms()
			wg.Wait()
			write(true)
			return fmt.Errorf("gateway router stopped: %w", err)
		case <-tick.C:
			write(false)
		}
	}
	// Drain: no new messages come in; turns in flight may finish.
	fmt.Fprintln(os.Stderr, "hermes gateway: stopping (waiting for turns in flight)")
	stopPlatforms()
	wg.Wait()
	deadline := time.Now().Add(set.Drain)
	for router.Stats().Active() > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	stopRouter()
	<-routerDone
	write(true)
	return nil
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

// lockFile holds an exclusive lock for as long as the file stays open:
// one gateway per home (two would both poll the platforms and write the
// same chats). The kernel releases it when the process dies.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		pid, _ := os.ReadFile(path)
		return nil, fmt.Errorf("another gateway is running on this home (pid %s): stop it first", strings.TrimSpace(string(pid)))
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())), 0)
	return f, nil
}
