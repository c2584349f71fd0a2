package dashboard_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/adapters/gateway/apiserver/dashboard"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
)

// BenchmarkSessionPage5000 renders the page of a session of 5,000 events
// (conversation and timeline) through the handler, and, as the baseline
// in the same run, the same events as the JSON the API's
// /api/sessions/{id}/events answers (read and encode only). It reports
// the page's size plain and gzipped, and the time ratio to the baseline.
func BenchmarkSessionPage5000(b *testing.B) {
	dir := b.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	id := seedBig(b, store, 5000)
	h, err := dashboard.New(dashboard.Options{Key: testKey, Store: store, Read: gatewaytest.OpenProjections(b, store, dir), Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	page := func(gz bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/dashboard/s/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+testKey)
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("page: %d %s", rec.Code, rec.Body.String())
		}
		return rec
	}
	plain := page(false).Body.Len()
	zipped := page(true)
	if zipped.Header().Get("Content-Encoding") != "gzip" {
		b.Fatal("the page was not gzipped")
	}
	zr, err := gzip.NewReader(zipped.Body)
	if err != nil {
		b.Fatal(err)
	}
	if n, _ := io.Copy(io.Discard, zr); int(n) != plain {
		b.Fatalf("gzipped page unpacks to %d bytes, plain is %d", n, plain)
	}
	gzBytes := page(true).Body.Len()
	ctx := context.Background()
	var events5000 int
	var baseNs float64
	b.Run("json-baseline", func(b *testing.B) {
		for b.Loop() {
			evs, err := store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(evs); err != nil {
				b.Fatal(err)
			}
			events5000 = len(evs)
		}
		baseNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("page", func(b *testing.B) {
		for b.Loop() {
			page(true)
		}
		perPage := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(float64(plain), "html-bytes")
		b.ReportMetric(float64(gzBytes), "gzip-bytes")
		b.ReportMetric(float64(events5000), "events")
		if baseNs > 0 {
			b.ReportMetric(perPage/baseNs, "x-json-baseline")
		}
	})
}
