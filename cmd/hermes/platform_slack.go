package main

import (
	"path/filepath"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/slack"
)

// slackPlatform builds the Slack adapter when a bot token is set.
func slackPlatform(env *gatewayEnv) (gw.Platform, error) {
	c := env.set.Platforms.Slack
	if c.BotToken == "" {
		return nil, nil
	}
	a, err := slack.New(slack.Config{CacheDir: filepath.Join(env.home, "cache", "slack"), BotToken: c.BotToken, AppToken: c.AppToken, SigningSecret: c.SigningSecret,
		EventsListen: c.EventsListen, APIURL: c.APIURL, Log: env.chat.App.Log,
		// What image_generate and text_to_speech make may be uploaded.
		MediaRoots: []string{filepath.Join(env.home, "cache", "images"), filepath.Join(env.home, "cache", "audio")}})
	if err != nil {
		return nil, err
	}
	return a, nil
}
