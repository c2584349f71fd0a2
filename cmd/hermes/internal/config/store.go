package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hermes-go/hermes/events/eventstoredb"
	"github.com/hermes-go/hermes/internal/connstr"
)

// Which event store a command uses: --store, else $HERMES_STORE, else
// config.yaml's store:, else the embedded store in $HERMES_HOME/events.db.

// StoreKind says which kind of event store a StoreSpec names.
type StoreKind uint8

// The kinds of event store.
const (
	StoreEmbedded StoreKind = iota
	StorePostgres
	StoreESDB
)

// StoreSpec names an event store: the embedded one of a home, or a server.
type StoreSpec struct {
	Kind StoreKind
	DSN  string // the connection string of a server
}

// String names the store with any password redacted: it is what messages
// and logs show.
func (s StoreSpec) String() string {
	switch s.Kind {
	case StorePostgres:
		return connstr.Redact(s.DSN)
	case StoreESDB:
		return eventstoredb.Redact(s.DSN)
	}
	return "embedded"
}

// ParseStore reads a store: value.
func ParseStore(v string) (StoreSpec, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "" || v == "embedded":
		return StoreSpec{Kind: StoreEmbedded}, nil
	case strings.HasPrefix(v, "postgres://"), strings.HasPrefix(v, "postgresql://"):
		return StoreSpec{Kind: StorePostgres, DSN: v}, nil
	case strings.HasPrefix(v, "esdb://"), strings.HasPrefix(v, "esdb+discover://"), strings.HasPrefix(v, "kurrentdb://"),
		strings.HasPrefix(v, "kurrentdb+discover://"), strings.HasPrefix(v, "kdb://"), strings.HasPrefix(v, "kdb+discover://"):
		return StoreSpec{Kind: StoreESDB, DSN: v}, nil
	}
	shown := v
	if strings.Contains(v, "://") {
		shown = RedactURL(v)
	}
	return StoreSpec{}, fmt.Errorf("unknown store %q: use embedded, postgres://user@host/db or esdb://host:2113", shown)
}

var urlPassword = regexp.MustCompile(`^([A-Za-z0-9+.-]+://[^:/@]*:)[^@]*@`)

// RedactURL hides the password of a URL that is not a store this build
// knows.
func RedactURL(v string) string { return urlPassword.ReplaceAllString(v, "${1}xxxxx@") }

// Store says which store to use: flag (--store), else $HERMES_STORE, else
// home's config.yaml; an error names where the bad choice came from.
func Store(flag, home string) (StoreSpec, error) {
	v, from := flag, "--store"
	if v == "" {
		v, from = os.Getenv("HERMES_STORE"), "HERMES_STORE"
	}
	if v == "" {
		var err error
		if v, err = fileStore(home); err != nil {
			return StoreSpec{}, err
		}
		from = "store in " + filepath.Join(home, "config.yaml")
	}
	spec, err := ParseStore(v)
	if err != nil {
		return spec, fmt.Errorf("%s: %w", from, err)
	}
	return spec, nil
}

// fileStore reads the store: key of home's config.yaml (the rest of the
// file is Load's business: a file that does not parse is reported here
// only when it seems to choose a store).
func fileStore(home string) (string, error) {
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
