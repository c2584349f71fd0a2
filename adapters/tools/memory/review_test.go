package memory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGateOffAndReset(t *testing.T) {
	tl, ctx, store := setup(t)
	set := Settings{Approval: true}
	tl.Settings = func() Settings { return set }
	md := filepath.Join(tl.Dir, "USER.md")

	out, err := call(t, tl, ctx, map[string]any{"action": "add", "target": "user", "content": "Prefers short answers"})
	if err != nil || !strings.Contains(out, "staged for the user's approval") {
		t.Fatalf("staged: %q %v", out, err)
	}
	if _, err := os.Stat(md); !os.IsNotExist(err) {
		t.Fatal("a staged change reached USER.md")
	}
	call(t, tl, ctx, map[string]any{"action": "add", "target": "user", "content": "Lives in Lyon"})
	pending, err := Pending(ctx, store)
	if err != nil || len(pending) != 2 || pending[0].SessionID != "s1" || !strings.Contains(pending[0].Summary(), "add to user profile: Prefers short answers") {
		t.Fatalf("pending %+v %v", pending, err)
	}
	if _, err := Approve(ctx, store, tl.Dir, "m-nope", "cli"); err == nil {
		t.Fatal("an unknown id was approved")
	}
	lines, err := Approve(ctx, store, tl.Dir, pending[0].ID, "cli")
	if err != nil || len(lines) != 1 || !strings.Contains(lines[0], "approved") {
		t.Fatalf("approve: %q %v", lines, err)
	}
	if lines, err := Reject(ctx, store, "all", "telegram"); err != nil || len(lines) != 1 || !strings.Contains(lines[0], "Lyon") {
		t.Fatalf("reject: %q %v", lines, err)
	}
	if p, _ := Pending(ctx, store); len(p) != 0 {
		t.Fatalf("still pending: %+v", p)
	}
	if data, _ := os.ReadFile(md); string(data) != "Prefers short answers\n" {
		t.Fatalf("USER.md %q", data)
	}

	// Off: every change is refused, nothing is staged.
	set = Settings{Off: true, Approval: true}
	if _, err := call(t, tl, ctx, map[string]any{"action": "add", "target": "memory", "content": "x"}); err == nil || !strings.Contains(err.Error(), "memory is off") {
		t.Fatalf("memory off: %v", err)
	}
	set = Settings{UserOff: true}
	if _, err := call(t, tl, ctx, map[string]any{"action": "add", "target": "user", "content": "y"}); err == nil || !strings.Contains(err.Error(), "user profile is off") {
		t.Fatalf("user profile off: %v", err)
	}
	if _, err := call(t, tl, ctx, map[string]any{"action": "add", "target": "memory", "content": "Builds with make"}); err != nil {
		t.Fatal(err)
	}

	removed, err := Reset(ctx, store, tl.Dir, "memory", "user")
	if err != nil || len(removed["user"]) != 1 || len(removed["memory"]) != 1 {
		t.Fatalf("reset: %v %v", removed, err)
	}
	if e, _, _ := Current(ctx, store, "user"); len(e) != 0 {
		t.Fatalf("after reset: %v", e)
	}
	if data, _ := os.ReadFile(md); string(data) != "" {
		t.Fatalf("USER.md after reset %q", data)
	}
	back, err := UndoReset(ctx, store, tl.Dir, "memory", "user")
	if err != nil || back["user"][0] != "Prefers short answers" || back["memory"][0] != "Builds with make" {
		t.Fatalf("undo: %v %v", back, err)
	}
	if data, _ := os.ReadFile(md); string(data) != "Prefers short answers\n" {
		t.Fatalf("USER.md after undo %q", data)
	}
	if again, _ := UndoReset(ctx, store, tl.Dir, "memory", "user"); len(again) != 0 {
		t.Fatalf("a second undo restored %v", again)
	}
}
