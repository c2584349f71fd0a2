package main

import (
	"context"
	"path/filepath"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/telegram"
	"github.com/hermes-go/hermes/adapters/voice"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// telegramPlatform builds the Telegram adapter when a bot token is set.
// Attachments go to $HERMES_HOME/cache/telegram. A reply's MEDIA: files
// are sent only from where text_to_speech and image_generate write
// ($HERMES_HOME/cache/audio and cache/images: not the downloads of other
// chats); with voice.auto_tts, the answer to a voice memo is spoken with
// tts: as a voice note too.
func telegramPlatform(env *gatewayEnv) (gw.Platform, error) {
	t := env.set.Platforms.Telegram
	if t.Token == "" {
		return nil, nil
	}
	speaker := app.Speaker(env.chat.Cfg)
	a, err := telegram.New(telegram.Config{Token: t.Token, APIURL: t.APIURL, WebhookURL: t.WebhookURL,
		WebhookListen: t.WebhookListen, WebhookSecret: t.WebhookSecret,
		CacheDir: filepath.Join(env.home, "cache", "telegram"), Log: env.chat.App.Log,
		MediaRoots:   []string{filepath.Join(env.home, "cache", "images"), filepath.Join(env.home, "cache", "audio")},
		VoiceReplies: env.chat.Cfg.Speech.AutoTTS,
		Speak: func(ctx context.Context, text string) ([]byte, error) {
			return speaker.Speak(ctx, voice.Speakable(text), voice.Ogg)
		}})
	if err != nil {
		return nil, err
	}
	return a, nil
}
