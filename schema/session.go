package schema

// Reasons a session starts, carried by SessionStarted.Reason.
const (
	StartNew         = "new"
	StartCompression = "compression"
	StartFork        = "fork"
	StartSubagent    = "subagent"
	StartImport      = "import"
)

// SessionStarted opens a session stream. A child session (compression,
// fork, subagent) names its parent and carries the history it starts from.
type SessionStarted struct {
	Source          string    `json:"source"`
	Model           string    `json:"model,omitempty"`
	Provider        string    `json:"provider,omitempty"`
	WorkingDir      string    `json:"working_dir,omitempty"`
	ParentSessionID string    `json:"parent_session_id,omitempty"`
	ParentTurnID    string    `json:"parent_turn_id,omitempty"`
	Reason          string    `json:"reason"`
	Goal            string    `json:"goal,omitempty"`
	History         []Message `json:"history,omitempty"`
}

// SystemPromptBuilt records the stable prefix of a session: built once,
// stored, and sent unchanged on every call so provider caches hit.
type SystemPromptBuilt struct {
	Content string `json:"content"`
}

// UserMessageAdded is a message from the person (or the platform on their
// behalf).
type UserMessageAdded struct {
	Content string `json:"content"`
	Source  string `json:"source,omitempty"`
	// Images are the pictures sent with the message (version 2 on; the
	// blobs they name are on disk before the event is appended).
	Images []ImageRef `json:"images,omitempty"`
	// Skills are the skills the person loaded into the message by name
	// (/<skill-name>, a bundle): Content holds their instructions, and
	// these are their uses, counted as skill_view calls are. A build
	// that predates the field reads the message without it.
	Skills []string `json:"skills,omitempty"`
}

// AssistantMessageAdded is one model response that entered history.
type AssistantMessageAdded struct {
	Content      string     `json:"content"`
	Reasoning    string     `json:"reasoning,omitempty"`
	ToolCalls    []ToolCall `json:"tool_calls,omitempty"`
	FinishReason string     `json:"finish_reason,omitempty"`
	Provider     string     `json:"provider,omitempty"`
	Model        string     `json:"model,omitempty"`
	APIMode      string     `json:"api_mode,omitempty"`
	Usage        Usage      `json:"usage"`
	CostUSD      float64    `json:"cost_usd,omitempty"`
	// Calls is the number of HTTP calls the message took when more than
	// one (continuations after an output limit, cut tool calls asked
	// again); 0 means one.
	Calls int `json:"calls,omitempty"`
}

// assistantMessageAddedV1 is the first cut's flat shape: token counts as
// top-level fields, no cache tokens, no cost. Upcast to the current shape.
type assistantMessageAddedV1 struct {
	Content          string     `json:"content"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	FinishReason     string     `json:"finish_reason,omitempty"`
	Model            string     `json:"model,omitempty"`
	PromptTokens     int64      `json:"prompt_tokens"`
	CompletionTokens int64      `json:"completion_tokens"`
}

// ToolCallStarted records that a tool call was dispatched. Version 2
// adds Server.
type ToolCallStarted struct {
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// Server is the MCP server the tool belongs to (empty for a built-in
	// tool and in version 1).
	Server string `json:"server,omitempty"`
}

// ToolResultAdded is the result of one tool call as the model will see it.
type ToolResultAdded struct {
	CallID      string `json:"call_id"`
	Name        string `json:"name"`
	Content     string `json:"content"`
	DurationMS  int64  `json:"duration_ms,omitempty"`
	Error       string `json:"error,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
}

// TurnCompleted closes a turn that reached a final answer or its budget.
type TurnCompleted struct {
	Iterations int    `json:"iterations"`
	Outcome    string `json:"outcome,omitempty"`
}

// TurnInterrupted closes a turn that was cancelled; nothing partial of the
// in-flight call entered history.
type TurnInterrupted struct {
	Reason string `json:"reason"`
}

// TurnSteered is guidance the user sent while the turn ran (/steer): the
// model reads it, as a user message after the step's tool results, from
// its next call on, without the turn being interrupted.
type TurnSteered struct {
	Text string `json:"text"`
}

// ProviderFallback records a switch to a fallback provider mid-turn.
type ProviderFallback struct {
	FromProvider string `json:"from_provider"`
	FromModel    string `json:"from_model"`
	ToProvider   string `json:"to_provider"`
	ToModel      string `json:"to_model"`
	Reason       string `json:"reason"`
}

// BudgetWarning records that the iteration budget crossed its warning mark.
type BudgetWarning struct {
	Used int `json:"used"`
	Max  int `json:"max"`
}

// ContextCompressed records that the session continued in a child session
// holding a compressed history.
type ContextCompressed struct {
	ChildSessionID string `json:"child_session_id"`
	Summary        string `json:"summary"`
	// ReplacedFrom and ReplacedTo are the half-open range of history indexes
	// the summary stands for.
	ReplacedFrom int   `json:"replaced_from"`
	ReplacedTo   int   `json:"replaced_to"`
	TokensBefore int64 `json:"tokens_before"`
	TokensAfter  int64 `json:"tokens_after"`
}

// SubagentSpawned records a delegated child session.
type SubagentSpawned struct {
	ChildSessionID string   `json:"child_session_id"`
	Goal           string   `json:"goal"`
	Toolsets       []string `json:"toolsets,omitempty"`
	Depth          int      `json:"depth"`
}

// SubagentFinished records how a delegated child session ended.
type SubagentFinished struct {
	ChildSessionID string  `json:"child_session_id"`
	Status         string  `json:"status"`
	Summary        string  `json:"summary,omitempty"`
	Usage          Usage   `json:"usage"`
	CostUSD        float64 `json:"cost_usd,omitempty"`
}

// MemoryUpdated records a change to MEMORY.md or USER.md; Entries is the
// whole file's entry list after the change, so the files are a projection.
type MemoryUpdated struct {
	Target  string   `json:"target"`
	Action  string   `json:"action"`
	Entry   string   `json:"entry,omitempty"`
	Entries []string `json:"entries"`
	// Source is empty for a change the memory tool made, and says where
	// the change came from otherwise ("adopted from disk": a file the
	// Python agent or a person wrote, taken into the stream).
	Source string `json:"source,omitempty"`
}

// SessionTitled gives the session a title.
type SessionTitled struct {
	Title string `json:"title"`
}

// SessionEnded closes a session.
type SessionEnded struct {
	Reason string `json:"reason"`
}

// Todo is one item of a session's task list.
type Todo struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	// Status is pending, in_progress, completed or cancelled.
	Status string `json:"status"`
}

// TodoUpdated is the session's whole task list after a change.
type TodoUpdated struct {
	Todos []Todo `json:"todos"`
}

// ApprovalDecided records the decision on a dangerous command.
type ApprovalDecided struct {
	Command string `json:"command"`
	// Pattern is the description of the rule that flagged the command.
	Pattern string `json:"pattern"`
	// Decision is once, session, always or deny.
	Decision string `json:"decision"`
	// By is who decided: user, yolo, allowlist, session, timeout or
	// hardline (never allowed).
	By string `json:"by"`
}

// HookRan records one run of a shell hook (hooks: in config.yaml) and
// what came of it. A hook never fails a turn: a hook that could not run,
// timed out or answered nonsense is recorded here and otherwise ignored.
type HookRan struct {
	// Event is the hook event (pre_tool_call, transform_tool_result,
	// on_session_end, ...: see adapters/hooks).
	Event   string `json:"event"`
	Command string `json:"command"`
	// Tool is the tool of a pre_tool_call or post_tool_call hook.
	Tool string `json:"tool,omitempty"`
	// Decision is none (it ran and had nothing to say), block (it
	// stopped a tool call), context (it added context to the turn),
	// transform (it replaced what the model or the user reads) or failed.
	Decision string `json:"decision"`
	// Reason is the block message, the context added, the replacement
	// a transform made, or why it failed.
	Reason string `json:"reason,omitempty"`
	// Original is what a transform (transform_tool_result,
	// transform_terminal_output, transform_llm_output) replaced.
	Original   string `json:"original,omitempty"`
	ExitCode   int    `json:"exit_code"`
	DurationMS int64  `json:"duration_ms"`
}

// AuxiliaryCallCompleted records a model call made for the session but
// outside its conversation: the compression summary, the memory flush
// before it, condensing long session_search results. Costs count it.
type AuxiliaryCallCompleted struct {
	// Purpose is compression, memory_flush or search_summary.
	Purpose  string  `json:"purpose"`
	Model    string  `json:"model"`
	Provider string  `json:"provider,omitempty"`
	Usage    Usage   `json:"usage"`
	CostUSD  float64 `json:"cost_usd"`
}

// Event type names, as EventType returns them and envelopes carry them:
// compare with these, not with literals, so a renamed event breaks the build.
const (
	TypeAuxiliaryCallCompleted = "AuxiliaryCallCompleted"
	TypeTodoUpdated            = "TodoUpdated"
	TypeApprovalDecided        = "ApprovalDecided"
	TypeHookRan                = "HookRan"
	TypeSessionStarted         = "SessionStarted"
	TypeSystemPromptBuilt      = "SystemPromptBuilt"
	TypeUserMessageAdded       = "UserMessageAdded"
	TypeAssistantMessageAdded  = "AssistantMessageAdded"
	TypeToolCallStarted        = "ToolCallStarted"
	TypeToolResultAdded        = "ToolResultAdded"
	TypeTurnCompleted          = "TurnCompleted"
	TypeTurnInterrupted        = "TurnInterrupted"
	TypeTurnSteered            = "TurnSteered"
	TypeProviderFallback       = "ProviderFallback"
	TypeBudgetWarning          = "BudgetWarning"
	TypeContextCompressed      = "ContextCompressed"
	TypeSubagentSpawned        = "SubagentSpawned"
	TypeSubagentFinished       = "SubagentFinished"
	TypeMemoryUpdated          = "MemoryUpdated"
	TypeSkillWritten           = "SkillWritten"
	TypeSessionTitled          = "SessionTitled"
	TypeSessionEnded           = "SessionEnded"
)

func (AuxiliaryCallCompleted) EventType() string { return TypeAuxiliaryCallCompleted }
func (TodoUpdated) EventType() string            { return TypeTodoUpdated }
func (ApprovalDecided) EventType() string        { return TypeApprovalDecided }
func (HookRan) EventType() string                { return TypeHookRan }

func (SessionStarted) EventType() string        { return TypeSessionStarted }
func (SystemPromptBuilt) EventType() string     { return TypeSystemPromptBuilt }
func (UserMessageAdded) EventType() string      { return TypeUserMessageAdded }
func (AssistantMessageAdded) EventType() string { return TypeAssistantMessageAdded }
func (ToolCallStarted) EventType() string       { return TypeToolCallStarted }
func (ToolResultAdded) EventType() string       { return TypeToolResultAdded }
func (TurnCompleted) EventType() string         { return TypeTurnCompleted }
func (TurnInterrupted) EventType() string       { return TypeTurnInterrupted }
func (TurnSteered) EventType() string           { return TypeTurnSteered }
func (ProviderFallback) EventType() string      { return TypeProviderFallback }
func (BudgetWarning) EventType() string         { return TypeBudgetWarning }
func (ContextCompressed) EventType() string     { return TypeContextCompressed }
func (SubagentSpawned) EventType() string       { return TypeSubagentSpawned }
func (SubagentFinished) EventType() string      { return TypeSubagentFinished }
func (MemoryUpdated) EventType() string         { return TypeMemoryUpdated }
func (SkillWritten) EventType() string          { return TypeSkillWritten }
func (SessionTitled) EventType() string         { return TypeSessionTitled }
func (SessionEnded) EventType() string          { return TypeSessionEnded }
