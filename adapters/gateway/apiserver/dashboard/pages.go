package dashboard

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// pages holds the parsed templates (one set per page, each with the
// layout) and the highlighter.
type pages struct {
	sets map[string]*template.Template
	md   *markdown
	css  []byte // the highlighter's styles
}

func newPages() (*pages, error) {
	p := &pages{sets: map[string]*template.Template{}, md: newMarkdown()}
	p.css = []byte(p.md.css())
	funcs := template.FuncMap{
		"md":     p.md.render,
		"json":   prettyJSON,
		"clip":   clip,
		"money":  func(f float64) string { return fmt.Sprintf("$%.4f", f) },
		"when":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
		"ms":     func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) },
		"short":  func(id string) string { return clip(id, 13) },
		"add":    func(a, b int) int { return a + b },
		"pct":    func(part, whole float64) float64 { return pct(part, whole) },
		"pfx":    func() string { return Prefix },
		"clock":  func(t time.Time) string { return t.UTC().Format("15:04:05") },
		"grid":   gridPath,
		"x":      scaleX,
		"w":      scaleW,
		"laneY":  func(l int) int { return 4 + l*18 },
		"svgH":   func(lanes int) int { return 8 + (lanes+1)*18 + 14 },
		"hl":     highlight,
		"barW":   func(v, max float64) float64 { return math.Round(pct(v, max)*2.6*10) / 10 },
		"addf":   func(a, b float64) float64 { return a + b },
		"mul":    func(a, b int) int { return a * b },
		"chartH": func(n int) int { return n*28 + 6 },
		"frac":   func(f, of float64) float64 { return f * of },
		"lanes": func(n int) []int {
			out := make([]int, n)
			for i := range out {
				out[i] = i + 1
			}
			return out
		},
		"indent":  func(d int) int { return d * 24 },
		"percent": func(part, whole float64) string { return fmt.Sprintf("%.0f%%", pct(part, whole)) },
	}
	entries, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := strings.TrimSuffix(strings.TrimPrefix(e, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", e)
		if err != nil {
			return nil, fmt.Errorf("dashboard template %s: %w", name, err)
		}
		p.sets[name] = t
	}
	return p, nil
}

func pct(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	v := part / whole * 100
	if v > 100 {
		v = 100
	}
	if v < 0 {
		v = 0
	}
	return v
}

// The timeline's SVG is 600 units wide, with 90 for the lane labels; the
// time axis runs over the 500 after them, the same for every turn.
const (
	svgLeft  = 90.0
	svgWidth = 500.0
)

func scaleX(d, span time.Duration) float64 {
	if span <= 0 {
		return svgLeft
	}
	return math.Round((svgLeft+float64(d)/float64(span)*svgWidth)*10) / 10
}

// gridPath is the path of the axis' ticks drawn across a turn's timeline
// of height h (one path for all, so a long session stays light).
func gridPath(a Axis, h int) string {
	var b strings.Builder
	for _, t := range a.Ticks {
		fmt.Fprintf(&b, "M%s 0V%d", strconv.FormatFloat(scaleX(t.At, a.End), 'f', -1, 64), h)
	}
	return b.String()
}

func scaleW(start, end, span time.Duration) float64 {
	w := scaleX(end, span) - scaleX(start, span)
	if w < 2 {
		w = 2 // an instant still shows
	}
	return w
}

// highlight escapes a search snippet and turns its highlight markers into
// <mark>.
func highlight(s string) template.HTML {
	esc := template.HTMLEscapeString(s)
	esc = strings.ReplaceAll(esc, "\x1b[43m", "<mark>")
	esc = strings.ReplaceAll(esc, "\x1b[0m", "</mark>")
	return template.HTML(esc) // #nosec: escaped above; only our markers become tags
}

// render writes a page (or, for a name with a "#", one block of it).
func (p *pages) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	page, block, _ := strings.Cut(name, "#")
	t := p.sets[page]
	if t == nil {
		http.Error(w, "no page "+page, http.StatusInternalServerError)
		return
	}
	if block == "" {
		block = "layout"
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, block, data); err != nil {
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Add("Vary", "Accept-Encoding")
	if b.Len() > 8<<10 && acceptsGzip(r) {
		// A long session's page is mostly repeated markup: gzip takes it
		// to a fraction.
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(status)
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		_, _ = zw.Write(b.Bytes())
		_ = zw.Close()
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func acceptsGzip(r *http.Request) bool {
	if r == nil {
		return false
	}
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") && strings.ReplaceAll(q, " ", "") != "q=0" {
			return true
		}
	}
	return false
}
