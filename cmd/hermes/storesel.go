package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/events/eventstoredb"
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/internal/connstr"
)

// Which event store a command uses: --store, else $HERMES_STORE, else
// config.yaml's store:, else the embedded store in $HERMES_HOME/events.db.

type storeKind uint8

const (
	storeEmbedded storeKind = iota
	storePostgres
	storeESDB
)

// storeSpec names an event store: the embedded one of a home, or a server.
type storeSpec struct {
	kind storeKind
	dsn  string // the connection string of a server
}

// String names the store with any password redacted: it is what messages
// and logs show.
func (s storeSpec) String() string {
	switch s.kind {
	case storePostgres:
		return connstr.Redact(s.dsn)
	case storeESDB:
		return eventstoredb.Redact(s.dsn)
	}
	return "embedded"
}

// parseStore reads a store: value.
func parseStore(v string) (storeSpec, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "" || v == "embedded":
		return storeSpec{kind: storeEmbedded}, nil
	case strings.HasPrefix(v, "postgres://"), strings.HasPrefix(v, "postgresql://"):
		return storeSpec{kind: storePostgres, dsn: v}, nil
	case strings.HasPrefix(v, "esdb://"), strings.HasPrefix(v, "esdb+discover://"), strings.HasPrefix(v, "kurrentdb://"):
		return storeSpec{kind: storeESDB, dsn: v}, nil
	}
	shown := v
	if strings.Contains(v, "://") {
		shown = redactURL(v)
	}
	return storeSpec{}, fmt.Errorf("unknown store %q: use embedded, postgres://user@host/db or esdb://host:2113", shown)
}

var urlPassword = regexp.MustCompile(`^([A-Za-z0-9+.-]+://[^:/@]*:)[^@]*@`)

func redactURL(v string) string { return urlPassword.ReplaceAllString(v, "${1}xxxxx@") }

// storeSpec says which store to use, and where the choice came from.
func (g *globals) storeSpec(home string) (storeSpec, error) {
	v, from := g.store, "--store"
	if v == "" {
		v, from = os.Getenv("HERMES_STORE"), "HERMES_STORE"
	}
	if v == "" {
		var err error
		if v, err = configStore(home); err != nil {
			return storeSpec{}, err
		}
		from = "store in " + filepath.Join(home, "config.yaml")
	}
	spec, err := parseStore(v)
	if err != nil {
		return spec, fmt.Errorf("%s: %w", from, err)
	}
	return spec, nil
}

// configStore reads the store: key of home's config.yaml (the rest of the
// file is loadConfig's business: a file that does not parse is reported
// here only when it seems to choose a store).
func configStore(home string) (string, error) {
	path := filepath.Join(home, "config.yaml")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	var c struct {
		Store string `yaml:"store"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		if storeLine.Match(data) {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		return "", nil
	}
	return c.Store, nil
}

var storeLine = regexp.MustCompile(`(?m)^store\s*:`)

// open opens the store spec names (home's, for the embedded one).
func (s storeSpec) open(ctx context.Context, home string, log zerolog.Logger) (events.Store, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	log.Debug().Str("store", s.String()).Msg("opening the event store")
	switch s.kind {
	case storePostgres:
		return postgres.Open(ctx, s.dsn, postgres.WithLogger(log))
	case storeESDB:
		return eventstoredb.Open(ctx, s.dsn, eventstoredb.WithLogger(log))
	}
	return embedded.Open(filepath.Join(home, "events.db"), embedded.WithLogger(log))
}

// embeddedOnly refuses a command that works on the embedded store alone.
func (g *globals) embeddedOnly(home, what string) error {
	spec, err := g.storeSpec(home)
	if err != nil {
		return err
	}
	if spec.kind != storeEmbedded {
		return fmt.Errorf("%s works on the embedded store only; the store is %s", what, spec)
	}
	return nil
}
