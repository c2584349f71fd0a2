package main

import (
	"errors"

	gw "github.com/hermes-go/hermes/adapters/gateway"
)

// apiPlatform builds the OpenAI-compatible API server when enabled.
func apiPlatform(env *gatewayEnv) (gw.Platform, error) {
	if !env.set.Platforms.APIServer.Enabled {
		return nil, nil
	}
	return nil, errors.New("platforms.api_server: not available in this build yet")
}
