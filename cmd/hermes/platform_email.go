package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/email"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// resolveEmail applies the environment over platforms.email.
func resolveEmail(e *config.EmailConfig) error {
	e.Address = first(os.Getenv("EMAIL_ADDRESS"), e.Address)
	e.Username = first(os.Getenv("EMAIL_USERNAME"), e.Username)
	e.Password = first(os.Getenv("EMAIL_PASSWORD"), e.Password)
	e.IMAPHost = first(os.Getenv("EMAIL_IMAP_HOST"), e.IMAPHost)
	e.SMTPHost = first(os.Getenv("EMAIL_SMTP_HOST"), e.SMTPHost)
	e.Mailbox = first(os.Getenv("EMAIL_MAILBOX"), e.Mailbox)
	e.PollInterval = first(os.Getenv("EMAIL_POLL_INTERVAL"), e.PollInterval)
	for name, port := range map[string]*int{"EMAIL_IMAP_PORT": &e.IMAPPort, "EMAIL_SMTP_PORT": &e.SMTPPort} {
		if v := os.Getenv(name); v != "" {
			p, err := strconv.Atoi(v)
			if err != nil || p < 1 || p > 65535 {
				return fmt.Errorf("%s %q: not a port", name, v)
			}
			*port = p
		}
	}
	if v := os.Getenv("EMAIL_ALLOWED_USERS"); v != "" {
		e.AllowedUsers = append(e.AllowedUsers, gateway.SplitList(v)...)
	}
	for i, u := range e.AllowedUsers {
		n := email.NormAddress(u)
		if n == "" {
			return fmt.Errorf("platforms.email.allowed_users: %q is not a mail address", u)
		}
		e.AllowedUsers[i] = n
	}
	if _, err := e.PollEvery(); err != nil {
		return err
	}
	return nil
}

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
		StateDir: filepath.Join(env.home, "gateway", "email"), CacheDir: filepath.Join(env.home, "cache", "email"), Log: env.chat.App.Log})
	if err != nil {
		return nil, err
	}
	return a, nil
}
