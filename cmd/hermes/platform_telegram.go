package main

import (
	"path/filepath"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/telegram"
)

// telegramPlatform builds the Telegram adapter when a bot token is set.
// Attachments go to $HERMES_HOME/cache/telegram.
func telegramPlatform(env *gatewayEnv) (gw.Platform, error) {
	t := env.set.Platforms.Telegram
	if t.Token == "" {
		return nil, nil
	}
	a, err := telegram.New(telegram.Config{Token: t.Token, APIURL: t.APIURL, WebhookURL: t.WebhookURL,
		WebhookListen: t.WebhookListen, WebhookSecret: t.WebhookSecret,
		CacheDir: filepath.Join(env.home, "cache", "telegram"), Log: env.chat.App.Log})
	if err != nil {
		return nil, err
	}
	return a, nil
}
