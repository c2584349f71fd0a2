package main

import (
	"os"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/slack"
)

// SlackConfig is platforms.slack (SLACK_* in the environment).
type SlackConfig struct {
	// BotToken is the Bot User OAuth Token, xoxb-… (SLACK_BOT_TOKEN).
	BotToken string `yaml:"bot_token"`
	// AppToken is an app-level token, xapp-… with connections:write
	// (SLACK_APP_TOKEN): set, the gateway receives over Socket Mode.
	AppToken string `yaml:"app_token"`
	// SigningSecret checks Events API, slash command and interactivity
	// requests (SLACK_SIGNING_SECRET).
	SigningSecret string `yaml:"signing_secret"`
	// EventsListen is the Events API endpoint's address, behind a TLS
	// reverse proxy (SLACK_EVENTS_LISTEN; none by default).
	EventsListen string `yaml:"events_listen"`
	// AllowedUsers are Slack user ids, U… (SLACK_ALLOWED_USERS).
	AllowedUsers []string `yaml:"allowed_users"`
	// APIURL points at another Web API (SLACK_API_URL; tests).
	APIURL string `yaml:"api_url"`
}

// resolveSlack applies the SLACK_* environment over platforms.slack.
func resolveSlack(c *SlackConfig) {
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
		EventsListen: c.EventsListen, APIURL: c.APIURL, Log: env.chat.a.log})
	if err != nil {
		return nil, err
	}
	return a, nil
}
