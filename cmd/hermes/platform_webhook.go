package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"github.com/hermes-go/hermes/actors/gateway/wire"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/webhook"
	"github.com/hermes-go/hermes/schema"
)

// webhookPlatform builds the signed-webhook front door when enabled.
func webhookPlatform(env *gatewayEnv) (gw.Platform, error) {
	c := env.set.Platforms.Webhook
	if !c.Enabled {
		return nil, nil
	}
	names := make([]string, 0, len(c.Routes))
	for name := range c.Routes {
		names = append(names, name)
	}
	sort.Strings(names)
	routes := make([]webhook.Route, 0, len(names))
	for _, name := range names {
		r := c.Routes[name]
		routes = append(routes, webhook.Route{Name: name, Secret: first(r.Secret, c.Secret), Prompt: r.Prompt, Deliver: r.Deliver, Session: r.Session, Images: r.Images})
	}
	b := env.bus
	p, err := webhook.New(webhook.Config{Addr: net.JoinHostPort(c.Host, strconv.Itoa(c.Port)), Routes: routes, Log: env.chat.App.Log,
		CacheDir: filepath.Join(env.home, "cache", "webhook"),
		Forward: func(ctx context.Context, out schema.Outbound) error {
			return wire.Publish(b.Publisher, wire.Out(out.Platform), out, "")
		}})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// checkTargets makes sure that every platform a route forwards answers to
// runs in this gateway: on the in-process bus an answer for a platform
// nobody serves would be dropped. (Over NATS it waits for that platform's
// adapter, which may run in another process.)
func checkTargets(platforms []gw.Platform, busKind string) error {
	if busKind != "gochannel" {
		return nil
	}
	var names []string
	for _, p := range platforms {
		names = append(names, p.Name())
	}
	for _, p := range platforms {
		t, ok := p.(interface{ Targets() []string })
		if !ok {
			continue
		}
		for _, target := range t.Targets() {
			if !slices.Contains(names, target) {
				return fmt.Errorf("platforms.%s: a route delivers to %s, which is not enabled here (enabled: %v)", p.Name(), target, names)
			}
		}
	}
	return nil
}
