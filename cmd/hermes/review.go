package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/review"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/tools/memory"
	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// reviewCmd is `hermes review`: the background reviews that ran after
// busy turns, what each learned, and taking that back.
func reviewCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "review", Short: "Background reviews: what the agent learned after busy turns (list), and taking it back (undo)"}
	cmd.AddCommand(reviewListCmd(g), reviewUndoCmd(g))
	return cmd
}

// findReview is the review whose id is or starts with id.
func findReview(ctx context.Context, store events.Store, id string) (*review.Entry, error) {
	all, err := review.List(ctx, store)
	if err != nil {
		return nil, err
	}
	var found []*review.Entry
	for _, e := range all {
		if strings.HasPrefix(e.ReviewID, id) {
			found = append(found, e)
		}
	}
	switch {
	case id == "" || len(found) == 0:
		return nil, fmt.Errorf("no background review %q (hermes review list shows them)", id)
	case len(found) > 1:
		return nil, fmt.Errorf("%q names %d reviews: give more of the id", id, len(found))
	}
	return found[0], nil
}

// undoReview takes back what review e changed, each change by an event of
// its own (a skill rolled back to the version before the review, or
// archived when the review created it; a memory entry removed or put
// back; a staged memory change rejected), and records ReviewUndone. A
// change made over since (a later version of the skill, by someone else)
// is left as it is and reported.
func undoReview(ctx context.Context, a *app.App, e *review.Entry, by schema.SkillAuthor, where string) (schema.ReviewUndone, error) {
	out := schema.ReviewUndone{ReviewID: e.ReviewID, By: where}
	if e.Finished == nil {
		return out, fmt.Errorf("review %s is still running: undo it once it ends", short(e.ReviewID))
	}
	if e.Undone != nil {
		return out, fmt.Errorf("review %s was undone already", short(e.ReviewID))
	}
	reason := "undo of review " + short(e.ReviewID)
	keeper := skillsKeeper(a)
	var names []string
	for _, c := range e.Finished.Changes {
		if c.Kind == schema.ReviewChangeSkill && !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	for _, name := range names {
		hist, _, err := skills.History(ctx, a.Store, name)
		if err != nil {
			return out, err
		}
		first := -1
		for i, v := range hist {
			if v.Author.Kind == schema.AuthorReview && v.Author.ReviewID == e.ReviewID {
				first = i
				break
			}
		}
		switch {
		case first < 0:
			out.Skipped = append(out.Skipped, fmt.Sprintf("skill %s: no version of it is the review's", name))
		case hist[len(hist)-1].Author.ReviewID != e.ReviewID:
			out.Skipped = append(out.Skipped, fmt.Sprintf("skill %s: changed since by %s (hermes skills history %s)", name, hist[len(hist)-1].Author, name))
		case first == 0 || hist[first-1].Archived:
			v, err := keeper.Archive(ctx, name, by, reason)
			if err != nil {
				return out, err
			}
			out.Undone = append(out.Undone, fmt.Sprintf("archived skill %s (version %d)", name, v.Number))
		default:
			v, err := keeper.Rollback(ctx, name, hist[first-1].Number, by)
			if err != nil {
				return out, err
			}
			out.Undone = append(out.Undone, fmt.Sprintf("rolled skill %s back to version %d (as version %d)", name, hist[first-1].Number, v.Number))
		}
	}
	if err := undoMemory(ctx, a, e, &out); err != nil {
		return out, err
	}
	ev, err := schema.NewEnvelope(schema.Meta{SessionID: e.SessionID}, out)
	if err != nil {
		return out, err
	}
	if _, err := a.Store.Append(ctx, review.Stream, events.Any, ev); err != nil {
		return out, err
	}
	return out, nil
}

// undoMemory takes back the review's memory changes: the entries its
// changes added are removed and those they removed put back (read from
// the memory stream: the changes its session made, and its staged ones
// approved since), and its staged changes still waiting are rejected.
func undoMemory(ctx context.Context, a *app.App, e *review.Entry, out *schema.ReviewUndone) error {
	rs, err := a.Store.ReadStream(ctx, memory.Stream, events.Forward, 0, 0)
	if err != nil {
		return err
	}
	current := map[string][]string{}
	staged := map[string]bool{}
	approved := ""
	type diff struct {
		target         string
		added, removed []string
	}
	var diffs []diff
	for _, r := range rs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return err
		}
		switch m := p.(type) {
		case schema.MemoryWriteStaged:
			if r.SessionID == e.ReviewID {
				staged[m.ID] = true
			}
		case schema.MemoryWriteDecided:
			if staged[m.ID] {
				delete(staged, m.ID)
				if m.Approved && m.Error == "" {
					approved = m.ID
				}
			}
		case schema.MemoryUpdated:
			before := current[m.Target]
			current[m.Target] = m.Entries
			ours := r.SessionID == e.ReviewID || approved != ""
			approved = ""
			if !ours {
				continue
			}
			d := diff{target: m.Target}
			for _, x := range m.Entries {
				if !slices.Contains(before, x) {
					d.added = append(d.added, x)
				}
			}
			for _, x := range before {
				if !slices.Contains(m.Entries, x) {
					d.removed = append(d.removed, x)
				}
			}
			diffs = append(diffs, d)
		}
	}
	for id := range staged {
		if _, err := memory.Reject(ctx, a.Store, id, "review undo"); err != nil {
			out.Skipped = append(out.Skipped, fmt.Sprintf("staged memory change %s: %v", id, err))
			continue
		}
		out.Undone = append(out.Undone, "rejected staged memory change "+id)
	}
	mem := memory.New(a.Store, filepath.Join(a.Home, "memories"))
	run := func(args string) error {
		_, err := mem.Run(tool.WithEnv(ctx, &tool.Env{}), []byte(args))
		return err
	}
	for i := len(diffs) - 1; i >= 0; i-- {
		d := diffs[i]
		for _, x := range d.added {
			if !slices.Contains(current[d.target], x) {
				out.Skipped = append(out.Skipped, fmt.Sprintf("%s entry %q: gone already", d.target, x))
				continue
			}
			if err := run(jsonArgs(map[string]string{"action": "remove", "target": d.target, "old_text": x})); err != nil {
				out.Skipped = append(out.Skipped, fmt.Sprintf("%s entry %q: %v", d.target, x, err))
				continue
			}
			out.Undone = append(out.Undone, fmt.Sprintf("removed %s entry %q", d.target, x))
		}
		for _, x := range d.removed {
			if err := run(jsonArgs(map[string]string{"action": "add", "target": d.target, "content": x})); err != nil {
				out.Skipped = append(out.Skipped, fmt.Sprintf("%s entry %q: %v", d.target, x, err))
				continue
			}
			out.Undone = append(out.Undone, fmt.Sprintf("put back %s entry %q", d.target, x))
		}
	}
	return nil
}

// jsonArgs is a tool call's arguments.
func jsonArgs(m map[string]string) string {
	b, _ := json.Marshal(m)
	return string(b)
}

// reviewNoteToChat sends a review's note, as a notice, to the gateway chat
// whose session the review read (the chat the session is bound to now);
// a session no chat holds gets none. It runs in the review's goroutine,
// after the review ended: nobody waits for it.
func reviewNoteToChat(store events.Store, pub cron.Publisher, f review.Finished, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	chat, ok, err := chatOfSession(ctx, store, f.SessionID)
	if err != nil || !ok {
		if err != nil {
			log.Warn().Err(err).Str("session", f.SessionID).Msg("finding the chat of a reviewed session failed: its note is not sent")
		}
		return
	}
	out := schema.Outbound{Kind: schema.OutboundNotice, Platform: chat.Platform, Chat: chat.Chat, Thread: chat.Thread, SessionID: f.SessionID, Text: "review: " + f.Note}
	if err := pub.Publish(ctx, out); err != nil {
		log.Warn().Err(err).Str("session", f.SessionID).Msg("sending a review's note failed")
	}
}

// chatOfSession finds the gateway chat session is bound to now, newest
// chat first.
func chatOfSession(ctx context.Context, store events.Store, session string) (schema.GatewayChatOpened, bool, error) {
	index, err := store.ReadStream(ctx, gateway.ChatIndexStream, events.Backward, events.End, 0)
	if err != nil {
		return schema.GatewayChatOpened{}, false, err
	}
	for _, r := range index {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return schema.GatewayChatOpened{}, false, err
		}
		chat, ok := p.(schema.GatewayChatOpened)
		if !ok {
			continue
		}
		rs, err := store.ReadStream(ctx, chat.Stream, events.Backward, events.End, 0)
		if err != nil {
			return schema.GatewayChatOpened{}, false, err
		}
		for _, x := range rs {
			if x.Type != schema.TypeGatewaySessionBound {
				continue
			}
			if b, err := schema.Decode(x.Envelope); err == nil && b.(schema.GatewaySessionBound).SessionID == session {
				return chat, true, nil
			}
			break // bound to another session now
		}
	}
	return schema.GatewayChatOpened{}, false, nil
}
