package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/replay"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// recordRichSession records a session with parallel tool calls, a repaired
// tool name, an unknown tool, a bad-JSON recovery, a reasoning answer, an
// interrupted turn and a turn cut by a "crash".
func recordRichSession(t *testing.T) (*rig, string) {
	r := newRig(t,
		llmtest.Reply{Reasoning: "Plan: echo twice.", ToolCalls: []llmtest.ToolCall{{ID: "a", Name: "echo", Args: `{"x":1}`}, {ID: "b", Name: "Echo_tool", Args: `{"x":2,}`}}, Prompt: 100, Completion: 20},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c", Name: "launch", Args: `{}`}, {ID: "d", Name: "echo", Args: `{"bad": }`}}},
		llmtest.Reply{Content: "<think>done thinking</think>All echoed.", Prompt: 300, Completion: 9},
		llmtest.Reply{Content: "slow", Delay: 5 * time.Second},
		llmtest.Reply{Content: "after the interruption"},
	)
	r.create(t, "rich")
	ctx := context.Background()
	if res := r.mgr.Run(ctx, "rich", "echo things", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	sctx, cancel := context.WithCancelCause(ctx)
	go func() {
		waitFor(t, func() bool { return len(r.srv.Requests()) >= 4 }) // the slow call is in flight
		cancel(agent.Cause("user sent /stop"))
	}()
	if res := r.mgr.Run(sctx, "rich", "take your time", nil); !errors.Is(res.Err, agent.ErrInterrupted) {
		t.Fatal(res.Err)
	}
	if res := r.mgr.Run(ctx, "rich", "go on", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	return r, "rich"
}

func TestReplayMatchesTheRecord(t *testing.T) {
	r, id := recordRichSession(t)
	ctx := context.Background()
	rs, _ := r.store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
	rep, err := replay.Run(ctx, rs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Turns != 3 || rep.Calls != 4 { // the interrupted call left no answer
		t.Fatalf("replayed %+v", rep)
	}
	// Tamper with a dispatched call: the replay names the event.
	tampered := append([]events.Recorded(nil), rs...)
	for i, e := range tampered {
		if e.Type == "ToolCallStarted" {
			var s schema.ToolCallStarted
			json.Unmarshal(e.Payload, &s)
			s.Arguments = `{"x":999}`
			b, _ := json.Marshal(s)
			tampered[i].Payload = b
			_, err := replay.Run(ctx, tampered, nil)
			var div *replay.Divergence
			if !errors.As(err, &div) || div.Revision != e.Revision || !strings.Contains(div.Expected, `999`) || !strings.Contains(div.Got, `\"x\":1`) {
				t.Fatalf("tampered event %d: %v", e.Revision, err)
			}
			break
		}
	}
	// Tamper with a model answer's tool call: every later decision moves.
	for i, e := range rs {
		if e.Type == "AssistantMessageAdded" {
			var a schema.AssistantMessageAdded
			json.Unmarshal(e.Payload, &a)
			a.ToolCalls = a.ToolCalls[:1]
			b, _ := json.Marshal(a)
			t2 := append([]events.Recorded(nil), rs...)
			t2[i].Payload = b
			if _, err := replay.Run(ctx, t2, nil); err == nil {
				t.Fatal("a tampered answer replayed cleanly")
			}
			break
		}
	}
}

func TestForkExportImport(t *testing.T) {
	r, id := recordRichSession(t)
	ctx := context.Background()
	rs, _ := r.store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
	at := uint64(0)
	for _, e := range rs {
		if e.Type == "TurnCompleted" {
			at = e.Revision
			break
		}
	}
	fork, err := session.Fork(ctx, r.store, id, at)
	if err != nil {
		t.Fatal(err)
	}
	fold := func(evs []events.Recorded) []schema.Message {
		var ps []schema.Payload
		for _, e := range evs {
			p, _ := schema.Decode(e.Envelope)
			ps = append(ps, p)
		}
		return history.Fold(ps).Full()
	}
	forked, _ := r.store.ReadStream(ctx, events.SessionStream(fork), events.Forward, 0, 0)
	want, _ := json.Marshal(fold(rs[:at+1]))
	got, _ := json.Marshal(fold(forked))
	if string(want) != string(got) {
		t.Fatalf("fork history\n%s\nwant the prefix\n%s", got, want)
	}
	if after, _ := r.store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0); len(after) != len(rs) {
		t.Fatal("the original changed")
	}
	var started schema.SessionStarted
	json.Unmarshal(forked[0].Payload, &started)
	if started.Reason != schema.StartFork || started.ParentSessionID != id {
		t.Fatalf("fork start %+v", started)
	}
	// The branch continues.
	r.srv.Add(llmtest.Reply{Content: "on the branch"})
	if res := r.mgr.Run(ctx, fork, "continue here", nil); res.Err != nil || res.Answer != "on the branch" {
		t.Fatalf("%+v", res)
	}
	if _, err := session.Fork(ctx, r.store, id, 9999); err == nil {
		t.Fatal("fork past the end accepted")
	}

	var buf bytes.Buffer
	n, err := session.Export(ctx, r.store, id, &buf, nil)
	if err != nil || n != len(rs) || strings.Count(buf.String(), "\n") != n {
		t.Fatalf("export %d %v", n, err)
	}
	other, _ := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	defer other.Close()
	sameID, m, err := session.Import(ctx, other, bytes.NewReader(buf.Bytes()), "", nil)
	if err != nil || sameID != id || m != n {
		t.Fatalf("import %s %d %v", sameID, m, err)
	}
	imported, _ := other.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
	for i := range rs {
		if imported[i].ID != rs[i].ID || string(imported[i].Payload) != string(rs[i].Payload) || !imported[i].Time.Equal(rs[i].Time) {
			t.Fatalf("round trip changed event %d", i)
		}
	}
	if _, _, err := session.Import(ctx, r.store, bytes.NewReader(buf.Bytes()), "", nil); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("import over an existing session: %v", err)
	}
	copyID, _, err := session.Import(ctx, r.store, bytes.NewReader(buf.Bytes()), "copy-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	copied, _ := r.store.ReadStream(ctx, events.SessionStream(copyID), events.Forward, 0, 0)
	a, _ := json.Marshal(fold(copied))
	b, _ := json.Marshal(fold(rs))
	if string(a) != string(b) || copied[1].CausationID != copied[0].ID || copied[0].ID == rs[0].ID {
		t.Fatal("import under a new id did not keep history and causation")
	}
	bad := strings.Replace(buf.String(), `"type":"ToolCallStarted"`, `"type":"FromTheFuture"`, 1)
	if _, _, err := session.Import(ctx, r.store, strings.NewReader(bad), "copy-2", nil); err == nil || !strings.Contains(err.Error(), "line ") {
		t.Fatalf("bad import: %v", err)
	}
	if rs2, _ := r.store.ReadStream(ctx, events.SessionStream("copy-2"), events.Forward, 0, 0); len(rs2) != 0 {
		t.Fatal("a failed import wrote events")
	}
}

// TestReplayOfARecoveredCrash: a turn cut by a crash and closed by
// recovery replays as recorded.
func TestReplayOfARecoveredCrash(t *testing.T) {
	r := newRig(t, llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "k1", Name: "echo", Args: `{"sleep":5000}`}}}, llmtest.Reply{Content: "resumed fine"})
	r.create(t, "crash")
	ctx := context.Background()
	// Record a turn whose tool is running when the process "dies": stop
	// the actor system mid-tool, leaving the call without a result.
	done := make(chan session.TurnResult, 1)
	go func() { done <- r.mgr.Run(ctx, "crash", "run the slow echo", nil) }()
	waitFor(t, func() bool { return strings.Contains(strings.Join(r.types(t, "crash"), " "), "ToolCallStarted") })
	rs, _ := r.store.ReadStream(ctx, events.SessionStream("crash"), events.Forward, 0, 0)
	// Copy the events as they are at the moment of the crash into a fresh
	// stream, then let recovery close them.
	var envs []schema.Envelope
	for _, e := range rs {
		e.Envelope.SessionID = "crash2"
		envs = append(envs, e.Envelope)
	}
	if _, err := r.store.Append(ctx, events.SessionStream("crash2"), events.NoStream, envs...); err != nil {
		t.Fatal(err)
	}
	r.mgr.Stop("crash", "test")
	<-done
	if res := r.mgr.Run(ctx, "crash2", "are you back?", nil); res.Err != nil || res.Answer != "resumed fine" {
		t.Fatalf("%+v", res)
	}
	recorded, _ := r.store.ReadStream(ctx, events.SessionStream("crash2"), events.Forward, 0, 0)
	if _, err := replay.Run(ctx, recorded, nil); err != nil {
		t.Fatal(err)
	}
}

// TestResultsInFinishOrderReplayAndProject: results recorded as their
// calls finished (not in call order) are shown in call order by the
// recovery fold and the history projection alike, and replay.
func TestResultsInFinishOrderReplayAndProject(t *testing.T) {
	r := newRig(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "echo", Args: `{"Sleep":400}`}, {ID: "c2", Name: "echo", Args: `{"Sleep":0}`},
			{ID: "c3", Name: "echo", Args: `{"Sleep":150}`}}},
		llmtest.Reply{Content: "done"})
	r.create(t, "s1")
	ctx := context.Background()
	if res := r.mgr.Run(ctx, "s1", "go", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	rs, _ := r.store.ReadStream(ctx, events.SessionStream("s1"), events.Forward, 0, 0)
	var recorded []string
	for _, e := range rs {
		if e.Type == "ToolResultAdded" {
			var p schema.ToolResultAdded
			json.Unmarshal(e.Payload, &p)
			recorded = append(recorded, p.CallID)
		}
	}
	if fmt.Sprint(recorded) != "[c2 c3 c1]" {
		t.Fatalf("results recorded %v, want in the order the calls finished", recorded)
	}
	if _, err := replay.Run(ctx, rs, nil); err != nil {
		t.Fatalf("replay: %v", err)
	}
	pdb, err := projections.OpenDB(filepath.Join(r.dir, "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	run := projections.NewRunner(r.store, zerolog.Nop(), pdb.Projection(history.NewModel()))
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	projected, _ := history.Messages(ctx, pdb.Reader(), "s1")
	var ps []schema.Payload
	for _, e := range rs {
		p, _ := schema.Decode(e.Envelope)
		ps = append(ps, p)
	}
	folded := history.Fold(ps).Full()
	if fmt.Sprint(projected) != fmt.Sprint(folded) {
		t.Fatalf("projection %v\nfold %v", projected, folded)
	}
	var order []string
	for _, m := range folded {
		if m.Role == "tool" {
			order = append(order, m.ToolCallID)
		}
	}
	if fmt.Sprint(order) != "[c1 c2 c3]" {
		t.Fatalf("history holds results %v, want call order", order)
	}
	sent := r.srv.Requests()[1].Body["messages"].([]any)
	if sent[3].(map[string]any)["tool_call_id"] != "c1" || sent[5].(map[string]any)["tool_call_id"] != "c3" {
		t.Fatalf("second request %v", sent)
	}
}

// TestDuplicateCallIDsReplay: the ids made unique are recorded, and the
// replay of the record makes the same ones.
func TestDuplicateCallIDsReplay(t *testing.T) {
	r := newRig(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "echo", Args: `{"x":1}`}, {ID: "call_1", Name: "echo", Args: `{"x":2}`}}},
		llmtest.Reply{Content: "done"})
	r.create(t, "s1")
	ctx := context.Background()
	if res := r.mgr.Run(ctx, "s1", "go", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	rs, _ := r.store.ReadStream(ctx, events.SessionStream("s1"), events.Forward, 0, 0)
	var started []string
	for _, e := range rs {
		if e.Type == "ToolCallStarted" {
			var p schema.ToolCallStarted
			json.Unmarshal(e.Payload, &p)
			started = append(started, p.CallID)
		}
	}
	if fmt.Sprint(started) != "[call_1 call_1_2]" {
		t.Fatalf("calls recorded as %v", started)
	}
	if rep, err := replay.Run(ctx, rs, nil); err != nil || rep.Calls != 2 {
		t.Fatalf("replay: %+v %v", rep, err)
	}
}
