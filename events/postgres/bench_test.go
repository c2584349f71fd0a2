package postgres

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// The benchmarks run the same work against the embedded store (the
// baseline) and PostgreSQL, in one run on one machine:
//
//	go test -run '^$' -bench . -benchtime 2s ./events/postgres/

func benchEvent() schema.Envelope {
	return schema.MustEnvelope(schema.Meta{SessionID: "0b7e5c1a-6d7b-4f8e-9a43-3c2d1e0f9a8b", TurnID: "turn-1"},
		schema.UserMessageAdded{Content: "Please look at the failing test in events/embedded and tell me why the subscription stalls after a reconnect; keep the fix small.", Source: "cli"})
}

type benchStore struct {
	name string
	open func(b *testing.B) events.Store
}

func stores() []benchStore {
	return []benchStore{
		{"embedded", func(b *testing.B) events.Store {
			s, err := embedded.Open(filepath.Join(b.TempDir(), "events.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
		{"postgres", func(b *testing.B) events.Store { return openTemp(b) }},
	}
}

// BenchmarkAppend1Writer: one writer, one event per append.
func BenchmarkAppend1Writer(b *testing.B) {
	for _, st := range stores() {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			e := benchEvent()
			ctx := context.Background()
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Append(ctx, "session-bench", events.Any, e); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkAppend64Writers: 64 writers at once, each on its own stream,
// one event per append.
func BenchmarkAppend64Writers(b *testing.B) {
	for _, st := range stores() {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			e := benchEvent()
			ctx := context.Background()
			var n atomic.Int64
			b.SetParallelism(max(1, 64/ncpu()))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				stream := fmt.Sprintf("session-w%d", n.Add(1))
				for pb.Next() {
					if _, err := s.Append(ctx, stream, events.Any, e); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkAppendBatch100: one writer, 100 events per append.
func BenchmarkAppendBatch100(b *testing.B) {
	for _, st := range stores() {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			batch := make([]schema.Envelope, 100)
			for i := range batch {
				batch[i] = benchEvent()
			}
			ctx := context.Background()
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Append(ctx, "session-bench", events.Any, batch...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(100*b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkReadAll100k: a catch-up read of a 100,000-event log in pages
// of 1000, as a projection rebuilding from scratch does.
func BenchmarkReadAll100k(b *testing.B) {
	const total = 100_000
	for _, st := range stores() {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			ctx := context.Background()
			batch := make([]schema.Envelope, 1000)
			for i := range total / len(batch) {
				for j := range batch {
					batch[j] = benchEvent()
				}
				if _, err := s.Append(ctx, fmt.Sprintf("session-%d", i%50), events.Any, batch...); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				n, after := 0, uint64(0)
				for {
					rs, err := s.ReadAll(ctx, after, 1000)
					if err != nil {
						b.Fatal(err)
					}
					if len(rs) == 0 {
						break
					}
					n += len(rs)
					after = rs[len(rs)-1].Position
				}
				if n != total {
					b.Fatalf("read %d events, want %d", n, total)
				}
			}
			b.ReportMetric(float64(total*b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

func ncpu() int { return runtime.GOMAXPROCS(0) }
