package main

import (
	"os"
	"runtime/debug"
)

// chatGCPercent is the garbage collector's target for a chat process
// (GOGC): a chat's live heap is small (~20 MiB, most of it tables built
// once at start), and at Go's default of 100 it is marked again after
// every ~20 MiB a turn allocates — about once every 20 tool calls, 10–15
// ms of CPU each time on the critical path of a 2-core machine. At 400 a
// cycle comes every ~80 MiB; chatMemoryLimit caps what that costs.
const chatGCPercent = 400

// chatMemoryLimit is the soft limit (GOMEMLIMIT) under which the relaxed
// target holds: a chat whose heap grows past it is collected as often as
// it takes to stay near it.
const chatMemoryLimit = 1 << 30

// tuneChatGC sets the collector for a chat process, unless GOGC or
// GOMEMLIMIT in the environment say otherwise. It returns what it set
// (0 when the environment decided).
func tuneChatGC() (percent int) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	debug.SetGCPercent(chatGCPercent)
	debug.SetMemoryLimit(chatMemoryLimit)
	return chatGCPercent
}
