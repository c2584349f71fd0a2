package main

import (
	"runtime/debug"
	"testing"
)

// A chat relaxes the collector's target and caps it with a soft memory
// limit; GOGC or GOMEMLIMIT in the environment are left to decide.
func TestTuneChatGC(t *testing.T) {
	prevPercent := debug.SetGCPercent(100)
	prevLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	})
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	if got := tuneChatGC(); got != chatGCPercent {
		t.Fatalf("tuneChatGC set %d, want %d", got, chatGCPercent)
	}
	if p := debug.SetGCPercent(100); p != chatGCPercent {
		t.Fatalf("GC percent %d after tuneChatGC, want %d", p, chatGCPercent)
	}
	if l := debug.SetMemoryLimit(-1); l != chatMemoryLimit {
		t.Fatalf("memory limit %d after tuneChatGC, want %d", l, chatMemoryLimit)
	}
	t.Setenv("GOGC", "150")
	if got := tuneChatGC(); got != 0 {
		t.Fatalf("with GOGC set, tuneChatGC set %d", got)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("with GOGC set, the GC percent became %d", p)
	}
}
