package cron

// The scheduler actor's messages. Each is sent as a pointer; Receive
// switches on the pointer types and logs (message_type) any other.

// evaluate asks the actor to look at jobs again (created, changed, or
// their runs ended elsewhere).
type evaluate struct{ ids []string }

// wake is the timer firing: jobs due now are evaluated.
type wake struct{}

// workDone is a claim or a recovery finishing in its goroutine.
type workDone struct {
	id      string
	claimed bool
	held    bool
}

// hold moves a job's count of runs in flight by delta (a run started or
// ended outside the actor).
type hold struct {
	id    string
	delta int
}

// stopping tells the actor to claim nothing more; it answers true.
type stopping struct{}

// statsReq asks for the actor's Stats.
type statsReq struct{}
