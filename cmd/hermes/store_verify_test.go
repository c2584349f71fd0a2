package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestStoreVerifyInProcess(t *testing.T) {
	quietEnv(t)
	home := seededHome(t, 2, sidOne, sidTwo)
	out, _, err := inHome(t, home, "store", "verify")
	if err != nil || !strings.Contains(out, "12 events in 2 streams") || !strings.HasSuffix(out, "ok: no damage\n") {
		t.Fatalf("store verify: %v\n%s", err, out)
	}
	out, _, err = inHome(t, home, "store", "verify", "--json")
	var rep struct{ Events int }
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || rep.Events != 12 {
		t.Fatalf("store verify --json: %v\n%s", err, out)
	}
	if _, _, err := inHome(t, home, "--store", "postgres://h/db", "store", "verify"); err == nil || !strings.Contains(err.Error(), "store verify works on the embedded store only") {
		t.Fatalf("store verify of a server: %v", err)
	}
}
