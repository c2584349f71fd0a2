package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/email"
)

// EmailConfig is platforms.email (EMAIL_* in the environment).
type EmailConfig struct {
	// Address is the bot's mail address (EMAIL_ADDRESS); setting it
	// turns the platform on.
	Address string `yaml:"address"`
	// Username logs in to IMAP and SMTP (EMAIL_USERNAME; default: the
	// address); Password is its password (EMAIL_PASSWORD).
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// IMAPHost and IMAPPort (EMAIL_IMAP_HOST, EMAIL_IMAP_PORT; 993).
	IMAPHost string `yaml:"imap_host"`
	IMAPPort int    `yaml:"imap_port"`
	// SMTPHost and SMTPPort (EMAIL_SMTP_HOST, EMAIL_SMTP_PORT; 587).
	SMTPHost string `yaml:"smtp_host"`
	SMTPPort int    `yaml:"smtp_port"`
	// Mailbox is the folder watched (EMAIL_MAILBOX; INBOX).
	Mailbox string `yaml:"mailbox"`
	// PollInterval spaces checks on servers without IDLE
	// (EMAIL_POLL_INTERVAL: seconds, or a duration such as 1m; 15s).
	PollInterval string `yaml:"poll_interval"`
	// AllowedUsers are the sender addresses allowed (EMAIL_ALLOWED_USERS),
	// compared without case and without display names.
	AllowedUsers []string `yaml:"allowed_users"`
	// Insecure allows the password over a connection without TLS to a
	// server not on this machine.
	Insecure bool `yaml:"insecure"`
}

// resolveEmail applies the environment over platforms.email.
func resolveEmail(e *EmailConfig) error {
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
	if _, err := e.pollInterval(); err != nil {
		return err
	}
	return nil
}

func (e EmailConfig) pollInterval() (time.Duration, error) {
	v := strings.TrimSpace(e.PollInterval)
	if v == "" {
		return 0, nil
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("platforms.email.poll_interval %q: use seconds (15) or a duration such as 1m", e.PollInterval)
	}
	return d, nil
}

// emailPlatform builds the email adapter when an address is set. Its
// position in the mailbox is kept in $HERMES_HOME/gateway/email,
// attachments go to $HERMES_HOME/cache/email.
func emailPlatform(env *gatewayEnv) (gw.Platform, error) {
	e := env.set.Platforms.Email
	if e.Address == "" {
		return nil, nil
	}
	poll, err := e.pollInterval()
	if err != nil {
		return nil, err
	}
	a, err := email.New(email.Config{Address: e.Address, Username: e.Username, Password: e.Password,
		IMAPHost: e.IMAPHost, IMAPPort: e.IMAPPort, SMTPHost: e.SMTPHost, SMTPPort: e.SMTPPort, Mailbox: e.Mailbox,
		Insecure: e.Insecure, PollInterval: poll,
		StateDir: filepath.Join(env.home, "gateway", "email"), CacheDir: filepath.Join(env.home, "cache", "email"), Log: env.chat.a.log})
	if err != nil {
		return nil, err
	}
	return a, nil
}
