package main

import (
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/xmpp"
)

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
