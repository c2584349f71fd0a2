package main

import (
	"errors"

	gw "github.com/hermes-go/hermes/adapters/gateway"
)

// webhookPlatform builds the signed-webhook front door when enabled.
func webhookPlatform(env *gatewayEnv) (gw.Platform, error) {
	if !env.set.Platforms.Webhook.Enabled {
		return nil, nil
	}
	return nil, errors.New("platforms.webhook: not available in this build yet")
}
