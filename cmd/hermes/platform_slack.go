package main

import (
	"os"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/slack"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// resolveSlack applies the SLACK_* environment over platforms.slack.
func resolveSlack(c *config.SlackConfig) {
	c.BotToken = first(os.Getenv("SLACK_BOT_TOKEN"), c.BotToken)
	c.AppToken = first(os.Getenv("SLACK_APP_TOKEN"), c.AppToken)
	c.SigningSecret = first(os.Getenv("SLACK_SIGNING_SECRET"), c.SigningSecret)
	c.EventsListen = first(os.Getenv("SLACK_EVENTS_LISTEN"), c.EventsListen)
	c.APIURL = first(os.Getenv("SLACK_API_URL"), c.APIURL)
	if v := os.Getenv("SLACK_ALLOWED_USERS"); v != "" {
		c.AllowedUsers = append(c.AllowedUsers, gateway.SplitList(v)...)
	}
}

// slackPlatform builds the Slack adapter when a bot token is set.
func slackPlatform(env *gatewayEnv) (gw.Platform, error) {
	c := env.set.Platforms.Slack
	if c.BotToken == "" {
		return nil, nil
	}
	a, err := slack.New(slack.Config{BotToken: c.BotToken, AppToken: c.AppToken, SigningSecret: c.SigningSecret,
		EventsListen: c.EventsListen, APIURL: c.APIURL, Log: env.chat.App.Log})
	if err != nil {
		return nil, err
	}
	return a, nil
}
