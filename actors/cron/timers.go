package cron

import (
	"container/heap"
	"time"
)

// timers is the scheduler's one timer: a min-heap of jobs by the time they
// are next due, with an index so that a job's entry moves or goes in
// O(log n) when its stream changes. One goroutine-free entry per job.
type timers struct {
	h  timerHeap
	at map[string]*timerItem
}

type timerItem struct {
	id    string
	when  time.Time
	index int
}

type timerHeap []*timerItem

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].when.Equal(h[j].when) {
		return h[i].when.Before(h[j].when)
	}
	return h[i].id < h[j].id
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	it := x.(*timerItem)
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *timerHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.index = -1
	return it
}

func newTimers() *timers { return &timers{at: map[string]*timerItem{}} }

// set makes job id due at when.
func (t *timers) set(id string, when time.Time) {
	if it, ok := t.at[id]; ok {
		it.when = when
		heap.Fix(&t.h, it.index)
		return
	}
	it := &timerItem{id: id, when: when}
	heap.Push(&t.h, it)
	t.at[id] = it
}

// drop forgets job id.
func (t *timers) drop(id string) {
	if it, ok := t.at[id]; ok {
		heap.Remove(&t.h, it.index)
		delete(t.at, id)
	}
}

// next is the earliest time a job is due (zero: none).
func (t *timers) next() time.Time {
	if len(t.h) == 0 {
		return time.Time{}
	}
	return t.h[0].when
}

// popDue removes and returns the jobs due at now, earliest first.
func (t *timers) popDue(now time.Time) []string {
	var ids []string
	for len(t.h) > 0 && !t.h[0].when.After(now) {
		it := heap.Pop(&t.h).(*timerItem)
		delete(t.at, it.id)
		ids = append(ids, it.id)
	}
	return ids
}

func (t *timers) len() int { return len(t.h) }
