package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// benchEvent is a typical small event: a user message of about 200 bytes.
func benchEvent() schema.Envelope {
	return schema.MustEnvelope(schema.Meta{SessionID: "0b7e5c1a-6d7b-4f8e-9a43-3c2d1e0f9a8b", TurnID: "turn-1"},
		schema.UserMessageAdded{Content: "Please look at the failing test in events/embedded and tell me why the subscription stalls after a reconnect; keep the fix small.", Source: "cli"})
}

// BenchmarkRawFsync is the physical baseline: the same bytes as one event,
// written to a plain file with fsync after each write.
func BenchmarkRawFsync(b *testing.B) {
	e := benchEvent()
	buf, _ := json.Marshal(e)
	f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.ResetTimer()
	for b.Loop() {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func benchStore(b *testing.B) *Store {
	s, err := Open(filepath.Join(b.TempDir(), "events.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkAppend1Writer appends one event per durable append, one writer.
func BenchmarkAppend1Writer(b *testing.B) {
	s := benchStore(b)
	e := benchEvent()
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Append(ctx, "session-bench", events.Any, e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAppend64Writers has 64 goroutines append one event each per
// call, to 64 streams; group commit lets them share fsyncs.
func BenchmarkAppend64Writers(b *testing.B) {
	s := benchStore(b)
	e := benchEvent()
	ctx := context.Background()
	const writers = 64
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range writers {
		n := b.N / writers
		if w < b.N%writers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := fmt.Sprintf("session-w%d", w)
			for range n {
				if _, err := s.Append(ctx, stream, events.Any, e); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAppendBatch100 appends batches of 100 events; b.N counts events.
func BenchmarkAppendBatch100(b *testing.B) {
	s := benchStore(b)
	batch := make([]schema.Envelope, 100)
	for i := range batch {
		batch[i] = benchEvent()
	}
	ctx := context.Background()
	b.ResetTimer()
	for done := 0; done < b.N; done += len(batch) {
		if _, err := s.Append(ctx, "session-batch", events.Any, batch...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkChecksum compares the whole-record checksum every append now
// computes with the payload-only one it replaced (the baseline), for the
// typical event of the append benchmarks.
func BenchmarkChecksum(b *testing.B) {
	e := benchEvent()
	r := rec{pos: 123456, stream: "session-" + e.SessionID, rev: 42, id: e.ID, typ: e.Type, version: int64(e.Version),
		sid: e.SessionID, ns: e.Time.UnixNano(), turn: e.TurnID, payload: e.Payload}
	b.Run("payload", func(b *testing.B) {
		for b.Loop() {
			payloadSum(r.payload)
		}
	})
	b.Run("record", func(b *testing.B) {
		var s summer
		for b.Loop() {
			s.sum(&r)
		}
	})
}
