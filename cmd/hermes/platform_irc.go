package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/irc"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// resolveIRC applies IRC_* over platforms.irc.
func resolveIRC(c *config.IRCConfig) error {
	c.Server = first(os.Getenv("IRC_SERVER"), c.Server)
	c.Nick = first(os.Getenv("IRC_NICK"), c.Nick, "hermes")
	c.Password = first(os.Getenv("IRC_PASSWORD"), c.Password)
	if v := os.Getenv("IRC_PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p <= 0 || p > 65535 {
			return fmt.Errorf("IRC_PORT %q: not a port", v)
		}
		c.Port = p
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("platforms.irc.port %d: not a port", c.Port)
	}
	if b, ok := envBool("IRC_TLS"); ok {
		c.TLS = b
	}
	if v := os.Getenv("IRC_CHANNELS"); v != "" {
		c.Channels = append(c.Channels, gateway.SplitList(v)...)
	}
	if v := os.Getenv("IRC_ALLOWED_USERS"); v != "" {
		c.AllowedUsers = append(c.AllowedUsers, gateway.SplitList(v)...)
	}
	return nil
}

// ircPlatform builds the IRC adapter when a server is set.
func ircPlatform(env *gatewayEnv) (gw.Platform, error) {
	c := env.set.Platforms.IRC
	if c.Server == "" {
		return nil, nil
	}
	return irc.New(irc.Config{Server: c.Server, Port: c.Port, TLS: c.TLS, Nick: c.Nick, Password: c.Password,
		Channels: c.Channels, AllowedUsers: c.AllowedUsers, LinesPerSecond: c.LinesPerSecond, Log: env.chat.App.Log})
}
