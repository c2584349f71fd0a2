package schema

// Memory's review gate: with memory.write_approval on, a change the agent
// asks for is not made but staged on the "memory" stream, and waits for
// the person's decision (/memory approve or reject); an approved change
// is then made as any other, a MemoryUpdated.

// MemoryWriteStaged is a change to memory the agent asked for while the
// review gate was on: not made yet.
type MemoryWriteStaged struct {
	// ID names the staged change in /memory's list.
	ID string `json:"id"`
	// Target, Action, Content and OldText are the memory tool's
	// arguments.
	Target  string `json:"target"`
	Action  string `json:"action"`
	Content string `json:"content,omitempty"`
	OldText string `json:"old_text,omitempty"`
}

// MemoryWriteDecided is the person's decision on a staged change: an
// approved one is followed by the MemoryUpdated that makes it, unless it
// no longer applies (Error says why).
type MemoryWriteDecided struct {
	ID       string `json:"id"`
	Approved bool   `json:"approved"`
	// By says where the decision was made (cli, telegram, ...).
	By    string `json:"by,omitempty"`
	Error string `json:"error,omitempty"`
}

// Event types of the review gate.
const (
	TypeMemoryWriteStaged  = "MemoryWriteStaged"
	TypeMemoryWriteDecided = "MemoryWriteDecided"
)

// EventType names the payload's type.
func (MemoryWriteStaged) EventType() string { return TypeMemoryWriteStaged }

// EventType names the payload's type.
func (MemoryWriteDecided) EventType() string { return TypeMemoryWriteDecided }
