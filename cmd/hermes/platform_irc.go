package main

import (
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/irc"
)

// ircPlatform builds the IRC adapter when a server is set.
func ircPlatform(env *gatewayEnv) (gw.Platform, error) {
	c := env.set.Platforms.IRC
	if c.Server == "" {
		return nil, nil
	}
	return irc.New(irc.Config{Server: c.Server, Port: c.Port, TLS: c.TLS, Nick: c.Nick, Password: c.Password,
		Channels: c.Channels, AllowedUsers: c.AllowedUsers, LinesPerSecond: c.LinesPerSecond, Log: env.chat.App.Log})
}
