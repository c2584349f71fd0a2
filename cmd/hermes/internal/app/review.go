package app

import (
	"context"
	"fmt"
	"sync"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/review"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// reviewNotes hands the notes of finished reviews to whoever shows them
// (the chat sets its printer once it has one).
type reviewNotes struct {
	mu   sync.Mutex
	show func(review.Finished)
}

func (n *reviewNotes) notify(f review.Finished) {
	n.mu.Lock()
	show := n.show
	n.mu.Unlock()
	if show != nil {
		show(f)
	}
}

// OnReview makes show hear of every background review's end (the chat
// prints its one-line note); nil stops that.
func (c *Chat) OnReview(show func(review.Finished)) {
	if c.notes == nil {
		return
	}
	c.notes.mu.Lock()
	c.notes.show = show
	c.notes.mu.Unlock()
}

// Reviewer builds the background reviewer of cfg.Review (nil when it is
// off) on the review's model: auxiliary.background_review, else the
// auxiliary model, else the main provider and model. Its reviews use
// tools' memory and skill tools.
func Reviewer(deps session.Deps, main model.Provider, cfg config.Resolved, tools tool.Toolbox, notify func(review.Finished)) (*review.Reviewer, error) {
	if !cfg.Review.On {
		return nil, nil
	}
	provider, name := main, cfg.Model
	switch {
	case cfg.ReviewModel != "":
		p, err := llm.New(cfg.ReviewAux)
		if err != nil {
			return nil, fmt.Errorf("auxiliary.background_review: %w", err)
		}
		provider, name = p, cfg.ReviewModel
	case deps.AuxProvider != nil && deps.AuxModel != "":
		provider, name = deps.AuxProvider, deps.AuxModel
	}
	return review.New(review.Config{Store: deps.Store, Log: deps.Log, Provider: provider, Model: name, Prices: cfg.Prices, Tools: tools,
		MaxSteps: cfg.Review.MaxSteps, MaxCost: cfg.Review.MaxCost, Timeout: cfg.Review.Timeout, Leases: deps.Leases, Notify: notify, Redact: deps.Redact}), nil
}

// startReviews wires the reviewer into deps and closes the reviews a dead
// process left open.
func startReviews(ctx context.Context, deps *session.Deps, rv *review.Reviewer, cfg config.Resolved) {
	if rv == nil {
		return
	}
	if closed, err := rv.Recover(ctx); err != nil {
		deps.Log.Warn().Err(err).Msg("closing the background reviews left open failed")
	} else if len(closed) > 0 {
		deps.Log.Info().Int("reviews", len(closed)).Msg("background reviews left open by a process that ended were recorded as abandoned")
	}
	deps.Review, deps.ReviewSkillsAfter, deps.ReviewMemoryAfter = rv.Start, cfg.Review.SkillsAfter, cfg.Review.MemoryAfter
}
