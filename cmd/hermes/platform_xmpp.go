package main

import (
	"os"
	"strings"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/xmpp"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// resolveXMPP applies XMPP_* over platforms.xmpp. Allowed users are bare
// JIDs, compared without case (as the adapter reports them).
func resolveXMPP(c *config.XMPPConfig) {
	c.JID = first(os.Getenv("XMPP_JID"), c.JID)
	c.Password = first(os.Getenv("XMPP_PASSWORD"), c.Password)
	c.Server = first(os.Getenv("XMPP_SERVER"), c.Server)
	if v := os.Getenv("XMPP_ROOMS"); v != "" {
		c.Rooms = append(c.Rooms, gateway.SplitList(v)...)
	}
	if v := os.Getenv("XMPP_ALLOWED_USERS"); v != "" {
		c.AllowedUsers = append(c.AllowedUsers, gateway.SplitList(v)...)
	}
	for i, u := range c.AllowedUsers {
		bare, _, _ := strings.Cut(strings.TrimSpace(u), "/")
		c.AllowedUsers[i] = strings.ToLower(bare)
	}
}

// xmppPlatform builds the XMPP adapter when a JID is set.
func xmppPlatform(env *gatewayEnv) (gw.Platform, error) {
	c := env.set.Platforms.XMPP
	if c.JID == "" {
		return nil, nil
	}
	a, err := xmpp.New(xmpp.Config{JID: c.JID, Password: c.Password, Server: c.Server, Rooms: c.Rooms, Nick: c.Nick,
		Log: env.chat.App.Log})
	if err != nil {
		return nil, err
	}
	return a, nil
}
