package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/events/embedded"
)

func TestPairingInProcess(t *testing.T) {
	quietEnv(t)
	home := t.TempDir()
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := gateway.LoadPairings(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	code, err := p.Request(ctx, s, "telegram", "42", "Ann", "42", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	out, _, err := inHome(t, home, "pairing", "list")
	if err != nil || !strings.Contains(out, "pending") || !strings.Contains(out, "Ann") {
		t.Fatalf("pairing list with a code pending: %v\n%s", err, out)
	}
	if _, _, err := inHome(t, home, "pairing", "approve", "WRONG123"); err == nil {
		t.Fatal("a wrong code was approved")
	}
	if out, _, err := inHome(t, home, "pairing", "approve", code); err != nil || out != "paired: telegram user 42 (Ann)\n" {
		t.Fatalf("pairing approve: %q %v", out, err)
	}
	out, _, err = inHome(t, home, "pairing", "list")
	if err != nil || !strings.Contains(out, "paired") || strings.Contains(out, "pending") {
		t.Fatalf("pairing list once paired: %v\n%s", err, out)
	}
}
