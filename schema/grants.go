package schema

// Standing approvals ("always" answers) live in a stream of their own, not
// in config.yaml: a model that can write a file cannot grant itself one,
// and every grant says who gave it and where. Whatever reads the stream
// folds it in order: a pattern is granted after its last ApprovalGranted
// unless an ApprovalRevoked follows.

// ApprovalGranted lets commands flagged with Pattern run without a
// question, in every session, until it is revoked.
type ApprovalGranted struct {
	// Pattern is what is allowed: the ID of a judge rule (judge.Rule.ID,
	// such as "recursive-delete"; grants recorded before rules had IDs hold
	// its description, which judge.Key resolves), or an MCP tool name
	// (mcp_<server>_<tool>, or mcp_<server>_* for a server).
	Pattern string `json:"pattern"`
	// By is who granted it: user (answering a question in a session) or
	// cli (hermes approvals add).
	By string `json:"by"`
	// Session is the session whose question was answered.
	Session string `json:"session,omitempty"`
	// Command is the command the person was asked about.
	Command string `json:"command,omitempty"`
}

// ApprovalRevoked takes a grant back: commands flagged with Pattern are
// asked about again.
type ApprovalRevoked struct {
	Pattern string `json:"pattern"`
	// By is who revoked it (cli).
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
}

// Event type names, as EventType returns them and envelopes carry them:
// compare with these, not with literals, so a renamed event breaks the build.
const (
	TypeApprovalGranted = "ApprovalGranted"
	TypeApprovalRevoked = "ApprovalRevoked"
)

func (ApprovalGranted) EventType() string { return TypeApprovalGranted }
func (ApprovalRevoked) EventType() string { return TypeApprovalRevoked }
