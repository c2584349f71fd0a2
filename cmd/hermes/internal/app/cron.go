package app

import (
	"context"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/grants"
	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/adapters/tools/cronjob"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// CronTool is the cronjob tool with what its registry knows: the
// toolsets a job may name (web counts even when it has no tools for lack
// of a search_url). Its caller keeps it (registry wraps what it
// registers) to give it the scheduler.
type CronTool struct {
	*cronjob.Tool
	Toolsets []string
	// Allow is the allow-list (grants and command_allowlist) its
	// scripts are checked against.
	Allow *grants.List
}

// NewCronTool is a cronjob tool, bound by Registry.
func NewCronTool() *CronTool { return &CronTool{Tool: &cronjob.Tool{}} }

// Bind gives the tool its store (nil when the registry is only listed)
// and the allow-list (grants and command_allowlist) its scripts are
// checked against.
func (t *CronTool) Bind(store events.Store, allow *grants.List) {
	t.Store, t.Toolsets, t.Allow = store, nil, allow
	t.Rules = func() cron.Rules {
		return cron.Rules{Toolsets: t.Toolsets, Allowed: allow.Has, Judge: judge.Check}
	}
	if store != nil && t.Jobs == nil {
		t.Jobs = cron.NewJobs(store, nil)
		t.Origin = func(ctx context.Context, id string) (*schema.JobOrigin, error) {
			return gateway.OriginOf(ctx, store, id)
		}
	}
}
