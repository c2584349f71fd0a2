package main

import (
	"strings"
	"testing"
)

func TestApprovalsInProcess(t *testing.T) {
	quietEnv(t)
	home := t.TempDir()
	if out, _, err := inHome(t, home, "approvals", "add", "recursive delete"); err != nil || !strings.Contains(out, "granted") {
		t.Fatalf("approvals add: %q %v", out, err)
	}
	if _, _, err := inHome(t, home, "approvals", "add", "recursive delte"); err == nil || !strings.Contains(err.Error(), "no rule is named") {
		t.Fatalf("a misspelt pattern: %v", err)
	}
	out, _, err := inHome(t, home, "approvals", "list")
	if err != nil || !grantListed(out, "recursive-delete", "cli") {
		t.Fatalf("approvals list: %v\n%s", err, out)
	}
	if out, _, err := inHome(t, home, "approvals", "rules"); err != nil || !strings.Contains(out, "recursive-delete") {
		t.Fatalf("approvals rules: %q %v", out, err)
	}
	if out, _, err := inHome(t, home, "approvals", "revoke", "recursive delete"); err != nil || out != "revoked: recursive-delete\n" {
		t.Fatalf("approvals revoke: %q %v", out, err)
	}
	if out, _, _ := inHome(t, home, "approvals", "list"); grantListed(out, "recursive-delete", "cli") {
		t.Fatalf("revoked but listed:\n%s", out)
	}
}
