package importer

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// The tables as the Python Hermes Agent (hermes_state.py) creates them;
// only the columns the importer reads, plus a few it must ignore.
const stateSchema = `
CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT, system_prompt TEXT,
  parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT, message_count INTEGER DEFAULT 0,
  input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0, cache_read_tokens INTEGER DEFAULT 0,
  cache_write_tokens INTEGER DEFAULT 0, cwd TEXT, estimated_cost_usd REAL, title TEXT, archived INTEGER NOT NULL DEFAULT 0);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
  content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL, token_count INTEGER,
  finish_reason TEXT, reasoning TEXT, reasoning_content TEXT, active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0);
`

// importState imports the state.db at path into a new store in dir,
// checks the report (2 sessions, 5 messages), and returns session sid's
// events, their types and payloads.
func importState(t *testing.T, dir, path, sid string) (*embedded.Store, []events.Recorded, []string, []schema.Payload) {
	t.Helper()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ctx := context.Background()
	rep, err := HermesState(ctx, path, store)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sessions != 2 || rep.Messages != 5 {
		t.Fatalf("report %+v", rep)
	}
	rs, _ := store.ReadStream(ctx, events.SessionStream(sid), events.Forward, 0, 0)
	var types []string
	var ps []schema.Payload
	for _, r := range rs {
		types = append(types, r.Type)
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return store, rs, types, ps
}

func TestImportHermesState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(stateSchema); err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO sessions (id, source, model, system_prompt, started_at, ended_at, end_reason, input_tokens, output_tokens, cache_read_tokens, cwd, estimated_cost_usd, title)
		VALUES ('20260101_120000_abc', 'telegram', 'anthropic/claude-sonnet-4', 'You are Hermes.', 1767268800.5, 1767269400, 'user_exit', 5000, 300, 2000, '/home/ada', 0.0123, 'Disk usage')`)
	exec(`INSERT INTO sessions (id, source, model, parent_session_id, started_at) VALUES ('20260101_130000_def', 'cli', 'gpt-4o', '20260101_120000_abc', 1767272400)`)
	exec(`INSERT INTO messages (session_id, role, content, timestamp) VALUES ('20260101_120000_abc', 'user', 'How full is my disk?', 1767268801)`)
	exec(`INSERT INTO messages (session_id, role, content, tool_calls, timestamp, finish_reason, reasoning) VALUES ('20260101_120000_abc', 'assistant', '',
		'[{"id":"call_1","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"df -h\"}"}}]', 1767268802, 'tool_calls', 'Check df.')`)
	exec(`INSERT INTO messages (session_id, role, content, tool_call_id, tool_name, timestamp) VALUES ('20260101_120000_abc', 'tool', '/dev/sda1 80% used', 'call_1', 'terminal', 1767268803)`)
	exec(`INSERT INTO messages (session_id, role, content, timestamp, finish_reason) VALUES ('20260101_120000_abc', 'assistant', 'Your disk is 80% full.', 1767268804, 'stop')`)
	exec(`INSERT INTO messages (session_id, role, content, timestamp, active) VALUES ('20260101_120000_abc', 'user', 'rewound away', 1767268805, 0)`)
	exec(`INSERT INTO messages (session_id, role, content, timestamp) VALUES ('20260101_130000_def', 'user', 'Follow-up question', 1767272401)`)
	db.Close()

	store, rs, types, ps := importState(t, dir, path, "20260101_120000_abc")
	ctx := context.Background()
	if strings.Join(types, " ") != "SessionStarted SystemPromptBuilt SessionTitled UserMessageAdded AssistantMessageAdded ToolResultAdded AssistantMessageAdded TurnCompleted SessionEnded" {
		t.Fatalf("events %v", types)
	}
	start := ps[0].(schema.SessionStarted)
	if start.Source != "telegram" || start.Reason != schema.StartImport || start.WorkingDir != "/home/ada" || !rs[0].Time.Equal(at(1767268800.5)) {
		t.Fatalf("start %+v at %s", start, rs[0].Time)
	}
	call := ps[4].(schema.AssistantMessageAdded)
	if len(call.ToolCalls) != 1 || call.ToolCalls[0].Function.Name != "terminal" || call.Reasoning != "Check df." {
		t.Fatalf("tool call %+v", call)
	}
	final := ps[6].(schema.AssistantMessageAdded)
	if final.Usage.PromptTokens != 7000 || final.Usage.CompletionTokens != 300 || final.CostUSD != 0.0123 {
		t.Fatalf("usage on the last answer %+v", final)
	}
	msgs := history.Fold(ps).Full()
	b, _ := json.Marshal(msgs)
	if len(msgs) != 5 || msgs[3].Role != "tool" || msgs[3].ToolCallID != "call_1" || strings.Contains(string(b), "rewound") {
		t.Fatalf("history %s", b)
	}
	child, _ := store.ReadStream(ctx, events.SessionStream("20260101_130000_def"), events.Forward, 0, 1)
	var cs schema.SessionStarted
	json.Unmarshal(child[0].Payload, &cs)
	if cs.ParentSessionID != "20260101_120000_abc" {
		t.Fatalf("parent link lost: %+v", cs)
	}
	// Importing again skips what is there.
	rep, err := HermesState(ctx, path, store)
	if err != nil || rep.Sessions != 0 || rep.Skipped != 2 {
		t.Fatalf("second import %+v %v", rep, err)
	}
	if _, err := HermesState(ctx, filepath.Join(dir, "events.db"), store); err == nil || !strings.Contains(err.Error(), "no sessions table") {
		t.Fatalf("not a state.db: %v", err)
	}
}

// TestImportRealHermesStateDB imports a database written by the Python
// Hermes Agent's own SessionDB (hermes-agent 0.19.0, which .ci/run
// installs; HERMES_AGENT_PYTHONPATH points at it).
func TestImportRealHermesStateDB(t *testing.T) {
	pyPath := os.Getenv("HERMES_AGENT_PYTHONPATH")
	if pyPath == "" {
		t.Skip("HERMES_AGENT_PYTHONPATH is not set (.ci/run installs hermes-agent and sets it)")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	cmd := exec.Command("python3", "testdata/make_state.py", path)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pyPath, "HERMES_HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build state.db with hermes_state.SessionDB: %v\n%s", err, out)
	}
	store, rs, types, ps := importState(t, dir, path, "20260301_090000_aaaaaa")
	ctx := context.Background()
	if got := strings.Join(types, " "); got != "SessionStarted SystemPromptBuilt SessionTitled UserMessageAdded AssistantMessageAdded ToolResultAdded AssistantMessageAdded TurnCompleted SessionEnded" {
		t.Fatalf("events %s", got)
	}
	start := ps[0].(schema.SessionStarted)
	if start.Source != "telegram" || start.Model != "anthropic/claude-sonnet-4" || start.WorkingDir != "/home/ada" {
		t.Fatalf("start %+v", start)
	}
	if title := ps[2].(schema.SessionTitled); title.Title != "Disk usage" {
		t.Fatalf("title %+v", title)
	}
	if !rs[3].Time.Equal(at(1772355601.25)) || !rs[6].Time.Equal(at(1772355604)) {
		t.Fatalf("message times %s, %s", rs[3].Time, rs[6].Time)
	}
	call := ps[4].(schema.AssistantMessageAdded)
	if len(call.ToolCalls) != 1 || call.ToolCalls[0].ID != "call_1" || call.ToolCalls[0].Function.Name != "terminal" ||
		call.ToolCalls[0].Function.Arguments != `{"command": "df -h"}` || call.Reasoning != "Check df." {
		t.Fatalf("tool call %+v", call)
	}
	if res := ps[5].(schema.ToolResultAdded); res.CallID != "call_1" || res.Name != "terminal" || res.Content != "/dev/sda1 80% used" {
		t.Fatalf("tool result %+v", res)
	}
	final := ps[6].(schema.AssistantMessageAdded)
	if final.Content != "Your disk is 80% full." || final.Usage.PromptTokens != 7000 || final.Usage.CompletionTokens != 300 || final.CostUSD != 0.0123 {
		t.Fatalf("last answer %+v", final)
	}
	if end := ps[8].(schema.SessionEnded); end.Reason == "" {
		t.Fatalf("end %+v", end)
	}
	msgs := history.Fold(ps).Full()
	if len(msgs) != 5 || msgs[0].Role != "system" || msgs[3].Role != "tool" {
		b, _ := json.Marshal(msgs)
		t.Fatalf("history %s", b)
	}
	child, _ := store.ReadStream(ctx, events.SessionStream("20260301_100000_bbbbbb"), events.Forward, 0, 1)
	var cs schema.SessionStarted
	json.Unmarshal(child[0].Payload, &cs)
	if cs.ParentSessionID != "20260301_090000_aaaaaa" || cs.Source != "cli" {
		t.Fatalf("child %+v", cs)
	}
}
