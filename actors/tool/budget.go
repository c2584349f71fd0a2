package tool

import "sync/atomic"

// Budget is the iteration budget: each model call consumes one. A subagent
// tree shares one Budget, so it is safe for concurrent use.
type Budget struct {
	max  int64
	used atomic.Int64
}

// NewBudget returns a budget of max model calls.
func NewBudget(max int) *Budget { return &Budget{max: int64(max)} }

// Take consumes one call; false when none is left.
func (b *Budget) Take() bool {
	for {
		u := b.used.Load()
		if u >= b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+1) {
			return true
		}
	}
}

// Refund gives one call back (a call that only ran code, say).
func (b *Budget) Refund() {
	for {
		u := b.used.Load()
		if u == 0 || b.used.CompareAndSwap(u, u-1) {
			return
		}
	}
}

// Used is how many calls were consumed.
func (b *Budget) Used() int { return int(b.used.Load()) }

// Max is the budget's size.
func (b *Budget) Max() int { return int(b.max) }

// Remaining is how many calls are left.
func (b *Budget) Remaining() int { return int(b.max - b.used.Load()) }
