package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"
)

// Home resolves $HERMES_HOME: flag (--home), else $HERMES_HOME, else
// ~/.hermes; ~/ is expanded. The directory is created, and its .env file
// read into the environment (see loadDotEnv).
func Home(flag string) (string, error) {
	home := flag
	if home == "" {
		home = os.Getenv("HERMES_HOME")
	}
	if home == "" {
		uh, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot find a home directory: set HERMES_HOME or pass --home: %w", err)
		}
		home = filepath.Join(uh, ".hermes")
	}
	if strings.HasPrefix(home, "~/") {
		if uh, err := os.UserHomeDir(); err == nil {
			home = filepath.Join(uh, home[2:])
		}
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", fmt.Errorf("create HERMES_HOME %s: %w", home, err)
	}
	loadDotEnv(home)
	return home, nil
}

// LogLevel reads --log-level.
func LogLevel(v string) (zerolog.Level, error) {
	lvl, err := zerolog.ParseLevel(v)
	if err != nil {
		return lvl, fmt.Errorf("--log-level %q: use trace, debug, info, warn or error", v)
	}
	return lvl, nil
}

// SetDotEnv sets name=value in $HERMES_HOME/.env (mode 0600), keeping the
// file's other lines.
func SetDotEnv(home, name, value string) error {
	path := filepath.Join(home, ".env")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var lines []string
	done := false
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if k, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(l), "export "), "="); ok && strings.TrimSpace(k) == name {
			l, done = name+"="+value, true
		}
		if l != "" || len(lines) > 0 {
			lines = append(lines, l)
		}
	}
	if !done {
		lines = append(lines, name+"="+value)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// loadDotEnv sets the variables of $HERMES_HOME/.env that the environment
// does not set already (the environment wins, as Hermes has it).
func loadDotEnv(home string) {
	data, err := os.ReadFile(filepath.Join(home, ".env"))
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(l, "export "), "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		if _, set := os.LookupEnv(k); !set && k != "" {
			os.Setenv(k, v)
		}
	}
}
