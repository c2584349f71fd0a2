package main

import (
	"errors"

	gw "github.com/hermes-go/hermes/adapters/gateway"
)

// telegramPlatform builds the Telegram adapter when a bot token is set.
func telegramPlatform(env *gatewayEnv) (gw.Platform, error) {
	if env.set.Platforms.Telegram.Token == "" {
		return nil, nil
	}
	return nil, errors.New("platforms.telegram: not available in this build yet")
}
