package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/matrix"
)

// MatrixConfig is platforms.matrix (MATRIX_* in the environment).
type MatrixConfig struct {
	// Homeserver is the client-server API's URL (MATRIX_HOMESERVER).
	Homeserver string `yaml:"homeserver"`
	// UserID is the bot's Matrix id, @hermes:example.org (MATRIX_USER_ID).
	UserID string `yaml:"user_id"`
	// AccessToken authenticates the bot (MATRIX_ACCESS_TOKEN); without it
	// Password logs in (MATRIX_PASSWORD).
	AccessToken string `yaml:"access_token"`
	Password    string `yaml:"password"`
	// AllowedUsers are Matrix ids allowed to talk to the bot and to
	// invite it to rooms (MATRIX_ALLOWED_USERS, comma-separated).
	AllowedUsers []string `yaml:"allowed_users"`
	// Rooms are room ids or aliases the bot joins at start.
	Rooms []string `yaml:"rooms"`
	// PairingInvites accepts direct-chat invites from anyone, so that
	// they can ask for a pairing code (off: only allowed users' invites).
	PairingInvites bool `yaml:"pairing_invites"`
}

// resolveMatrix applies the MATRIX_* environment over platforms.matrix.
func resolveMatrix(m *MatrixConfig) {
	m.Homeserver = first(os.Getenv("MATRIX_HOMESERVER"), m.Homeserver)
	m.UserID = first(os.Getenv("MATRIX_USER_ID"), m.UserID)
	m.AccessToken = first(os.Getenv("MATRIX_ACCESS_TOKEN"), m.AccessToken)
	m.Password = first(os.Getenv("MATRIX_PASSWORD"), m.Password)
	if v := os.Getenv("MATRIX_ALLOWED_USERS"); v != "" {
		m.AllowedUsers = append(m.AllowedUsers, gateway.SplitList(v)...)
	}
}

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
		StateDir: filepath.Join(env.home, "gateway", "matrix"), Log: env.chat.a.log})
	if err != nil {
		return nil, err
	}
	return a, nil
}
