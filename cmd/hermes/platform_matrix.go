package main

import (
	"path/filepath"
	"strings"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/matrix"
)

// matrixPlatform builds the Matrix adapter when a homeserver is set. The
// sync token is kept in $HERMES_HOME/gateway/matrix; invites are accepted
// from the Matrix allow-list and the gateway-wide one.
func matrixPlatform(env *gatewayEnv) (gw.Platform, error) {
	m := env.set.Platforms.Matrix
	if m.Homeserver == "" && m.AccessToken == "" {
		return nil, nil
	}
	allowed := append([]string(nil), m.AllowedUsers...)
	for _, u := range env.set.AllowedUsers {
		// The gateway-wide list names users of every platform.
		if strings.HasPrefix(u, "@") && strings.Contains(u, ":") {
			allowed = append(allowed, u)
		}
	}
	a, err := matrix.New(matrix.Config{Homeserver: m.Homeserver, UserID: m.UserID, AccessToken: m.AccessToken, Password: m.Password,
		AllowedUsers: allowed, AllowAll: env.set.AllowAllUsers, PairingInvites: m.PairingInvites, Rooms: m.Rooms,
		StateDir: filepath.Join(env.home, "gateway", "matrix"), CacheDir: filepath.Join(env.home, "cache", "matrix"), Log: env.chat.App.Log,
		// What image_generate and text_to_speech make may be sent.
		MediaRoots: []string{filepath.Join(env.home, "cache", "images"), filepath.Join(env.home, "cache", "audio")}})
	if err != nil {
		return nil, err
	}
	return a, nil
}
