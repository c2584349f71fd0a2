package main

import (
	"path/filepath"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/email"
)

// emailPlatform builds the email adapter when an address is set. Its
// position in the mailbox is kept in $HERMES_HOME/gateway/email,
// attachments go to $HERMES_HOME/cache/email.
func emailPlatform(env *gatewayEnv) (gw.Platform, error) {
	e := env.set.Platforms.Email
	if e.Address == "" {
		return nil, nil
	}
	poll, err := e.PollEvery()
	if err != nil {
		return nil, err
	}
	a, err := email.New(email.Config{Address: e.Address, Username: e.Username, Password: e.Password,
		IMAPHost: e.IMAPHost, IMAPPort: e.IMAPPort, SMTPHost: e.SMTPHost, SMTPPort: e.SMTPPort, Mailbox: e.Mailbox,
		Insecure: e.Insecure, PollInterval: poll,
		StateDir: filepath.Join(env.home, "gateway", "email"), CacheDir: filepath.Join(env.home, "cache", "email"), Log: env.chat.App.Log,
		// What image_generate and text_to_speech make is attached.
		MediaRoots: []string{filepath.Join(env.home, "cache", "images"), filepath.Join(env.home, "cache", "audio")}})
	if err != nil {
		return nil, err
	}
	return a, nil
}
