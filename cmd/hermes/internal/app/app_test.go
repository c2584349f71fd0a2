package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

func quiet(t *testing.T) {
	t.Helper()
	for _, k := range []string{"HERMES_HOME", "HERMES_STORE"} {
		t.Setenv(k, "")
	}
}

// The Factory opens nothing until asked; Open gives the home's store and
// projections, and config.yaml is read once.
func TestFactoryOpensOnDemand(t *testing.T) {
	quiet(t)
	home := filepath.Join(t.TempDir(), "home")
	var errb bytes.Buffer
	f := &Factory{HomeFlag: home, LogLevel: "debug", IO: IOStreams{ErrOut: &errb}}
	if err := f.Setup(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Fatalf("the home exists before any command asked for it: %v", err)
	}
	a, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	if a.Home != home || a.Spec.Kind != config.StoreEmbedded || a.Store == nil || a.ProjDB == nil {
		t.Fatalf("app: %+v", a)
	}
	if err := a.Fresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"events.db", "projections.db", WitnessFile} {
		if _, err := os.Stat(filepath.Join(home, f)); err != nil {
			t.Errorf("%s not made: %v", f, err)
		}
	}
	f.Log.Debug().Msg("to the factory's stderr")
	if !strings.Contains(errb.String(), "DBG to the factory's stderr") {
		t.Errorf("the log is not on the Factory's stderr:\n%s", errb.String())
	}
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: first\n"), 0o600)
	c, err := f.Config()
	if err != nil || c.Model.Name != "first" {
		t.Fatalf("config: %+v %v", c.Model, err)
	}
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: second\n"), 0o600)
	if c, _ := f.Config(); c.Model.Name != "first" {
		t.Fatalf("config.yaml read again: %q", c.Model.Name)
	}
}

// A read-only home takes the embedded store only; a bad --store is named.
func TestFactoryStoreErrors(t *testing.T) {
	quiet(t)
	home := t.TempDir()
	f := &Factory{HomeFlag: home, ReadOnly: true, StoreFlag: "postgres://h/db"}
	if _, err := f.Open(); err == nil || !strings.Contains(err.Error(), "--read-only (or a home that cannot be written) works with the embedded store only") {
		t.Fatalf("read-only with a server store: %v", err)
	}
	f = &Factory{HomeFlag: home, StoreFlag: "nosuch://x"}
	if _, err := f.Open(); err == nil || !strings.HasPrefix(err.Error(), "--store: unknown store") {
		t.Fatalf("a bad --store: %v", err)
	}
	if err := f.EmbeddedOnly(home, "store verify"); err == nil {
		t.Fatal("EmbeddedOnly took a bad store")
	}
}
