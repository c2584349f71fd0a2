package hooks

// The hook events, as the Python Hermes Agent (0.19) names them.
const (
	// PreToolCall runs before a tool call; it can block the call.
	PreToolCall = "pre_tool_call"
	// PostToolCall runs after a tool call, with its result (observes).
	PostToolCall = "post_tool_call"
	// TransformTerminalOutput can replace the output of a terminal
	// command before the model reads it ({"output": "..."}).
	TransformTerminalOutput = "transform_terminal_output"
	// TransformToolResult can replace any tool's result before the model
	// reads it ({"result": "..."}); it runs after post_tool_call.
	TransformToolResult = "transform_tool_result"
	// TransformLLMOutput can replace a turn's final answer
	// ({"response_text": "..."}).
	TransformLLMOutput = "transform_llm_output"
	// PreLLMCall runs once per turn before its first model call; it can
	// add context to the turn's user message ({"context": "..."}).
	PreLLMCall = "pre_llm_call"
	// PostLLMCall runs once per turn that produced an answer (observes).
	PostLLMCall = "post_llm_call"
	// PreVerify is the verification gate of a coding turn about to stop.
	PreVerify = "pre_verify"
	// PreAPIRequest, PostAPIRequest and APIRequestError run around every
	// request to the model's API (observe).
	PreAPIRequest   = "pre_api_request"
	PostAPIRequest  = "post_api_request"
	APIRequestError = "api_request_error"
	// OnSessionStart runs on a new session's first turn, OnSessionEnd at
	// the end of every turn (as the Python agent does), OnSessionFinalize
	// when the session is left (the chat exits, /new), OnSessionReset when
	// /new starts another one.
	OnSessionStart    = "on_session_start"
	OnSessionEnd      = "on_session_end"
	OnSessionFinalize = "on_session_finalize"
	OnSessionReset    = "on_session_reset"
	// SubagentStart and SubagentStop run around a delegated subagent.
	SubagentStart = "subagent_start"
	SubagentStop  = "subagent_stop"
	// PreGatewayDispatch runs before the gateway dispatches a message.
	PreGatewayDispatch = "pre_gateway_dispatch"
	// PreApprovalRequest and PostApprovalResponse run around a dangerous
	// command's approval question (observe).
	PreApprovalRequest   = "pre_approval_request"
	PostApprovalResponse = "post_approval_response"
	// The kanban task events of the Python agent's task board.
	KanbanTaskClaimed   = "kanban_task_claimed"
	KanbanTaskCompleted = "kanban_task_completed"
	KanbanTaskBlocked   = "kanban_task_blocked"
)

// Events lists every hook event, in the order `hermes hooks list` shows
// them.
var Events = []string{
	PreToolCall, PostToolCall, TransformTerminalOutput, TransformToolResult, TransformLLMOutput,
	PreLLMCall, PostLLMCall, PreVerify, PreAPIRequest, PostAPIRequest, APIRequestError,
	OnSessionStart, OnSessionEnd, OnSessionFinalize, OnSessionReset, SubagentStart, SubagentStop,
	PreGatewayDispatch, PreApprovalRequest, PostApprovalResponse,
	KanbanTaskClaimed, KanbanTaskCompleted, KanbanTaskBlocked,
}

// notFired says why this build never fires an event a config.yaml shared
// with the Python agent may name: its hooks are accepted and warned about.
var notFired = map[string]string{
	PreVerify:           "this build has no verification-stop loop",
	KanbanTaskClaimed:   "this build has no kanban board",
	KanbanTaskCompleted: "this build has no kanban board",
	KanbanTaskBlocked:   "this build has no kanban board",
}

// Fired reports whether this build fires event, and if not, why.
func Fired(event string) (bool, string) {
	why, no := notFired[event]
	return !no, why
}

// reserved are keys under hooks: that are not events (the Python agent's
// output_spill budgets): skipped silently.
var reserved = map[string]bool{"output_spill": true}

// isEvent reports whether e is a hook event.
func isEvent(e string) bool {
	for _, k := range Events {
		if k == e {
			return true
		}
	}
	return false
}

// toolEvent reports whether event is about one tool call (a matcher
// applies).
func toolEvent(event string) bool { return event == PreToolCall || event == PostToolCall }
