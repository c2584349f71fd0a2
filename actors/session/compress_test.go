package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/compress"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/adapters/tools/memory"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

type compRig struct {
	srv   *llmtest.Server
	store *embedded.Store
	mgr   *session.Manager
	dir   string
	win   *compress.Windows
}

func newCompRig(t *testing.T, cfg compress.Config, window int, script ...llmtest.Reply) *compRig {
	return newCompRigWith(t, cfg, window, nil, script...)
}

// newCompRigWith lets a test change the session deps (tools, flush).
func newCompRigWith(t *testing.T, cfg compress.Config, window int, mod func(*session.Deps, events.Store, string), script ...llmtest.Reply) *compRig {
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(script...)
	sys := actors.NewSystem(zerolog.Nop())
	win := &compress.Windows{Path: filepath.Join(dir, "context_limits.json"), Override: window}
	ladder := &model.Ladder{Endpoints: []*model.Endpoint{{Name: "openai", Build: func(string) model.Provider {
		return openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"})
	}}}, Backoff: model.Backoff{Retries: -1}}
	deps := session.Deps{Store: store, Log: zerolog.Nop(), Provider: ladder, Tools: tool.NewTools(echoTool{}),
		Exec: tool.DirectExecutor{}, Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 10, Compression: cfg, Windows: win}
	if mod != nil {
		mod(&deps, store, dir)
	}
	mgr := session.NewManager(sys, deps)
	t.Cleanup(func() { mgr.Shutdown(); sys.Shutdown(); srv.Close(); store.Close() })
	return &compRig{srv: srv, store: store, mgr: mgr, dir: dir, win: win}
}

// seedHistory gives session id n earlier turns of ~2,000 characters each.
func (r *compRig) seedHistory(t *testing.T, id string, n int) {
	if err := session.Create(context.Background(), r.store, id, session.Start{Source: "cli", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
		t.Fatal(err)
	}
	var evs []schema.Envelope
	for i := range n {
		meta := schema.Meta{SessionID: id, TurnID: fmt.Sprint("t", i)}
		evs = append(evs,
			schema.MustEnvelope(meta, schema.UserMessageAdded{Content: fmt.Sprintf("step %d: edit src/file%d.go %s", i, i, strings.Repeat("words ", 150))}),
			schema.MustEnvelope(meta, schema.AssistantMessageAdded{Content: fmt.Sprintf("done step %d %s", i, strings.Repeat("reply ", 150))}),
			schema.MustEnvelope(meta, schema.TurnCompleted{Iterations: 1}))
	}
	if _, err := r.store.Append(context.Background(), events.SessionStream(id), events.Exact(1), evs...); err != nil {
		t.Fatal(err)
	}
}

func (r *compRig) stream(t *testing.T, id string) []events.Recorded {
	rs, err := r.store.ReadStream(context.Background(), events.SessionStream(id), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestOverflowThenCompression(t *testing.T) {
	overflow := llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"This model's maximum context length is 16000 tokens. However, your messages resulted in 17000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`}
	r := newCompRig(t, compress.Config{}, 0, overflow, llmtest.Reply{Content: "## Goal\nedit the files\n## Files touched\nsrc/file1.go"}, llmtest.Reply{Content: "answer after compression"})
	r.seedHistory(t, "big", 20)
	res := r.mgr.Run(context.Background(), "big", "and the last step?", nil)
	if res.Err != nil || res.Answer != "answer after compression" {
		t.Fatalf("%+v", res)
	}
	if res.SessionID == "big" || res.SessionID == "" {
		t.Fatalf("the conversation did not move to a child session: %q", res.SessionID)
	}
	parent := r.stream(t, "big")
	if parent[len(parent)-1].Type != "ContextCompressed" {
		t.Fatalf("parent ends with %s", parent[len(parent)-1].Type)
	}
	child := r.stream(t, res.SessionID)
	var started schema.SessionStarted
	json.Unmarshal(child[0].Payload, &started)
	if started.Reason != schema.StartCompression || started.ParentSessionID != "big" || !strings.HasPrefix(started.History[3].Content, compress.SummaryPrefix) &&
		!strings.Contains(started.History[3].Content, "## Goal") {
		t.Fatalf("child start %+v", started)
	}
	last := started.History[len(started.History)-1]
	if last.Role != "user" || last.Content != "and the last step?" {
		t.Fatalf("the latest user message is not kept: %+v", last)
	}
	types := ""
	for _, e := range child {
		types += e.Type + " "
	}
	if types != "SessionStarted SystemPromptBuilt AssistantMessageAdded TurnCompleted " {
		t.Fatalf("child events %s", types)
	}
	// The window stepped down to the limit named in the error, on disk.
	b, _ := os.ReadFile(filepath.Join(r.dir, "context_limits.json"))
	if !strings.Contains(string(b), `"gpt-4o-mini": 16000`) {
		t.Fatalf("limits file %s", b)
	}
	// The summariser saw the middle, redacted, with today's date.
	sumReq := string(r.srv.Requests()[1].Raw)
	if !strings.Contains(sumReq, "## Pending user requests") || !strings.Contains(sumReq, "step 4: edit src/file4.go") {
		t.Fatalf("summariser request %.300s", sumReq)
	}
	// Resuming the parent continues in the child.
	r.srv.Add(llmtest.Reply{Content: "still in the child"})
	mgr2 := r.mgr
	res2 := mgr2.Run(context.Background(), "big", "again", nil)
	if res2.SessionID != res.SessionID {
		t.Fatalf("resume went to %s, want %s", res2.SessionID, res.SessionID)
	}
}

func TestThreeCompressionsRebuildTheSame(t *testing.T) {
	var script []llmtest.Reply
	for i := range 3 {
		script = append(script, llmtest.Reply{Content: fmt.Sprintf("## Goal\nsummary number %d", i+1)}, llmtest.Reply{Content: fmt.Sprintf("answer %d", i+1)})
	}
	r := newCompRig(t, compress.Config{}, 0, script...)
	r.seedHistory(t, "root", 20)
	ctx := context.Background()
	id := "root"
	chain := []string{"root"}
	for i := range 3 {
		next, err := r.mgr.Compress(ctx, "root", "")
		if err != nil {
			t.Fatalf("compression %d: %v", i, err)
		}
		chain = append(chain, next)
		id = next
		if res := r.mgr.Run(ctx, "root", fmt.Sprintf("question %d %s", i, strings.Repeat("more ", 300)), nil); res.Err != nil {
			t.Fatal(res.Err)
		}
		// Add bulk so the next compression has a middle.
		r.seedMore(t, "root", id, 12)
	}
	pdb, err := projections.OpenDB(filepath.Join(r.dir, "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	run := projections.NewRunner(r.store, zerolog.Nop(), pdb.Projection(sessions.NewModel()), pdb.Projection(history.NewModel()))
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	live := dumpAll(t, pdb)
	if err := run.Rebuild(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if dumpAll(t, pdb) != live {
		t.Fatal("rebuilt projections differ after three compressions")
	}
	for i := 1; i < len(chain); i++ {
		s, ok, _ := sessions.Get(ctx, pdb.Reader(), chain[i])
		if !ok || s.Parent != chain[i-1] || s.Reason != schema.StartCompression {
			t.Fatalf("lineage link %d: %+v", i, s)
		}
	}
	msgs, _ := history.Messages(ctx, pdb.Reader(), chain[3])
	if !strings.Contains(msgs[4].Content+msgs[3].Content, "summary number 3") {
		t.Fatalf("last child does not carry the last summary: %+v", msgs[:5])
	}
	if !strings.Contains(string(r.srv.Requests()[4].Raw), "summary number 2") {
		t.Fatal("the third summary was not asked to update the second")
	}
}

func (r *compRig) seedMore(t *testing.T, actorKey, id string, n int) {
	rs := r.stream(t, id)
	var evs []schema.Envelope
	for i := range n {
		meta := schema.Meta{SessionID: id, TurnID: fmt.Sprint("x", i)}
		evs = append(evs,
			schema.MustEnvelope(meta, schema.UserMessageAdded{Content: "more " + strings.Repeat("w ", 300)}),
			schema.MustEnvelope(meta, schema.AssistantMessageAdded{Content: "ok " + strings.Repeat("r ", 300)}),
			schema.MustEnvelope(meta, schema.TurnCompleted{Iterations: 1}))
	}
	// Written behind the actor's back: make it re-read the stream.
	if _, err := r.store.Append(context.Background(), events.SessionStream(id), events.Exact(rs[len(rs)-1].Revision), evs...); err != nil {
		t.Fatal(err)
	}
	r.mgr.Restart(actorKey)
}

func dumpAll(t *testing.T, pdb *projections.DB) string {
	ss, _ := sessions.Dump(context.Background(), pdb.Reader())
	hs, _ := history.Dump(context.Background(), pdb.Reader())
	b, _ := json.Marshal(map[string]any{"s": ss, "h": hs})
	return string(b)
}

func TestSummariserFailureFallsBackAndCoolsDown(t *testing.T) {
	r := newCompRig(t, compress.Config{}, 0, llmtest.Reply{Status: 500, ErrorBody: `{"error":{"message":"boom"}}`})
	r.seedHistory(t, "s", 20)
	next, err := r.mgr.Compress(context.Background(), "s", "")
	if err != nil {
		t.Fatal(err)
	}
	child := r.stream(t, next)
	var started schema.SessionStarted
	json.Unmarshal(child[0].Payload, &started)
	joined := ""
	for _, m := range started.History {
		joined += m.Content
	}
	if !strings.Contains(joined, "(Automatic summary: the summariser was unavailable.)") || !strings.Contains(joined, "src/file3.go") {
		t.Fatalf("no deterministic summary: %.500s", joined)
	}
	calls := len(r.srv.Requests())
	r.seedMore(t, "s", next, 12)
	if _, err := r.mgr.Compress(context.Background(), "s", ""); err != nil {
		t.Fatal(err)
	}
	if len(r.srv.Requests()) != calls {
		t.Fatal("the summariser was called again during its cool-down")
	}
}

func TestAutomaticCompressionBeforeTheCall(t *testing.T) {
	r := newCompRig(t, compress.Config{Enabled: true}, 4000, llmtest.Reply{Content: "## Goal\nsum"}, llmtest.Reply{Content: "fits now"})
	r.seedHistory(t, "auto", 20) // about 13,000 estimated tokens > 0.5 × 4,000
	res := r.mgr.Run(context.Background(), "auto", "next?", nil)
	if res.Err != nil || res.Answer != "fits now" || res.SessionID == "auto" {
		t.Fatalf("%+v", res)
	}
	sent := r.srv.Requests()[1].Body["messages"].([]any)
	if len(sent) > 12 {
		t.Fatalf("the call after compression still sent %d messages", len(sent))
	}
	_ = time.Second
}

// TestAuxiliaryCallsAreCosted: the memory flush and the summary before a
// compression are model calls too; each is recorded with its usage and
// cost, the costs projection counts them, and so does the session's cap.
func TestAuxiliaryCallsAreCosted(t *testing.T) {
	r := newCompRigWith(t, compress.Config{Enabled: true}, 4000, func(d *session.Deps, store events.Store, dir string) {
		d.Tools = tool.NewTools(echoTool{}, memory.New(store, filepath.Join(dir, "memories")))
		d.FlushMemory = true
	},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "m1", Name: "memory", Args: `{"action":"add","target":"memory","content":"The user edits files under src/."}`}},
			Prompt: 3000, Completion: 20},
		llmtest.Reply{Content: "## Goal\nedit the files", Prompt: 2500, Completion: 100},
		llmtest.Reply{Content: "fits now", Prompt: 500, Completion: 10})
	r.seedHistory(t, "aux", 20)
	ctx := context.Background()
	res := r.mgr.Run(ctx, "aux", "next?", nil)
	if res.Err != nil || res.Answer != "fits now" {
		t.Fatalf("%+v", res)
	}
	prices := model.DefaultPrices()
	var aux []schema.AuxiliaryCallCompleted
	parent := r.stream(t, "aux")
	for _, e := range parent {
		if e.Type == "AuxiliaryCallCompleted" {
			p, _ := schema.Decode(e.Envelope)
			aux = append(aux, p.(schema.AuxiliaryCallCompleted))
		}
	}
	if len(aux) != 2 || aux[0].Purpose != "memory_flush" || aux[0].Usage.PromptTokens != 3000 || aux[0].Usage.CompletionTokens != 20 ||
		aux[1].Purpose != "compression" || aux[1].Usage.PromptTokens != 2500 || aux[1].Usage.CompletionTokens != 100 ||
		aux[0].CostUSD != prices.Cost("gpt-4o-mini", aux[0].Usage) || aux[0].CostUSD <= 0 || aux[1].Provider != "openai" {
		t.Fatalf("auxiliary calls recorded: %+v", aux)
	}
	if last := parent[len(parent)-1].Type; last != "ContextCompressed" {
		t.Fatalf("parent ends with %s", last)
	}
	// the flush did save the memory
	mem, _ := r.store.ReadStream(ctx, "memory", events.Forward, 0, 0)
	if len(mem) != 1 || !strings.Contains(string(mem[0].Payload), "edits files under src") {
		t.Fatalf("memory stream %d events", len(mem))
	}
	// costs, rebuilt from the events: three calls, all their tokens
	db, err := projections.OpenDB(filepath.Join(r.dir, "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := projections.NewRunner(r.store, zerolog.Nop(), db.Projection(costs.NewModel())).Rebuild(ctx, ""); err != nil {
		t.Fatal(err)
	}
	all, err := costs.Totals(ctx, db.Reader(), "model", "", model.DefaultPrices().CallCost)
	var rows []costs.Row // the seeded history's answers carry no model
	for _, r := range all {
		if r.Key == "gpt-4o-mini" {
			rows = append(rows, r)
		}
	}
	if err != nil || len(rows) != 1 {
		t.Fatalf("totals %+v %v", all, err)
	}
	want := aux[0].CostUSD + aux[1].CostUSD + prices.Cost("gpt-4o-mini", schema.Usage{PromptTokens: 500, CompletionTokens: 10})
	if got := rows[0]; got.Calls != 3 || got.Usage.PromptTokens != 6000 || got.Usage.CompletionTokens != 130 || fmt.Sprintf("%.9f", got.Cost) != fmt.Sprintf("%.9f", want) {
		t.Fatalf("costs %+v, want 3 calls, 6000/130 tokens, $%.6f", got, want)
	}
}

// TestTwoWeakCompressionsStopAutomaticCompression: when compressing saves
// under 10% twice in a row (the protected head is most of the prompt),
// automatic compression stops for the session instead of thrashing.
func TestTwoWeakCompressionsStopAutomaticCompression(t *testing.T) {
	r := newCompRig(t, compress.Config{Enabled: true, ProtectLastN: 3}, 2000)
	var summaries, mains atomic.Int32
	r.srv.SetRoute(func(req llmtest.Request) *llmtest.Reply {
		if strings.Contains(string(req.Raw), "You compress the middle of a conversation") {
			summaries.Add(1)
			return &llmtest.Reply{Content: "s"}
		}
		switch mains.Add(1) {
		case 1:
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "e", Name: "echo", Args: `{}`}}}
		default:
			return &llmtest.Reply{Content: "ok"}
		}
	})
	ctx := context.Background()
	if err := session.Create(ctx, r.store, "heavy", session.Start{Source: "cli", Model: "gpt-4o-mini", System: "You are Hermes."}); err != nil {
		t.Fatal(err)
	}
	meta := schema.Meta{SessionID: "heavy", TurnID: "old"}
	big := strings.Repeat("heavy protected context ", 200)
	var evs []schema.Envelope
	for _, p := range []schema.Payload{
		schema.UserMessageAdded{Content: big}, schema.AssistantMessageAdded{Content: big}, schema.UserMessageAdded{Content: big},
		schema.AssistantMessageAdded{Content: "small one"}, schema.TurnCompleted{},
		schema.UserMessageAdded{Content: "small two"}, schema.AssistantMessageAdded{Content: "small three"}, schema.TurnCompleted{},
	} {
		evs = append(evs, schema.MustEnvelope(meta, p))
	}
	if _, err := r.store.Append(ctx, events.SessionStream("heavy"), events.Exact(1), evs...); err != nil {
		t.Fatal(err)
	}
	if res := r.mgr.Run(ctx, "heavy", "go", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	if summaries.Load() != 2 {
		t.Fatalf("%d compressions in the first turn, want 2 weak ones", summaries.Load())
	}
	if res := r.mgr.Run(ctx, "heavy", "again", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	if summaries.Load() != 2 {
		t.Fatalf("automatic compression went on after two weak ones: %d", summaries.Load())
	}
	// /compress still works.
	if _, err := r.mgr.Compress(ctx, "heavy", ""); err != nil {
		t.Fatal(err)
	}
	if summaries.Load() != 3 {
		t.Fatal("/compress did not compress")
	}
}
