// Package search is the full-text history: a Bleve index under
// $HERMES_HOME/search.bleve of every user, assistant and tool message,
// fed from the global log with its checkpoint stored inside the index (in
// the same batch as the documents), and rebuildable at any time.
package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/camelcase"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/token/shingle"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/regexp"
	unicodetok "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"
	bsearch "github.com/blevesearch/bleve/v2/search"
	_ "github.com/blevesearch/bleve/v2/search/highlight/highlighter/ansi" // registers the ansi highlighter
	"github.com/blevesearch/bleve/v2/search/query"
	bolt "go.etcd.io/bbolt"

	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/schema"
)

// Doc is one indexed message.
type Doc struct {
	Session string    `json:"session"`
	Root    string    `json:"root"`
	Role    string    `json:"role"`
	Source  string    `json:"source"`
	Model   string    `json:"model"`
	Tool    string    `json:"tool"`
	Time    time.Time `json:"time"`
	Month   string    `json:"month"`
	Day     string    `json:"day"`
	Text    string    `json:"text"`
	Code    string    `json:"code"`
	// Pairs is the text again, indexed as pairs of adjacent words: a
	// phrase first finds the few messages holding its pairs, and only
	// those have their word positions compared.
	Pairs string `json:"pairs"`
	// Facet holds "field=value" for each faceted field: one doc-value
	// field read per matching message instead of one per facet (facet
	// counting over every match is most of a broad query's time).
	Facet []string `json:"facet"`
}

// facetFields are counted for every search.
var facetFields = []string{"source", "model", "month", "role"}

const (
	codeAnalyzer = "hermes_code"
	textAnalyzer = "hermes_en"
	pairAnalyzer = "hermes_pairs"
)

// newMapping: English analysis for text; for code, the same text split
// on anything but letters and digits (snake_case, paths, dotted names)
// and at camelCase humps, lowercased.
func newMapping() (mapping.IndexMapping, error) {
	m := bleve.NewIndexMapping()
	if err := m.AddCustomTokenizer("hermes_code_tokens", map[string]interface{}{"type": regexp.Name, "regexp": `[\p{L}\p{N}]+`}); err != nil {
		return nil, err
	}
	if err := m.AddCustomAnalyzer(codeAnalyzer, map[string]interface{}{"type": custom.Name, "tokenizer": "hermes_code_tokens",
		"token_filters": []string{camelcase.Name, lowercase.Name}}); err != nil {
		return nil, err
	}
	// English without the stop-word filter: "the build" is a phrase of
	// two words, as SQLite FTS5 (and a reader) takes it; with stop words
	// dropped it would collapse to "build" and match every message that
	// merely contains that word.
	if err := m.AddCustomAnalyzer(textAnalyzer, map[string]interface{}{"type": custom.Name, "tokenizer": unicodetok.Name,
		"token_filters": []string{en.PossessiveName, lowercase.Name, porter.Name}}); err != nil {
		return nil, err
	}
	if err := m.AddCustomTokenFilter("hermes_bigrams", map[string]interface{}{"type": shingle.Name,
		"min": 2.0, "max": 2.0, "output_original": false, "separator": " ", "filler": ""}); err != nil {
		return nil, err
	}
	if err := m.AddCustomAnalyzer(pairAnalyzer, map[string]interface{}{"type": custom.Name, "tokenizer": unicodetok.Name,
		"token_filters": []string{en.PossessiveName, lowercase.Name, porter.Name, "hermes_bigrams"}}); err != nil {
		return nil, err
	}
	doc := bleve.NewDocumentMapping()
	// Keyword fields filter (source:telegram) and some are returned with
	// hits; none needs term vectors, and none is read per match.
	kw := func(store bool) *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Store, f.IncludeInAll, f.IncludeTermVectors, f.DocValues = store, false, false, false
		return f
	}
	for _, f := range []string{"root", "role", "source", "model"} {
		doc.AddFieldMappingsAt(f, kw(true))
	}
	// Sessions are counted (a facet) for the header of hermes search.
	sf := kw(true)
	sf.DocValues = true
	doc.AddFieldMappingsAt("session", sf)
	for _, f := range []string{"tool", "month", "day"} {
		doc.AddFieldMappingsAt(f, kw(false))
	}
	facet := kw(false)
	facet.DocValues = true
	doc.AddFieldMappingsAt("facet", facet)
	// No _all field: queries name text (the default field) and code; and
	// no doc values where nothing sorts or facets on a field.
	t := bleve.NewTextFieldMapping()
	t.Analyzer = textAnalyzer
	t.Store, t.IncludeTermVectors, t.IncludeInAll, t.DocValues = true, true, false, false
	doc.AddFieldMappingsAt("text", t)
	c := bleve.NewTextFieldMapping()
	c.Analyzer = codeAnalyzer
	c.Store, c.IncludeTermVectors, c.IncludeInAll, c.DocValues = false, false, false, false
	doc.AddFieldMappingsAt("code", c)
	pm := bleve.NewTextFieldMapping()
	pm.Analyzer = pairAnalyzer
	pm.Store, pm.IncludeTermVectors, pm.IncludeInAll, pm.DocValues = false, true, false, false
	doc.AddFieldMappingsAt("pairs", pm)
	tm := bleve.NewDateTimeFieldMapping()
	// Time is only returned with hits. A datetime index costs sixteen
	// terms per message (a third of all indexing time); --since filters
	// on the day keyword instead.
	tm.IncludeInAll, tm.DocValues, tm.Index = false, false, false
	doc.AddFieldMappingsAt("time", tm)
	m.DefaultMapping = doc
	m.DefaultAnalyzer = textAnalyzer
	m.DefaultField = "text"
	m.IndexDynamic, m.StoreDynamic, m.DocValuesDynamic = false, false, false
	return m, nil
}

// Index is the search projection and its queries.
type Index struct {
	path string
	idx  bleve.Index
	// per-session facts learned from SessionStarted, also kept inside the
	// index so that a restart knows them
	meta map[string]sessionMeta
	// Replaced, when set, says why Open replaced the index on disk with an
	// empty one.
	Replaced error
}

type sessionMeta struct {
	Root, Source, Model string
}

// mappingVersion changes whenever the mapping does; an index made with
// another one is derived data in an old shape, so Open deletes it and the
// runner fills the new one from the log.
const mappingVersion = "5"

// ErrBusy is returned by Open while another process holds the index:
// its file lock admits one process at a time, so callers wait and retry.
var ErrBusy = errors.New("the search index is in use by another hermes process")

// lockWait is how long one Open waits for the index's file lock.
const lockWait = "100ms"

// Open opens (creating if needed) the index at path. It waits briefly for
// the file lock and returns an error wrapping ErrBusy if another process
// keeps holding it. An index in an older shape, or one that cannot be read,
// is derived data: it is replaced by an empty one (Replaced says why) for
// the runner to fill from the log.
func Open(path string) (*Index, error) {
	// Opens are one at a time across processes: two that found no index
	// would otherwise both make one in the same directory, and one's
	// segments would be removed under the other's feet.
	unlock, ok, err := tryLock(path + ".lock")
	if err != nil {
		return nil, fmt.Errorf("open search index %s: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("open search index %s: %w", path, ErrBusy)
	}
	defer unlock()
	var replaced error
	idx, version, err := openExisting(path)
	if err == nil && version != mappingVersion {
		idx.Close()
		replaced = fmt.Errorf("made with mapping %q, this build uses %s", version, mappingVersion)
		err = bleve.ErrorIndexPathDoesNotExist
	}
	if errors.Is(err, bleve.ErrorIndexMetaMissing) {
		// Another process is creating the index, or one died doing so.
		if fi, serr := os.Stat(path); serr == nil && time.Since(fi.ModTime()) < 10*time.Second {
			return nil, fmt.Errorf("open search index %s: %w", path, ErrBusy)
		}
		if onlyStore(path) {
			replaced = errors.New("left half-made")
			err = bleve.ErrorIndexPathDoesNotExist
		}
	}
	if err != nil && !errors.Is(err, bleve.ErrorIndexPathDoesNotExist) && !errors.Is(err, bolt.ErrTimeout) &&
		!errors.Is(err, fs.ErrPermission) && isIndexDir(path) {
		replaced = fmt.Errorf("unreadable: %w", err)
		err = bleve.ErrorIndexPathDoesNotExist
	}
	if errors.Is(err, bleve.ErrorIndexPathDoesNotExist) {
		if replaced != nil {
			if rerr := os.RemoveAll(path); rerr != nil {
				return nil, fmt.Errorf("replace search index %s (%v): %w", path, replaced, rerr)
			}
		}
		idx, err = newIndex(path)
		if errors.Is(err, bleve.ErrorIndexPathExists) {
			// another process created it meanwhile
			return nil, fmt.Errorf("open search index %s: %w", path, ErrBusy)
		}
	}
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("open search index %s: %w", path, ErrBusy)
	}
	if err != nil {
		return nil, fmt.Errorf("open search index %s: %w", path, err)
	}
	return &Index{path: path, idx: idx, meta: map[string]sessionMeta{}, Replaced: replaced}, nil
}

// DamagedError is a panic of Bleve on an index's files (a segment flipped
// or cut short on disk), turned into an error: the index is derived data,
// to be replaced and rebuilt from the events.
type DamagedError struct{ Panic any }

func (e *DamagedError) Error() string {
	return fmt.Sprintf("the search index is damaged (%v): rebuild it with hermes search --rebuild", e.Panic)
}

// openExisting opens the index at path and reads its mapping version.
// Scorch loads every segment as it opens and panics on some damage (a
// segment's offsets pointing past its end): that becomes a DamagedError.
// What the panic left open (the root.bolt handle) is not reachable to
// close; Open removes the directory, so it only holds a deleted file.
func openExisting(path string) (idx bleve.Index, version string, err error) {
	defer func() {
		if p := recover(); p != nil {
			idx, version, err = nil, "", &DamagedError{Panic: p}
		}
	}()
	idx, err = bleve.OpenUsing(path, map[string]interface{}{"bolt_timeout": lockWait, "unsafe_batch": false})
	if err != nil {
		return nil, "", err
	}
	v, err := idx.GetInternal([]byte("mapping_version"))
	if err != nil {
		return idx, "", nil // unreadable: replaced like an old shape
	}
	return idx, string(v), nil
}

// onlyStore tells a directory holding nothing but what Bleve starts an
// index with.
func onlyStore(path string) bool {
	entries, err := os.ReadDir(path)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Name() != "store" {
			return false
		}
	}
	return true
}

// isIndexDir tells a directory Bleve made (and that may be deleted) from
// anything else.
func isIndexDir(path string) bool {
	_, err := os.Stat(filepath.Join(path, "index_meta.json"))
	return err == nil
}

// newIndex makes a scorch index at path. Its batches wait until they are
// on disk: scorch's Close does not write what is still in memory, so
// unsafe batches could lose a new index's mapping when a short-lived
// process (one `hermes search`) closes it. (A scorch directory cannot be
// built elsewhere and renamed into place: it no longer opens.)
func newIndex(path string) (bleve.Index, error) {
	m, err := newMapping()
	if err != nil {
		return nil, err
	}
	idx, err := bleve.NewUsing(path, m, bleve.Config.DefaultIndexType, bleve.Config.DefaultKVStore,
		map[string]interface{}{"unsafe_batch": false, "bolt_timeout": lockWait})
	if err != nil {
		return nil, err
	}
	if err := idx.SetInternal([]byte("mapping_version"), []byte(mappingVersion)); err != nil {
		idx.Close()
		return nil, err
	}
	return idx, nil
}

// codeTokens keeps only the words of text that hold code: snake_case,
// camelCase, paths and dotted names. Prose is already in the text field;
// indexing it twice would only cost time.
func codeTokens(text string) string {
	var b strings.Builder
	for _, w := range strings.Fields(text) {
		if strings.ContainsAny(w, "_./\\:") || hasInnerUpper(w) {
			b.WriteString(w)
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func hasInnerUpper(w string) bool {
	for i, r := range w {
		if i > 0 && r >= 'A' && r <= 'Z' {
			return true
		}
	}
	return false
}

// Close closes the index.
func (x *Index) Close() error { return x.idx.Close() }

// Name implements projections.Projection.
func (x *Index) Name() string { return "search" }

// PayloadTypes implements projections.Selective.
func (x *Index) PayloadTypes() []string {
	return []string{schema.TypeSessionStarted, schema.TypeUserMessageAdded, schema.TypeAssistantMessageAdded, schema.TypeToolResultAdded}
}

// Checkpoint implements projections.Projection.
func (x *Index) Checkpoint(context.Context) (uint64, error) {
	b, err := x.idx.GetInternal([]byte("checkpoint"))
	if err != nil || len(b) == 0 {
		return 0, err
	}
	return strconv.ParseUint(string(b), 10, 64)
}

func (x *Index) sessionMeta(id string) sessionMeta {
	if m, ok := x.meta[id]; ok {
		return m
	}
	var m sessionMeta
	if b, err := x.idx.GetInternal([]byte("session/" + id)); err == nil && len(b) > 0 {
		json.Unmarshal(b, &m)
	}
	x.meta[id] = m
	return m
}

// Apply implements projections.Projection. Documents are indexed first
// (in parallel segments when there are many), then session facts and the
// checkpoint in one batch: a crash in between re-indexes the same ids.
func (x *Index) Apply(ctx context.Context, batch []projections.Event) error {
	cp, err := x.Checkpoint(ctx)
	if err != nil {
		return err
	}
	var docs []pendingDoc
	internal := x.idx.NewBatch()
	flush := func() error {
		if err := x.indexDocs(docs, internal); err != nil {
			return err
		}
		docs = docs[:0]
		internal.Reset()
		return nil
	}
	for _, ev := range batch {
		if ev.Position <= cp {
			continue
		}
		sid := ev.SessionID
		if ev.IsTombstone() {
			// documents still pending must be searchable to be deleted
			if err := flush(); err != nil {
				return err
			}
			if err := x.deleteSession(sid); err != nil {
				return err
			}
			continue
		}
		m := x.sessionMeta(sid)
		doc := Doc{Session: sid, Root: m.Root, Source: m.Source, Model: m.Model, Time: ev.Time,
			Month: ev.Time.UTC().Format("2006-01"), Day: ev.Time.UTC().Format(time.DateOnly)}
		if doc.Root == "" {
			doc.Root = sid
		}
		switch e := ev.Payload.(type) {
		case schema.SessionStarted:
			root := sid
			if e.ParentSessionID != "" {
				root = x.sessionMeta(e.ParentSessionID).Root
				if root == "" {
					root = e.ParentSessionID
				}
			}
			m = sessionMeta{Root: root, Source: e.Source, Model: e.Model}
			x.meta[sid] = m
			mb, _ := json.Marshal(m)
			internal.SetInternal([]byte("session/"+sid), mb)
			continue
		case schema.UserMessageAdded:
			doc.Role, doc.Text = "user", e.Content
		case schema.AssistantMessageAdded:
			doc.Role, doc.Text = "assistant", strings.TrimSpace(e.Content)
			if e.Model != "" {
				doc.Model = e.Model
			}
			for _, tc := range e.ToolCalls {
				doc.Text += "\n" + tc.Function.Name + " " + tc.Function.Arguments
			}
		case schema.ToolResultAdded:
			doc.Role, doc.Tool, doc.Text = "tool", e.Name, e.Content
		default:
			continue
		}
		if strings.TrimSpace(doc.Text) == "" {
			continue
		}
		doc.Code = codeTokens(doc.Text)
		doc.Pairs = doc.Text
		doc.Facet = []string{"source=" + doc.Source, "model=" + doc.Model, "month=" + doc.Month, "role=" + doc.Role}
		docs = append(docs, pendingDoc{id: sid + "/" + strconv.FormatUint(ev.Revision, 10), doc: doc})
	}
	internal.SetInternal([]byte("checkpoint"), []byte(strconv.FormatUint(batch[len(batch)-1].Position, 10)))
	return flush()
}

type pendingDoc struct {
	id  string
	doc Doc
}

// parallelFrom is the number of documents from which a batch is split
// into one segment per core: building a segment is single-threaded.
const parallelFrom = 1024

// indexDocs indexes docs, then internal's operations (session facts, the
// checkpoint). Few documents go in one batch with them; many are split
// into concurrent batches (one segment each), and internal follows once
// they are all on disk.
func (x *Index) indexDocs(docs []pendingDoc, internal *bleve.Batch) error {
	if len(docs) < parallelFrom {
		for _, d := range docs {
			if err := internal.Index(d.id, d.doc); err != nil {
				return err
			}
		}
		return x.idx.Batch(internal)
	}
	parts := min(runtime.GOMAXPROCS(0), len(docs)/(parallelFrom/2))
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*len(docs)/parts, (p+1)*len(docs)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := x.idx.NewBatch()
			for _, d := range docs[lo:hi] {
				if err := b.Index(d.id, d.doc); err != nil {
					errs[p] = err
					return
				}
			}
			errs[p] = x.idx.Batch(b)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return x.idx.Batch(internal)
}

// deleteSession removes every document of an erased session.
func (x *Index) deleteSession(sid string) error {
	b := x.idx.NewBatch()
	q := bleve.NewTermQuery(sid)
	q.SetField("session")
	for {
		req := bleve.NewSearchRequestOptions(q, 1000, 0, false)
		res, err := x.idx.Search(req)
		if err != nil {
			return err
		}
		if len(res.Hits) == 0 {
			break
		}
		for _, h := range res.Hits {
			b.Delete(h.ID)
		}
		if err := x.idx.Batch(b); err != nil {
			return err
		}
		b.Reset()
	}
	b.DeleteInternal([]byte("session/" + sid))
	delete(x.meta, sid)
	return x.idx.Batch(b)
}

// Reset implements projections.Projection: the index is deleted and made
// anew.
func (x *Index) Reset(context.Context) error {
	if err := closeDamaged(x.idx); err != nil {
		var d *DamagedError
		if !errors.As(err, &d) {
			return err
		}
	}
	if err := os.RemoveAll(x.path); err != nil {
		return err
	}
	idx, err := newIndex(x.path)
	if err != nil {
		return err
	}
	x.idx, x.meta = idx, map[string]sessionMeta{}
	return nil
}

// closeDamaged closes idx; a panic on damaged files becomes an error.
func closeDamaged(idx bleve.Index) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &DamagedError{Panic: p}
		}
	}()
	return idx.Close()
}

// Query is a search.
type Query struct {
	Text   string
	Source string
	Role   string
	Since  time.Time // messages from this day (UTC) on; the time of day is not used
	Until  time.Time // messages up to and including this day (UTC)
	Limit  int
	// CountSessions counts the sessions with a match (Results.Sessions),
	// at the cost of a facet over every matching message.
	CountSessions bool
}

// maxSessionsCounted bounds Results.Sessions.
const maxSessionsCounted = 1 << 20

// Hit is one session's best match.
type Hit struct {
	Session string    `json:"session"`
	Root    string    `json:"root"`
	Role    string    `json:"role"`
	Source  string    `json:"source"`
	Model   string    `json:"model"`
	Time    time.Time `json:"time"`
	Score   float64   `json:"score"`
	Snippet string    `json:"snippet"`
	Matches int       `json:"matches"`
}

// Results are hits grouped by session, with facet counts.
type Results struct {
	Total uint64 `json:"total"`
	// Sessions is the number of sessions with a match (with
	// Query.CountSessions), whatever the limit.
	Sessions int                       `json:"sessions,omitempty"`
	Hits     []Hit                     `json:"hits"`
	Facets   map[string]map[string]int `json:"facets"`
}

// Search runs q: the text is Hermes' search syntax (see parseQuery:
// words all required, OR, "phrases", prefix*, fuzzy~, -not, field:value
// filters) over both the English and the code analysis of every message.
func (x *Index) Search(ctx context.Context, q Query) (res Results, err error) {
	defer func() {
		// A segment that opened but is damaged further in panics here.
		if p := recover(); p != nil {
			res, err = Results{}, &DamagedError{Panic: p}
		}
	}()
	return x.search(ctx, q)
}

func (x *Index) search(ctx context.Context, q Query) (Results, error) {
	if strings.TrimSpace(q.Text) == "" {
		return Results{}, errors.New("empty query")
	}
	if q.Limit <= 0 {
		q.Limit = 10
	}
	main, err := parseQuery(q.Text)
	if err != nil {
		return Results{}, fmt.Errorf("search %q: %w", q.Text, err)
	}
	main = x.withPairs(main)
	must := []query.Query{main}
	for field, v := range map[string]string{"source": q.Source, "role": q.Role} {
		if v != "" {
			t := bleve.NewTermQuery(v)
			t.SetField(field)
			must = append(must, t)
		}
	}
	if !q.Since.IsZero() || !q.Until.IsZero() {
		if !q.Since.IsZero() && !q.Until.IsZero() && q.Until.Before(q.Since) {
			return Results{}, fmt.Errorf("until %s is before since %s", q.Until.Format(time.DateOnly), q.Since.Format(time.DateOnly))
		}
		var from, to string // "" leaves that end open
		if !q.Since.IsZero() {
			from = q.Since.UTC().Format(time.DateOnly)
		}
		if !q.Until.IsZero() {
			to = q.Until.UTC().Format(time.DateOnly)
		}
		inclusive := true
		r := bleve.NewTermRangeInclusiveQuery(from, to, &inclusive, &inclusive)
		r.SetField("day")
		must = append(must, r)
	}
	filter := bleve.NewConjunctionQuery(must...)
	req := withDetails(bleve.NewSearchRequestOptions(filter, q.Limit*5, 0, false))
	req.AddFacet("facet", bleve.NewFacetRequest("facet", 10_000))
	if q.CountSessions {
		req.AddFacet("sessions", bleve.NewFacetRequest("session", maxSessionsCounted))
	}
	res, err := x.idx.SearchInContext(ctx, req)
	if err != nil {
		return Results{}, fmt.Errorf("search %q: %w", q.Text, err)
	}
	out := Results{Total: res.Total, Facets: map[string]map[string]int{}}
	if f := res.Facets["sessions"]; f != nil && f.Terms != nil {
		out.Sessions = len(f.Terms.Terms())
	}
	for _, f := range facetFields {
		out.Facets[f] = map[string]int{}
	}
	if f := res.Facets["facet"]; f != nil && f.Terms != nil {
		for _, t := range f.Terms.Terms() {
			field, value, ok := strings.Cut(t.Term, "=")
			if m := out.Facets[field]; ok && m != nil && value != "" {
				m[value] = t.Count
			}
		}
	}
	bySession := map[string]int{}
	for _, h := range res.Hits {
		sid, _ := h.Fields["session"].(string)
		if i, ok := bySession[sid]; ok {
			out.Hits[i].Matches++
			continue
		}
		bySession[sid] = len(out.Hits)
		out.Hits = append(out.Hits, hitOf(h))
	}
	// Sessions with many matching messages can fill the first page. Then
	// the grouping is done again over pages of session ids only, in an
	// order with ties broken by id (pages must continue each other even if
	// a background merge renumbers documents in between), until there are
	// Limit sessions; the details of their best messages are fetched last.
	if len(out.Hits) < q.Limit && uint64(len(res.Hits)) < res.Total {
		first := map[string]Hit{}
		for _, h := range res.Hits {
			first[h.ID] = hitOf(h)
		}
		out.Hits, bySession = nil, map[string]int{}
		best := map[string]int{} // message id -> its session's place in out.Hits
		scanned, size := 0, q.Limit*5
		for len(out.Hits) < q.Limit && uint64(scanned) < res.Total && scanned < maxScan {
			size = min(size*4, maxScan-scanned)
			req := bleve.NewSearchRequestOptions(filter, size, scanned, false)
			req.SortBy([]string{"-_score", "_id"})
			req.Fields = []string{"session"}
			page, err := x.idx.SearchInContext(ctx, req)
			if err != nil {
				return Results{}, fmt.Errorf("search %q: %w", q.Text, err)
			}
			if len(page.Hits) == 0 {
				break
			}
			for _, h := range page.Hits {
				sid, _ := h.Fields["session"].(string)
				if i, ok := bySession[sid]; ok {
					out.Hits[i].Matches++
					continue
				}
				bySession[sid] = len(out.Hits)
				hit := Hit{Session: sid, Score: h.Score, Matches: 1}
				if d, ok := first[h.ID]; ok {
					hit = d
				} else if len(out.Hits) < q.Limit {
					best[h.ID] = len(out.Hits)
				}
				out.Hits = append(out.Hits, hit)
			}
			scanned += len(page.Hits)
		}
		if len(best) > 0 {
			ids := make([]string, 0, len(best))
			for id := range best {
				ids = append(ids, id)
			}
			req := withDetails(bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(filter, bleve.NewDocIDQuery(ids)), len(ids), 0, false))
			details, err := x.idx.SearchInContext(ctx, req)
			if err != nil {
				return Results{}, fmt.Errorf("search %q: %w", q.Text, err)
			}
			for _, h := range details.Hits {
				if i, ok := best[h.ID]; ok {
					hit := hitOf(h)
					hit.Score, hit.Matches = out.Hits[i].Score, out.Hits[i].Matches
					out.Hits[i] = hit
				}
			}
		}
	}
	// A message found through its code words (payments in
	// payments_service) has no highlight from the text field: mark the
	// query's words where they stand inside identifiers.
	var qwords []string
	for i := range out.Hits {
		if out.Hits[i].Snippet != "" && !strings.Contains(out.Hits[i].Snippet, HighlightOn) {
			if qwords == nil {
				qwords = queryWords(q.Text)
			}
			out.Hits[i].Snippet = markWords(out.Hits[i].Snippet, qwords)
		}
	}
	sort.SliceStable(out.Hits, func(i, j int) bool { return out.Hits[i].Score > out.Hits[j].Score })
	if len(out.Hits) > q.Limit {
		out.Hits = out.Hits[:q.Limit]
	}
	return out, nil
}

// HighlightOn and HighlightOff surround the matched words in snippets
// (the terminal colours of Bleve's ansi highlighter).
const (
	HighlightOn  = "\x1b[43m"
	HighlightOff = "\x1b[0m"
)

// maxScan bounds the matching messages a search looks through to find
// Limit distinct sessions.
const maxScan = 20_000

// withDetails asks req for what a Hit shows: its fields and a highlighted
// snippet of the text.
func withDetails(req *bleve.SearchRequest) *bleve.SearchRequest {
	req.Fields = hitFields
	req.Highlight = bleve.NewHighlightWithStyle("ansi")
	req.Highlight.AddField("text")
	return req
}

var hitFields = []string{"session", "root", "role", "source", "model", "time"}

func hitOf(h *bsearch.DocumentMatch) Hit {
	hit := Hit{Score: h.Score, Matches: 1}
	hit.Session, _ = h.Fields["session"].(string)
	hit.Root, _ = h.Fields["root"].(string)
	hit.Role, _ = h.Fields["role"].(string)
	hit.Source, _ = h.Fields["source"].(string)
	hit.Model, _ = h.Fields["model"].(string)
	if ts, ok := h.Fields["time"].(string); ok {
		hit.Time, _ = time.Parse(time.RFC3339Nano, ts)
	}
	if frags := h.Fragments["text"]; len(frags) > 0 {
		hit.Snippet = frags[0]
	}
	return hit
}

// withPairs gives every phrase on the text field the word pairs it must
// contain as further conditions: the pair terms are rare where the words
// are common, so the conjunction visits few messages, and the phrase
// itself still decides (and highlights). It changes the parsed query in
// place.
func (x *Index) withPairs(q query.Query) query.Query {
	switch t := q.(type) {
	case *query.BooleanQuery:
		for _, c := range []*query.Query{&t.Must, &t.Should, &t.MustNot, &t.Filter} {
			if *c != nil {
				*c = x.withPairs(*c)
			}
		}
	case *query.ConjunctionQuery:
		for i := range t.Conjuncts {
			t.Conjuncts[i] = x.withPairs(t.Conjuncts[i])
		}
	case *query.DisjunctionQuery:
		for i := range t.Disjuncts {
			t.Disjuncts[i] = x.withPairs(t.Disjuncts[i])
		}
	case *query.MatchPhraseQuery:
		if (t.FieldVal != "" && t.FieldVal != "text") || t.Fuzziness != 0 {
			return t
		}
		an := x.idx.Mapping().AnalyzerNamed(pairAnalyzer)
		if an == nil || len(an.Analyze([]byte(t.MatchPhrase))) == 0 {
			return t // one word: no pairs
		}
		// The same phrase over the pairs: "a b c" is "a b" then "b c".
		pairs := bleve.NewMatchPhraseQuery(t.MatchPhrase)
		pairs.SetField("pairs")
		pairs.Analyzer = pairAnalyzer
		if t.BoostVal != nil {
			pairs.SetBoost(float64(*t.BoostVal))
		}
		// Its words, optional, give the snippet its highlights.
		words := bleve.NewMatchQuery(t.MatchPhrase)
		words.SetField("text")
		words.SetBoost(0.01)
		b := bleve.NewBooleanQuery()
		b.AddMust(pairs)
		b.AddShould(words)
		return b
	}
	return q
}

// queryWords are the plain words of a query string, lowercased: no
// operators, field names, negated words or very short words.
func queryWords(text string) []string {
	var out []string
	for _, f := range strings.Fields(text) {
		if strings.HasPrefix(f, "-") || f == "OR" || f == "AND" || f == "NOT" {
			continue
		}
		if _, v, ok := strings.Cut(f, ":"); ok {
			f = v
		}
		for _, w := range strings.FieldsFunc(strings.ToLower(f), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if len(w) >= 3 {
				out = append(out, w)
			}
		}
	}
	return out
}

// markWords highlights each case-insensitive occurrence of words in s.
func markWords(s string, words []string) string {
	if len(words) == 0 {
		return s
	}
	lower := strings.ToLower(s)
	if len(lower) != len(s) {
		return s // lowercasing changed byte offsets: leave it plain
	}
	marked := make([]bool, len(s))
	for _, w := range words {
		for from := 0; ; {
			i := strings.Index(lower[from:], w)
			if i < 0 {
				break
			}
			for k := from + i; k < from+i+len(w); k++ {
				marked[k] = true
			}
			from += i + len(w)
		}
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if marked[i] && (i == 0 || !marked[i-1]) {
			b.WriteString(HighlightOn)
		}
		b.WriteByte(s[i])
		if marked[i] && (i == len(s)-1 || !marked[i+1]) {
			b.WriteString(HighlightOff)
		}
	}
	return b.String()
}
