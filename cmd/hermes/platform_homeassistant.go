package main

import (
	"time"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/homeassistant"
)

// homeassistantPlatform builds the Home Assistant adapter when a token is
// set (HASS_TOKEN or platforms.homeassistant.token) and the platform is
// not turned off.
func homeassistantPlatform(env *gatewayEnv) (gw.Platform, error) {
	c := env.set.Platforms.HomeAssistant
	if c.Token == "" || (c.Enabled != nil && !*c.Enabled) {
		return nil, nil
	}
	cooldown := homeassistant.DefaultCooldown
	if s := c.Extra.CooldownSeconds; s != nil {
		cooldown = time.Duration(max(*s, 0)) * time.Second
	}
	return homeassistant.New(homeassistant.Config{URL: c.Extra.URL, Token: c.Token,
		WatchDomains: c.Extra.WatchDomains, WatchEntities: c.Extra.WatchEntities, IgnoreEntities: c.Extra.IgnoreEntities,
		WatchAll: c.Extra.WatchAll, Cooldown: cooldown, Log: env.chat.App.Log})
}
