package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/events"
)

// testDeferSync: appends that defer their sync (events.DeferSync) obey the
// same contract as the others — expected revisions, order, readable as
// soon as Append returns — when they interleave with durable appends from
// concurrent writers.
func testDeferSync(t *testing.T, s events.Store) {
	ctx := ctxT(t)
	const writers, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := fmt.Sprint("lazy-", w)
			exp := events.NoStream
			for i := range each {
				actx := ctx
				if (w+i)%2 == 0 {
					actx = events.DeferSync(ctx)
				}
				res, err := s.Append(actx, stream, exp, Event("s", fmt.Sprint(i)))
				if err != nil {
					errs <- fmt.Errorf("%s append %d: %w", stream, i, err)
					return
				}
				rs, err := s.ReadStream(ctx, stream, events.Backward, events.End, 1)
				if err != nil || len(rs) != 1 || rs[0].Revision != uint64(i) {
					errs <- fmt.Errorf("%s: append %d not readable at once: %v %v", stream, i, rs, err)
					return
				}
				exp = events.Exact(res.NextRevision)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := range writers {
		rs, err := s.ReadStream(ctx, fmt.Sprint("lazy-", w), events.Forward, 0, 0)
		if err != nil || len(rs) != each {
			t.Fatalf("lazy-%d: %d events (%v), want %d", w, len(rs), err, each)
		}
		for i, r := range rs {
			if want := fmt.Sprintf(`{"content":"%d"}`, i); string(r.Payload) != want {
				t.Fatalf("lazy-%d@%d holds %s, want %s", w, i, r.Payload, want)
			}
		}
	}
}
