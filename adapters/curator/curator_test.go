package curator_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/curator"
	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

func md(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n\n" + body
}

const steps = "1. Run the full test suite with the race detector.\n2. Update the CHANGELOG with every user-facing change.\n3. Tag the release vX.Y.Z and push the tag.\n4. Announce it in the team channel.\n"

func library(t *testing.T) (*embedded.Store, *skills.Keeper) {
	t.Helper()
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store, skills.NewKeeper(store, filepath.Join(dir, "skills"))
}

func write(t *testing.T, k *skills.Keeper, name, content string) {
	t.Helper()
	author := schema.SkillAuthor{Kind: schema.AuthorSession, SessionID: "s1"}
	if _, err := k.Change(context.Background(), name, func(*skills.Version) (schema.Payload, error) {
		return schema.SkillWritten{Name: name, Action: "create", Content: content, Author: &author}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func view(t *testing.T, store events.Store, sid, name string) {
	t.Helper()
	ev, err := schema.NewEnvelope(schema.Meta{SessionID: sid}, schema.ToolCallStarted{CallID: "c", Name: "skill_view", Arguments: `{"name":"` + name + `"}`})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(context.Background(), events.SessionStream(sid), events.Any, ev); err != nil {
		t.Fatal(err)
	}
}

func TestSimilarity(t *testing.T) {
	snap := func(body string) skills.Snapshot {
		return skills.Snapshot{"SKILL.md": {Data: []byte(md("x", "Cut a release", body))}}
	}
	if s := curator.Similarity(snap(steps), snap(steps)); s != 1 {
		t.Fatalf("same text: %v", s)
	}
	edited := strings.Replace(steps, "4. Announce it in the team channel.", "4. Announce it on the mailing list.", 1)
	if s := curator.Similarity(snap(steps), snap(edited)); s < 0.7 || s >= 1 {
		t.Fatalf("one line rewritten: %v", s)
	}
	if s := curator.Similarity(snap(steps), snap("Water the plants every Tuesday and check the soil.\n")); s > 0.1 {
		t.Fatalf("unrelated: %v", s)
	}
}

func TestSurveyProposesAndApplies(t *testing.T) {
	store, k := library(t)
	ctx := context.Background()
	write(t, k, "release-checklist", md("release-checklist", "Cut a release", steps))
	write(t, k, "release-steps", md("release-steps", "Cut a release", steps))
	write(t, k, "release-notes", md("release-notes", "Cut a release", strings.Replace(steps, "team channel", "mailing list", 1)))
	write(t, k, "deploy-check", md("deploy-check", "Check a deploy", "Run the smoke tests against staging, then production.\n"))
	write(t, k, "deploy-verify", md("deploy-verify", "Check a deploy", "Run the smoke tests against staging, then production.\n"))
	write(t, k, "water-plants", md("water-plants", "Plants", "Water them on Tuesdays.\n"))
	view(t, store, "s2", "release-checklist")
	view(t, store, "s2", "deploy-check")
	view(t, store, "s3", "deploy-check")
	if err := k.Pin("deploy-verify", true); err != nil {
		t.Fatal(err)
	}

	r, err := curator.Survey(ctx, store, k, curator.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]curator.Proposal{}
	for _, p := range r.Proposals {
		got[p.Skill] = p
	}
	if len(got) != 2 || got["release-steps"].Kind != curator.Duplicate || got["release-steps"].Of != "release-checklist" ||
		got["release-notes"].Kind != curator.NearDuplicate || got["release-notes"].Of != "release-checklist" {
		t.Fatalf("proposals %+v", r.Proposals)
	}
	if len(r.Spared) != 1 || !strings.Contains(r.Spared[0], "deploy-verify: duplicate of deploy-check") || !strings.Contains(r.Spared[0], "pinned") {
		t.Fatalf("spared %q", r.Spared)
	}
	for _, s := range r.Skills {
		if s.Name == "deploy-check" && (s.Uses != 2 || s.LastUsed.IsZero()) {
			t.Fatalf("usage of deploy-check: %+v", s)
		}
	}

	applied := curator.Apply(ctx, k, "cur-test", r.Proposals)
	for _, a := range applied {
		if a.Err != nil || a.Version != 2 {
			t.Fatalf("applied %+v", a)
		}
	}
	hist, _, _ := skills.History(ctx, store, "release-steps")
	if last := hist[len(hist)-1]; !last.Archived || last.Author.Kind != schema.AuthorCurator || last.Author.CuratorRun != "cur-test" || !strings.Contains(last.Reason, "duplicate of release-checklist") {
		t.Fatalf("archive event %+v", last)
	}
	if _, err := (skills.Library{Dirs: []string{k.Dir}}).Get("release-steps"); err == nil {
		t.Fatal("the archived skill is still in the library")
	}
	if _, err := k.Rollback(ctx, "release-steps", 0, schema.SkillAuthor{Kind: schema.AuthorPerson, Person: "ada"}); err != nil {
		t.Fatal(err)
	}
	if _, err := (skills.Library{Dirs: []string{k.Dir}}).Get("release-steps"); err != nil {
		t.Fatalf("rollback did not restore: %v", err)
	}

	// A second survey, 100 days on: what nobody used is proposed; the
	// pinned skill and the ones used are judged from their last use.
	cfg := curator.Defaults()
	cfg.Now = func() time.Time { return time.Now().Add(100 * 24 * time.Hour) }
	r, err = curator.Survey(ctx, store, k, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var unused []string
	for _, p := range r.Proposals {
		if p.Kind == curator.Stale {
			unused = append(unused, p.Skill)
		}
	}
	if strings.Join(unused, ",") != "deploy-check,release-checklist,water-plants" {
		t.Fatalf("unused %q (proposals %+v, spared %q)", unused, r.Proposals, r.Spared)
	}
	// A pin taken between the survey and the run is honoured.
	k.Pin("water-plants", true)
	for _, a := range curator.Apply(ctx, k, "cur-2", r.Proposals) {
		if a.Skill == "water-plants" && (a.Err == nil || !strings.Contains(a.Err.Error(), "pinned")) {
			t.Fatalf("a pinned skill was archived: %+v", a)
		}
	}
}

// TestSlashLoadsCountAsUses: a skill loaded by /<skill-name> (the user
// message's Skills) is a use, as a skill_view call is.
func TestSlashLoadsCountAsUses(t *testing.T) {
	store, k := library(t)
	write(t, k, "water-plants", md("water-plants", "Plants", "Water them on Tuesdays.\n"))
	ev, err := schema.NewEnvelope(schema.Meta{SessionID: "s9"}, schema.UserMessageAdded{Content: "[IMPORTANT: ...]", Skills: []string{"water-plants"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(context.Background(), events.SessionStream("s9"), events.Any, ev); err != nil {
		t.Fatal(err)
	}
	r, err := curator.Survey(context.Background(), store, k, curator.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Skills) != 1 || r.Skills[0].Uses != 1 || r.Skills[0].LastUsed.IsZero() {
		t.Fatalf("skills %+v", r.Skills)
	}
}
