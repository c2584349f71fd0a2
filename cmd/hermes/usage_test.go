package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// /usage counts HTTP calls (continuations and auxiliary calls included),
// follows the conversation back through compressions, marks estimates,
// and calls a cost without a price unknown.
func TestUsageOfAConversation(t *testing.T) {
	s, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	app := func(sid string, ps ...schema.Payload) {
		var envs []schema.Envelope
		for _, p := range ps {
			envs = append(envs, schema.MustEnvelope(schema.Meta{SessionID: sid}, p))
		}
		if _, err := s.Append(ctx, events.SessionStream(sid), events.Any, envs...); err != nil {
			t.Fatal(err)
		}
	}
	app("parent", schema.SessionStarted{Source: "cli", Reason: schema.StartNew},
		schema.AssistantMessageAdded{Model: "gpt-4o-mini", Usage: schema.Usage{PromptTokens: 1000, CompletionTokens: 100}, CostUSD: 0.01, Calls: 3},
		schema.AuxiliaryCallCompleted{Purpose: "compression", Model: "gpt-4o-mini", Usage: schema.Usage{PromptTokens: 500}, CostUSD: 0.001})
	app("child", schema.SessionStarted{Source: "cli", Reason: schema.StartCompression, ParentSessionID: "parent"},
		schema.AssistantMessageAdded{Model: "local-llm", Usage: schema.Usage{PromptTokens: 40, CompletionTokens: 4, Estimated: true}})
	u, err := usageOf(ctx, s, "child", model.DefaultPrices())
	if err != nil {
		t.Fatal(err)
	}
	line := u.String()
	if u.Calls != 5 || u.Sessions != 2 || u.Usage.PromptTokens != 1540 || !u.Usage.Estimated {
		t.Fatalf("usage %+v", u)
	}
	for _, want := range []string{"5 model calls over 2 sessions", "some estimated", "$0.0110 plus an unknown cost for local-llm"} {
		if !strings.Contains(line, want) {
			t.Fatalf("%q lacks %q", line, want)
		}
	}
}

// A server that reports no usage gets estimated tokens, marked so, and a
// model without a price shows cost unknown in the session list.
func TestEstimatedTokensAndUnknownCost(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "The capital of France is Paris."})
	defer srv.Close()
	home := t.TempDir()
	_, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "--model", "my-local-model", "-q", "What is the capital of France?")
	if code != 0 {
		t.Fatal(errOut)
	}
	sid := sessionIDFrom(t, errOut)
	ev := mustRun(t, home, "sessions", "events", sid, "--json")
	if !strings.Contains(ev, `"estimated":true`) {
		t.Fatalf("no estimated usage:\n%s", ev)
	}
	if list := mustRun(t, home, "sessions", "list"); !strings.Contains(list, "unknown") || strings.Contains(list, "$0.0000") {
		t.Fatalf("list:\n%s", list)
	}
}

// After /undo, /retry or /branch the conversation on screen is a fork:
// /usage counts the calls of the sessions it was forked from up to the
// fork (the turns taken back were paid for), not those another chat added
// to the original afterwards.
func TestUsageFollowsForks(t *testing.T) {
	s, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	seed(t, s, "orig", 2) // two calls, $0.002
	fork, err := session.Fork(ctx, s, "orig", 2)
	if err != nil {
		t.Fatal(err)
	}
	// The original goes on elsewhere after the fork: not this conversation.
	app := func(sid string, p schema.Payload) {
		if _, err := s.Append(ctx, events.SessionStream(sid), events.Any, schema.MustEnvelope(schema.Meta{SessionID: sid}, p)); err != nil {
			t.Fatal(err)
		}
	}
	app("orig", schema.AssistantMessageAdded{Model: "gpt-4o-mini", Usage: schema.Usage{PromptTokens: 7000}, CostUSD: 1})
	u, err := usageOf(ctx, s, fork, model.DefaultPrices())
	if err != nil {
		t.Fatal(err)
	}
	if u.Calls != 2 || u.Sessions != 2 || u.Usage.PromptTokens != 200 || u.Cost < 0.00199 || u.Cost > 0.0021 {
		t.Fatalf("usage after a fork: %+v", u)
	}
	// A fork of the fork, with a call of its own.
	fork2, err := session.Fork(ctx, s, fork, 1)
	if err != nil {
		t.Fatal(err)
	}
	app(fork2, schema.AssistantMessageAdded{Model: "gpt-4o-mini", Usage: schema.Usage{PromptTokens: 50}, CostUSD: 0.0005})
	if u, _ = usageOf(ctx, s, fork2, model.DefaultPrices()); u.Calls != 3 || u.Sessions != 3 || u.Usage.PromptTokens != 250 {
		t.Fatalf("usage after two forks: %+v", u)
	}
	if !strings.Contains(u.String(), "3 model calls over 3 sessions") {
		t.Fatalf("%q", u.String())
	}
}
