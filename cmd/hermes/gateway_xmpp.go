package main

import (
	"os"
	"strings"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/xmpp"
)

// XMPPConfig is platforms.xmpp (XMPP_* in the environment).
type XMPPConfig struct {
	// JID is the bot's account, such as hermes@example.org (XMPP_JID);
	// the platform is on when it is set.
	JID string `yaml:"jid"`
	// Password is the account's password (XMPP_PASSWORD).
	Password string `yaml:"password"`
	// Server is host:port to connect to (XMPP_SERVER); empty looks up the
	// domain's SRV record.
	Server string `yaml:"server"`
	// Rooms are the multi-user chat rooms to join (XMPP_ROOMS,
	// comma-separated).
	Rooms []string `yaml:"rooms"`
	// Nick is the bot's nick in rooms (default: the JID's local part).
	Nick string `yaml:"nick"`
	// AllowedUsers are bare JIDs (XMPP_ALLOWED_USERS, comma-separated).
	AllowedUsers []string `yaml:"allowed_users"`
}

// resolveXMPP applies XMPP_* over platforms.xmpp. Allowed users are bare
// JIDs, compared without case (as the adapter reports them).
func resolveXMPP(c *XMPPConfig) {
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
		Log: env.chat.a.log})
	if err != nil {
		return nil, err
	}
	return a, nil
}
