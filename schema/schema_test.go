package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
)

var update = flag.Bool("update", false, "write missing fixtures of current versions and rewrite the decoded goldens")

// samples holds one filled-in payload per current type; with -update they
// become the fixtures of versions that have none yet. Existing fixtures are
// never rewritten: they are the record of what was once stored.
var samples = []Payload{
	SessionStarted{Source: "cli", Model: "gpt-4o-mini", Provider: "openai", WorkingDir: "/home/ada/project", Reason: StartCompression,
		ParentSessionID: "8f14e45f-ceea-467f-a0e6-bb2f0a9e6b61", History: []Message{{Role: "user", Content: "summary of earlier work", Images: []ImageRef{{SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", MediaType: "image/png", Size: 2048}}}}},
	SystemPromptBuilt{Content: "You are Hermes, an agent with tools.\n\n## Memory\n- prefers Go"},
	UserMessageAdded{Content: "What is on this screenshot?", Source: "telegram",
		Images: []ImageRef{{SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", MediaType: "image/png", Size: 2048, Name: "screen.png"}}},
	AssistantMessageAdded{Content: "", Reasoning: "I should call terminal.", ToolCalls: []ToolCall{{ID: "call_1", Type: "function",
		Function: FunctionCall{Name: "terminal", Arguments: `{"command":"ls"}`}}}, FinishReason: "tool_calls", Provider: "openai",
		Model: "gpt-4o-mini", APIMode: "chat_completions", Usage: Usage{PromptTokens: 1200, CompletionTokens: 30, CacheReadTokens: 1024}, CostUSD: 0.00021},
	ToolCallStarted{CallID: "call_1", Name: "mcp_github_list_issues", Arguments: `{"repo":"hermes-go/hermes"}`, Server: "github"},
	ToolResultAdded{CallID: "call_1", Name: "terminal", Content: "README.md\ngo.mod\n", DurationMS: 12},
	TurnCompleted{Iterations: 2, Outcome: "answer"},
	TurnInterrupted{Reason: "user sent /stop"},
	TurnSteered{Text: "use the staging database, not production"},
	ProviderFallback{FromProvider: "openai", FromModel: "gpt-4o", ToProvider: "anthropic", ToModel: "claude-sonnet-4", Reason: "429 rate limit"},
	BudgetWarning{Used: 63, Max: 90},
	ContextCompressed{ChildSessionID: "2c0f3b5e-9d7d-4c43-9a51-f3b2f3f0a7c1", Summary: "[CONTEXT SUMMARY] goal: ...", ReplacedFrom: 4, ReplacedTo: 40, TokensBefore: 64000, TokensAfter: 9000},
	SubagentSpawned{ChildSessionID: "5d41402a-bc4b-4a76-b971-9d911017c592", Goal: "find the failing test", Toolsets: []string{"terminal", "file"}, Depth: 1},
	SubagentFinished{ChildSessionID: "5d41402a-bc4b-4a76-b971-9d911017c592", Status: "completed", Summary: "TestFoo fails on nil map", Usage: Usage{PromptTokens: 5000, CompletionTokens: 400}, CostUSD: 0.004},
	MemoryUpdated{Target: "memory", Action: "add", Entry: "User's project uses Go 1.26", Entries: []string{"User's project uses Go 1.26"}},
	SkillWritten{Name: "release-checklist", Action: "create", Content: "---\nname: release-checklist\ndescription: steps\n---\n1. tag\n", Dir: "devops/release-checklist",
		Files: []SkillFile{{Path: "scripts/tag.sh", Data: []byte("git tag \"$1\"\n"), Mode: 0o755}}, Author: &SkillAuthor{Kind: AuthorSession, SessionID: "0b7e5c1a-6d7b-4f8e-9a43-3c2d1e0f9a8b", TurnID: "turn-0001"}, Reason: "skill_manage create"},
	SkillPatched{Name: "release-checklist", Base: "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8", OldString: "1. tag", NewString: "1. test\n2. tag",
		Content: "---\nname: release-checklist\ndescription: steps\n---\n1. test\n2. tag\n", Author: SkillAuthor{Kind: AuthorReview, ReviewID: "5d41402a-bc4b-4a76-b971-9d911017c592", SessionID: "0b7e5c1a-6d7b-4f8e-9a43-3c2d1e0f9a8b"}, Reason: "tests were forgotten"},
	MemoryWriteStaged{ID: "m-1a2b", Target: "user", Action: "add", Content: "Prefers short answers."},
	MemoryWriteDecided{ID: "m-1a2b", Approved: true, By: "cli"},
	SkillArchived{Name: "release-checklist", Author: SkillAuthor{Kind: AuthorCurator, CuratorRun: "cur-7d1c"}, Reason: "duplicate of release"},
	SkillRestored{Name: "release-checklist", Author: SkillAuthor{Kind: AuthorPerson, Person: "ada"}, Reason: "still used"},
	ReviewSpawned{ReviewID: "5d41402a-bc4b-4a76-b971-9d911017c592", Skills: true},
	ReviewStarted{ReviewID: "5d41402a-bc4b-4a76-b971-9d911017c592", SessionID: "0b7e5c1a-6d7b-4f8e-9a43-3c2d1e0f9a8b", TurnID: "turn-0001", Skills: true, Memory: true, Model: "gpt-4o-mini"},
	ReviewFinished{ReviewID: "5d41402a-bc4b-4a76-b971-9d911017c592", Status: ReviewCompleted, Note: "learned: skill release-checklist created; 1 memory entry saved",
		Changes: []ReviewChange{{Kind: ReviewChangeSkill, Action: "create", Name: "release-checklist"}, {Kind: ReviewChangeMemory, Action: "add", Target: "user", Content: "Prefers short answers.", Staged: "m-1a2b"}},
		Usage:   Usage{PromptTokens: 3000, CompletionTokens: 200}, CostUSD: 0.0009},
	ReviewUndone{ReviewID: "5d41402a-bc4b-4a76-b971-9d911017c592", Undone: []string{"archived skill release-checklist"}, Skipped: []string{"memory: the entry is gone already"}, By: "cli"},
	SessionTitled{Title: "Listing repo files"},
	SessionEnded{Reason: "user exit"},
	TodoUpdated{Todos: []Todo{{ID: "1", Content: "read the failing test", Status: "completed"}, {ID: "2", Content: "fix the nil map", Status: "in_progress"}}},
	ApprovalDecided{Command: "rm -rf build/", Pattern: "recursive delete", Decision: "once", By: "user"},
	ApprovalGranted{Pattern: "recursive delete", By: "user", Session: "0b7e5c1a-6d7b-4f8e-9a43-3c2d1e0f9a8b", Command: "rm -rf build/"},
	ApprovalRevoked{Pattern: "recursive delete", By: "cli", Reason: "granted by mistake"},
	HookRan{Event: "pre_tool_call", Command: "~/.hermes/hooks/guard.sh", Tool: "terminal", Decision: "block", Reason: "no force pushes on main", ExitCode: 0, DurationMS: 41},
	PluginInstalled{Name: "weather", PluginPin: PluginPin{Version: "0.2.0", Description: "forecasts", Source: "https://example.org/weather-plugin.git", Kind: "git",
		Commit: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b", Hash: "sha256:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8",
		Tools: []string{"forecast"}, Hooks: []string{"pre_tool_call"}, Commands: []string{"forecast"}, Network: "allow", Hosts: []string{"api.example.org"},
		Env: []string{"WEATHER_API_KEY"}, Workspace: "read"}},
	PluginUpdated{Name: "weather", PluginPin: PluginPin{Version: "0.3.0", Source: "https://example.org/weather-plugin.git", Kind: "git",
		Commit: "2c0f3b5e9d7d4c439a51f3b2f3f0a7c15d41402a", Hash: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Tools: []string{"forecast"}},
		FromCommit: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b", FromHash: "sha256:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"},
	PluginDisabled{Name: "weather"},
	PluginEnabled{Name: "weather"},
	PluginRemoved{Name: "weather"},
	AuxiliaryCallCompleted{Purpose: "compression", Model: "gpt-4o-mini", Provider: "openai", Usage: Usage{PromptTokens: 12000, CompletionTokens: 900}, CostUSD: 0.0023},
	GatewayChatOpened{Key: "telegram/111111", Stream: "gateway-chat-telegram-3f2a9c1d7e5b8a60", Platform: "telegram", Chat: "111111"},
	GatewayMessageReceived{Platform: "telegram", Chat: "111111", User: "111111", UserName: "ada", MessageID: "42", Text: "what is on my calendar?",
		Attachments: []Attachment{{Kind: "photo", Path: "cache/telegram/42-0.jpg", MimeType: "image/jpeg", Size: 20480},
			{Kind: "photo", Name: "image-1", MimeType: "image/png", Size: 2048, SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}, SessionID: "0b7e5c1a-6d7b-4f8e-9a43-3c2d1e0f9a8b", TurnID: "turn-0001"},
	GatewaySessionBound{SessionID: "0b7e5c1a-6d7b-4f8e-9a43-3c2d1e0f9a8b", Reason: "new"},
	GatewayReplyRequested{ReplyID: "r-7d1c", SessionID: "0b7e5c1a-6d7b-4f8e-9a43-3c2d1e0f9a8b", TurnID: "turn-0001", InReplyTo: "42", Kind: "answer", Text: "Two meetings today."},
	GatewayMessageDelivered{ReplyID: "r-7d1c", PlatformMessageIDs: []string{"43"}},
	GatewayDeliveryFailed{ReplyID: "r-7d1c", Error: "telegram: 400 Bad Request: chat not found"},
	GatewayReplyPreviewed{InReplyTo: "111:42", Segment: 1, PlatformMessageIDs: []string{"111:43"}},
	GatewayHomeSet{Platform: "telegram", Chat: "111111", Thread: "17", User: "111111"},
	GatewayInboundRefused{Platform: "telegram", Chat: "999", User: "999", MessageID: "7", Reason: "not allowed: pairing code sent"},
	PairingRequested{Platform: "telegram", User: "999", UserName: "eve", Chat: "999", CodeHash: "5e884898da28047151d0e56f8dc62927", ExpiresAt: time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)},
	PairingApproved{Platform: "telegram", User: "999", UserName: "eve", CodeHash: "5e884898da28047151d0e56f8dc62927"},
	PairingRejected{Reason: "no pending pairing has this code"},
	PairingRevoked{Platform: "telegram", User: "999"},
	APIResponseDeleted{ResponseID: "resp_0123456789abcdef01234567MGI3ZTVjMWE"},
	JobCreated{ID: "3f2a9c1d7e5b", JobSpec: JobSpec{Name: "morning build check", Schedule: "0 9 * * 1-5", Timezone: "Europe/Berlin",
		Prompt: "Check the nightly build and summarise failures.", Script: "./check-build.sh", Toolsets: []string{"web", "terminal"}, Model: "gpt-4o-mini",
		Deliver: "origin", Origin: &JobOrigin{Platform: "telegram", Chat: "111111", Thread: "17", SessionID: "0b7e5c1a-6d7b-4f8e-9a43-3c2d1e0f9a8b"},
		CatchUp: "once", OnCrash: "retry", TimeoutSeconds: 600, MaxCostUSD: 0.5}, Enabled: true, CreatedBy: "tool"},
	JobListed{ID: "3f2a9c1d7e5b", Stream: "cron-job-3f2a9c1d7e5b", Name: "morning build check"},
	JobUpdated{JobSpec: JobSpec{Name: "morning build check", Schedule: "every 2h", Prompt: "Check the nightly build.", Deliver: "telegram:111111",
		CatchUp: "skip", OnCrash: "fail", NoAgent: true, Script: "df -h /"}, Changed: []string{"schedule", "deliver"}},
	JobPaused{Reason: "on holiday"},
	JobResumed{},
	JobRemoved{Reason: "no longer needed"},
	JobRunStarted{RunID: "r-5d41402abc4b", ScheduledFor: time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC), Attempt: 1, Trigger: TriggerSchedule,
		SessionID: "5d41402a-bc4b-4a76-b971-9d911017c592", Owner: &RunOwner{Host: "build-box", PID: 4242, Nonce: "9f86d081884c7d65"}},
	JobRunFinished{RunID: "r-5d41402abc4b", Status: RunOK, CostUSD: 0.0042, DurationMS: 15300, Output: "All green."},
	JobRunMissed{Count: 3, First: time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC), Last: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC), Policy: "once"},
	JobDelivered{RunID: "r-5d41402abc4b", Target: "telegram:111111", PlatformMessageIDs: []string{"77"}},
	JobDeliveryFailed{RunID: "r-5d41402abc4b", Target: "telegram:111111", Error: "telegram: 400 Bad Request: chat not found"},
}

func fixturePath(tv TypeVersion, suffix string) string {
	return filepath.Join("testdata", "events", fmt.Sprintf("%s.v%d%s.json", tv.Type, tv.Version, suffix))
}

func TestSamplesCoverEveryType(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range samples {
		seen[s.EventType()] = true
	}
	for name := range registry {
		if !seen[name] {
			t.Errorf("no sample payload for %s", name)
		}
	}
}

// TestFixturesDecodeForever decodes the golden fixture of every type at every
// version and compares the current-shape payload with its golden file.
func TestFixturesDecodeForever(t *testing.T) {
	if *update {
		for _, s := range samples {
			v, _ := CurrentVersion(s.EventType())
			p := fixturePath(TypeVersion{s.EventType(), v}, "")
			if _, err := os.Stat(p); err == nil {
				continue
			}
			env := MustEnvelope(Meta{SessionID: "0b7e5c1a-6d7b-4f8e-9a43-3c2d1e0f9a8b", TurnID: "turn-0001",
				CausationID: "c0ffee00-0000-4000-8000-000000000001", Time: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}, s)
			b, _ := json.MarshalIndent(env, "", "  ")
			if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tv := range Known() {
		t.Run(fmt.Sprintf("%s.v%d", tv.Type, tv.Version), func(t *testing.T) {
			raw, err := os.ReadFile(fixturePath(tv, ""))
			if err != nil {
				t.Fatalf("every type and version needs a fixture: %v", err)
			}
			var env Envelope
			if err := json.Unmarshal(raw, &env); err != nil {
				t.Fatalf("envelope: %v", err)
			}
			if env.Type != tv.Type || env.Version != tv.Version {
				t.Fatalf("fixture holds %s v%d", env.Type, env.Version)
			}
			if _, err := uuid.Parse(env.ID); err != nil {
				t.Errorf("event id %q is not a UUID", env.ID)
			}
			if env.SessionID == "" || env.TurnID == "" || env.CausationID == "" || env.Time.IsZero() {
				t.Errorf("envelope misses correlation fields: %+v", env)
			}
			p, err := Decode(env)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if p.EventType() != tv.Type {
				t.Fatalf("decoded into %T", p)
			}
			got, _ := json.MarshalIndent(p, "", "  ")
			got = append(got, '\n')
			golden := fixturePath(tv, ".decoded")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("golden: %v (run go test ./schema -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("decoded payload changed:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestUpcastAssistantV1(t *testing.T) {
	env := Envelope{Type: "AssistantMessageAdded", Version: 1,
		Payload: json.RawMessage(`{"content":"hi","model":"m","prompt_tokens":10,"completion_tokens":3}`)}
	p, err := Decode(env)
	if err != nil {
		t.Fatal(err)
	}
	a := p.(AssistantMessageAdded)
	if a.Content != "hi" || a.Usage.PromptTokens != 10 || a.Usage.CompletionTokens != 3 || a.Model != "m" {
		t.Fatalf("upcast lost fields: %+v", a)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name string
		env  Envelope
		want string
	}{
		{"unknown type", Envelope{Type: "NoSuchEvent", Version: 1, Payload: json.RawMessage(`{}`)}, "unknown event type NoSuchEvent v1"},
		{"future version", Envelope{Type: "UserMessageAdded", Version: 9, Payload: json.RawMessage(`{}`)}, "unknown event type UserMessageAdded v9"},
		{"malformed payload", Envelope{Type: "UserMessageAdded", Version: 1, Payload: json.RawMessage(`{"content":`)}, "decode UserMessageAdded v1"},
		{"wrong field type", Envelope{Type: "TurnCompleted", Version: 1, Payload: json.RawMessage(`{"iterations":"x"}`)}, "decode TurnCompleted v1"},
		{"malformed old version", Envelope{Type: "AssistantMessageAdded", Version: 1, Payload: json.RawMessage(`[`)}, "upcast AssistantMessageAdded v1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.env)
			if err == nil {
				t.Fatal("expected an error")
			}
			if !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
	var ute *UnknownTypeError
	_, err := Decode(Envelope{Type: "Nope", Version: 1})
	if !errors.As(err, &ute) {
		t.Fatalf("want *UnknownTypeError, got %T", err)
	}
}

func TestNewEnvelopeRejectsUnregistered(t *testing.T) {
	if _, err := NewEnvelope(Meta{}, bogus{}); err == nil {
		t.Fatal("an unregistered payload must not be encoded")
	}
}

type bogus struct{}

func (bogus) EventType() string { return "Bogus" }
