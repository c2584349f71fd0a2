package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hermes-go/hermes/adapters/sandbox"
)

// benchPage is a page of a usual size for the benchmarks: a heading, a
// form, a table of 50 rows and 30 links.
func benchPage(b *testing.B) *httptest.Server { return benchPageT(b) }

func benchPageT(b testing.TB) *httptest.Server {
	var body strings.Builder
	body.WriteString(`<!doctype html><html><head><title>Catalogue</title><style>body{font:14px sans-serif}</style></head><body><h1>Catalogue</h1>`)
	body.WriteString(`<form><label for="q">Search</label><input id="q" name="q"><select name="s"><option>All</option><option>New</option></select><button>Go</button></form><table>`)
	for i := range 50 {
		fmt.Fprintf(&body, "<tr><td>Item %d</td><td>%d.00</td><td><button>Add %d</button></td></tr>", i, i*3, i)
	}
	body.WriteString("</table><ul>")
	for i := range 30 {
		fmt.Fprintf(&body, `<li><a href="/p/%d">Product page %d</a></li>`, i, i)
	}
	body.WriteString("</ul></body></html>")
	page := body.String()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(w, page)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkNavigateSnapshot is browser_navigate as the model calls it on a
// local page: the navigation, the wait for the load, and the compact
// snapshot with refs it returns. chromium-load-ms beside it is the
// browser's own figure for the same loads (the page's navigation timing,
// from the request's start to the end of its load event), so the
// difference is what the tool adds.
//
// direct is Chromium as this process's child; sandboxed is Chromium in the
// session's sandbox, as Hermes runs it by default.
func BenchmarkNavigateSnapshot(b *testing.B) {
	srv := benchPage(b)
	for _, mode := range []string{"direct", "sandboxed"} {
		b.Run(mode, func(b *testing.B) {
			cfg := Config{}
			if mode == "sandboxed" {
				home := b.TempDir()
				cfg.Sandboxes = sandboxes(b, sandbox.Defaults(home, filepath.Join(home, ".hermes")))
			}
			h := newHarness(b, cfg)
			nav := h.tools["browser_navigate"]
			ctx := h.ctx()
			args, _ := json.Marshal(map[string]string{"url": srv.URL + "/"})
			if _, err := nav.Run(ctx, args); err != nil { // the browser starts here
				b.Fatal(err)
			}
			s := h.b.sessionOf(ctx)
			var loadMS float64
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				a, _ := json.Marshal(map[string]string{"url": fmt.Sprintf("%s/?i=%d", srv.URL, i)})
				out, err := nav.Run(ctx, a)
				if err != nil || !strings.Contains(out, "[ref=e1]") {
					b.Fatalf("%v\n%s", err, out)
				}
				b.StopTimer()
				loadMS += pageLoadMS(b, s.l.ctx)
				b.StartTimer()
			}
			b.ReportMetric(loadMS/float64(b.N), "chromium-load-ms")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "tool-ms")
			u := h.b.Usage()
			b.ReportMetric(float64(u.RSS)/(1<<20), "browser-rss-MiB")
			b.ReportMetric(float64(u.PSS)/(1<<20), "browser-pss-MiB")
			b.ReportMetric(float64(u.Procs), "browser-procs")
		})
	}
}

// BenchmarkChromiumLoad is the floor: the same page loaded by chromedp
// alone (Navigate waits for the load event), with no snapshot and no
// tool around it.
func BenchmarkChromiumLoad(b *testing.B) {
	srv := benchPage(b)
	h := newHarness(b, Config{})
	if _, err := h.try("browser_navigate", map[string]string{"url": srv.URL + "/"}); err != nil {
		b.Fatal(err)
	}
	ctx := h.b.sessionOf(h.ctx()).l.ctx
	var loadMS float64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/?i=%d", srv.URL, i))); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		loadMS += pageLoadMS(b, ctx)
		b.StartTimer()
	}
	b.ReportMetric(loadMS/float64(b.N), "chromium-load-ms")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "navigate-ms")
}

// pageLoadMS is the current page's load time by its own navigation
// timing: from the start of the request to the end of the load event.
func pageLoadMS(b *testing.B, ctx context.Context) float64 {
	ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime; })()`))
	if err != nil {
		b.Fatal(err)
	}
	return ms
}

// BenchmarkBrowserMemory opens one browser per session, three sessions,
// each on the local page, and reports the memory per open browser: the
// resident and proportional sets of every process of every browser,
// divided by three. direct is Chromium as this process's child; sandboxed
// is Chromium in the session's sandbox (Hermes's default), where it runs
// without its zygote and GPU processes.
func BenchmarkBrowserMemory(b *testing.B) {
	srv := benchPage(b)
	for _, mode := range []string{"direct", "sandboxed"} {
		b.Run(mode, func(b *testing.B) {
			cfg := Config{}
			if mode == "sandboxed" {
				home := b.TempDir()
				cfg.Sandboxes = sandboxes(b, sandbox.Defaults(home, filepath.Join(home, ".hermes")))
			}
			for b.Loop() {
				h := newHarness(b, cfg)
				const n = 3
				var hs []*harness
				for i := range n {
					x := &harness{t: b, b: h.b, tools: h.tools, env: newEnv(fmt.Sprintf("mem-%d", i))}
					hs = append(hs, x)
					if _, err := x.try("browser_navigate", map[string]string{"url": srv.URL + "/"}); err != nil {
						b.Fatal(err)
					}
				}
				u := h.b.Usage()
				b.ReportMetric(float64(u.RSS)/n/(1<<20), "rss-MiB/browser")
				b.ReportMetric(float64(u.PSS)/n/(1<<20), "pss-MiB/browser")
				b.ReportMetric(float64(u.Procs)/n, "procs/browser")
				for _, x := range hs {
					x.env.Values.Close()
				}
			}
		})
	}
}
