package schema

// The background review: after a busy turn a child session (Reason
// StartReview, ParentSessionID and ParentTurnID naming the turn) reads the
// conversation and may write memory entries and create or patch skills.
// Its conversation is its own session stream; the session it reviewed
// records ReviewSpawned; the "reviews" stream lists every review from its
// ReviewStarted to its ReviewFinished (and ReviewUndone, when the person
// took back what it learned).

// StartReview is the SessionStarted.Reason of a background review.
const StartReview = "review"

// Kinds of ReviewChange.
const (
	ReviewChangeSkill  = "skill"
	ReviewChangeMemory = "memory"
)

// Statuses of ReviewFinished.
const (
	// ReviewCompleted: the review's model answered (it may have learned
	// nothing).
	ReviewCompleted = "completed"
	// ReviewBudget: the review used its steps or its cost cap.
	ReviewBudget = "budget_exhausted"
	// ReviewFailed: the review's model or store failed.
	ReviewFailed = "failed"
	// ReviewAbandoned: the review was cut short (the process ended, or
	// was killed, during it) and is not continued.
	ReviewAbandoned = "abandoned"
)

// ReviewSpawned is recorded in the reviewed session's stream: the turn
// just ended was handed to the background review ReviewID (whose own
// session names this one as its parent). Skills and Memory say what it
// was asked to review; the thresholds count from here.
type ReviewSpawned struct {
	ReviewID string `json:"review_id"`
	Skills   bool   `json:"skills,omitempty"`
	Memory   bool   `json:"memory,omitempty"`
}

// ReviewStarted opens a background review on the "reviews" stream.
type ReviewStarted struct {
	// ReviewID is the review's own session.
	ReviewID string `json:"review_id"`
	// SessionID and TurnID are the session and turn reviewed.
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id,omitempty"`
	Skills    bool   `json:"skills,omitempty"`
	Memory    bool   `json:"memory,omitempty"`
	Model     string `json:"model,omitempty"`
}

// ReviewChange is one thing a review wrote: a skill it created, patched,
// edited or archived, or a memory entry it added, replaced or removed
// (Staged names the change when the memory review gate held it).
type ReviewChange struct {
	Kind   string `json:"kind"`
	Action string `json:"action"`
	// Name is the skill's.
	Name string `json:"name,omitempty"`
	// Target, Content and OldText are the memory tool's arguments.
	Target  string `json:"target,omitempty"`
	Content string `json:"content,omitempty"`
	OldText string `json:"old_text,omitempty"`
	// Staged is the MemoryWriteStaged ID of a change awaiting approval.
	Staged string `json:"staged,omitempty"`
}

// ReviewFinished closes a background review: how it ended, the one-line
// note the person is shown, what it changed, and what it cost.
type ReviewFinished struct {
	ReviewID string         `json:"review_id"`
	Status   string         `json:"status"`
	Note     string         `json:"note,omitempty"`
	Changes  []ReviewChange `json:"changes,omitempty"`
	Usage    Usage          `json:"usage"`
	CostUSD  float64        `json:"cost_usd,omitempty"`
	Error    string         `json:"error,omitempty"`
}

// ReviewUndone records that the person took back what a review learned:
// Undone are the changes reverted (as events of their own: a skill
// rolled back or archived, a memory entry removed, a staged write
// rejected), Skipped those left as they were, with why.
type ReviewUndone struct {
	ReviewID string   `json:"review_id"`
	Undone   []string `json:"undone,omitempty"`
	Skipped  []string `json:"skipped,omitempty"`
	By       string   `json:"by,omitempty"`
}

// Event types of the background review.
const (
	TypeReviewSpawned  = "ReviewSpawned"
	TypeReviewStarted  = "ReviewStarted"
	TypeReviewFinished = "ReviewFinished"
	TypeReviewUndone   = "ReviewUndone"
)

// EventType names the payload's type.
func (ReviewSpawned) EventType() string { return TypeReviewSpawned }

// EventType names the payload's type.
func (ReviewStarted) EventType() string { return TypeReviewStarted }

// EventType names the payload's type.
func (ReviewFinished) EventType() string { return TypeReviewFinished }

// EventType names the payload's type.
func (ReviewUndone) EventType() string { return TypeReviewUndone }
