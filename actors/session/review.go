package session

import (
	"context"

	"github.com/google/uuid"

	"github.com/hermes-go/hermes/schema"
)

// ReviewRequest hands a turn to a background review (Deps.Review): the
// session has recorded ReviewSpawned naming ID, the review's own session.
type ReviewRequest struct {
	// ID is the review's session; SessionID and TurnID the turn reviewed.
	ID        string
	SessionID string
	TurnID    string
	// Skills and Memory say what is due for review.
	Skills, Memory bool
	// System and Messages are the reviewed session's stable prefix and
	// conversation as the turn left them (a copy: the session goes on).
	System   string
	Messages []schema.Message
}

// markReview moves the thresholds' starting points to the end of the
// transcript for what a spawned review covers.
func (a *Actor) markReview(e schema.ReviewSpawned) {
	if e.Skills {
		a.skillMark = len(a.tr.Messages)
	}
	if e.Memory {
		a.memoryMark = len(a.tr.Messages)
	}
}

// reviewDue counts, from the marks (and the last skill_manage or memory
// call, which is the agent saving on its own), the tool-calling steps and
// the user turns of the transcript, and says which reviews are due.
func (a *Actor) reviewDue() (skills, memory bool) {
	msgs := a.tr.Messages
	steps, turns := 0, 0
	for i := min(a.skillMark, len(msgs)); i < len(msgs); i++ {
		m := msgs[i]
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		steps++
		for _, tc := range m.ToolCalls {
			if tc.Function.Name == "skill_manage" {
				steps = 0
			}
		}
	}
	for i := min(a.memoryMark, len(msgs)); i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == "user" {
			turns++
		}
		for _, tc := range m.ToolCalls {
			if tc.Function.Name == "memory" {
				turns = 0
			}
		}
	}
	has := func(name string) bool { _, ok := a.deps.Tools.Get(name); return ok }
	skills = a.deps.ReviewSkillsAfter > 0 && steps >= a.deps.ReviewSkillsAfter && has("skill_manage")
	memory = a.deps.ReviewMemoryAfter > 0 && turns >= a.deps.ReviewMemoryAfter && has("memory")
	return skills, memory
}

// maybeReview hands the turn just ended to a background review when it
// answered and crossed a threshold: the session records ReviewSpawned (the
// link from the parent; the review's session names this one back) and
// Deps.Review starts the review, which the next turn does not wait for.
func (a *Actor) maybeReview(r TurnResult) {
	if a.deps.Review == nil || a.task != nil || r.Err != nil || r.Answer == "" || a.tr == nil {
		return
	}
	skills, memory := a.reviewDue()
	if !skills && !memory {
		return
	}
	e := schema.ReviewSpawned{ReviewID: uuid.NewString(), Skills: skills, Memory: memory}
	if err := a.rec.Record(context.Background(), r.TurnID, e); err != nil {
		a.log.Warn().Err(err).Msg("recording the background review failed: none started")
		return
	}
	a.markReview(e)
	a.deps.Review(ReviewRequest{ID: e.ReviewID, SessionID: a.rec.sessionID(), TurnID: r.TurnID, Skills: skills, Memory: memory,
		System: a.tr.System, Messages: append([]schema.Message(nil), a.tr.Messages...)})
}
