package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/mcp/mcptest"
)

// grantAllow is an allow-list that keeps where each grant came from, as
// the grants of the event store do.
type grantAllow struct {
	memAllow
	session, command string
}

func (a *grantAllow) Grant(_ context.Context, p, session, command string) error {
	a.session, a.command = session, command
	return a.Add(p)
}

// TestAlwaysGrantsWithItsSession: "always" reaches an allow-list that
// keeps grants with the session and the call the person was asked about.
func TestAlwaysGrantsWithItsSession(t *testing.T) {
	cfg := fake(mcptest.Basic)
	cfg.Approval = true
	allow := &grantAllow{}
	s := start(t, "guarded", cfg, &Options{Allow: allow})
	echo := toolOf(t, s, "mcp_guarded_echo")
	rec := &recorder{answers: []string{"always"}}
	if _, err := echo.Run(tool.WithEnv(context.Background(), rec.env()), json.RawMessage(`{"text":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if !allow.Has("mcp_guarded_echo") || allow.session != "s1" || !strings.HasPrefix(allow.command, `mcp_guarded_echo {"text":"x"}`) {
		t.Fatalf("grant: %+v", allow)
	}
	// A fresh session is not asked.
	if _, err := echo.Run(tool.WithEnv(context.Background(), (&recorder{}).env()), json.RawMessage(`{"text":"y"}`)); err != nil {
		t.Fatalf("granted tool in a new session: %v", err)
	}
}
