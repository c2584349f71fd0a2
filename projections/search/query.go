package search

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
)

// filterFields are the fields a query may name (source:telegram): each
// such term filters, it does not merely rank.
var filterFields = map[string]bool{"source": true, "role": true, "model": true, "tool": true, "session": true, "root": true, "day": true, "month": true}

// term is one element of a query string.
type term struct {
	neg    bool
	field  string // a filter field, or "" for words
	text   string
	phrase bool
	prefix bool
	fuzzy  int // -1: none
}

// parseQuery turns Hermes' search syntax into a Bleve query, with SQLite
// FTS5's meaning (the meaning the Python Hermes' search has): words are
// all required (implicit AND), OR between terms gives alternatives (AND
// binds tighter, so `a b OR c` is (a and b) or c), "phrases" are adjacent
// words, prefix*, fuzzy~ (or ~N edits), -word and NOT word exclude, +word
// is a plain required word, and field:value terms (source:telegram,
// role:user, model:, tool:, session:, day:YYYY-MM-DD, month:YYYY-MM)
// filter. A word matches a message's English text (stemmed) or its code
// words (snake_case and camelCase parts).
func parseQuery(s string) (query.Query, error) {
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	var alts [][]term
	var cur []term
	neg := false
	for _, t := range toks {
		switch {
		case !t.quoted && t.text == "OR":
			if len(cur) == 0 {
				return nil, errors.New("OR needs a term on each side")
			}
			alts, cur = append(alts, cur), nil
			continue
		case !t.quoted && t.text == "AND":
			continue
		case !t.quoted && t.text == "NOT":
			neg = true
			continue
		}
		tm, err := parseTerm(t)
		if err != nil {
			return nil, err
		}
		if tm == nil {
			continue
		}
		tm.neg = tm.neg || neg
		neg = false
		cur = append(cur, *tm)
	}
	if len(cur) == 0 {
		if len(alts) > 0 {
			return nil, errors.New("OR needs a term on each side")
		}
		return nil, errors.New("empty query")
	}
	alts = append(alts, cur)
	var qs []query.Query
	for _, a := range alts {
		q, err := conjunction(a)
		if err != nil {
			return nil, err
		}
		qs = append(qs, q)
	}
	if len(qs) == 1 {
		return qs[0], nil
	}
	return bleve.NewDisjunctionQuery(qs...), nil
}

type token struct {
	text   string
	quoted bool // text is a phrase's content
	pre    string
	suffix string // after a closing quote: ~N
}

// tokenize splits on spaces, keeping "quoted phrases" (with a +, - or
// field: before them and a ~N after them) as one token.
func tokenize(s string) ([]token, error) {
	var out []token
	rs := []rune(s)
	for i := 0; i < len(rs); {
		if rs[i] == ' ' || rs[i] == '\t' || rs[i] == '\n' {
			i++
			continue
		}
		start := i
		for i < len(rs) && rs[i] != ' ' && rs[i] != '\t' && rs[i] != '\n' && rs[i] != '"' {
			i++
		}
		if i < len(rs) && rs[i] == '"' {
			pre := string(rs[start:i])
			j := i + 1
			for j < len(rs) && rs[j] != '"' {
				j++
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("unclosed quote in %q", s)
			}
			phrase := string(rs[i+1 : j])
			j++
			k := j
			for k < len(rs) && rs[k] != ' ' && rs[k] != '\t' && rs[k] != '\n' {
				k++
			}
			out = append(out, token{text: phrase, quoted: true, pre: pre, suffix: string(rs[j:k])})
			i = k
			continue
		}
		out = append(out, token{text: string(rs[start:i])})
	}
	return out, nil
}

func parseTerm(t token) (*term, error) {
	tm := &term{fuzzy: -1}
	pre := t.pre
	text := t.text
	if !t.quoted {
		pre, text = "", t.text
	}
	// Signs and a field name before the value (or the phrase).
	head := pre
	if !t.quoted {
		head = text
	}
	for strings.HasPrefix(head, "-") || strings.HasPrefix(head, "+") {
		tm.neg = tm.neg || head[0] == '-'
		head = head[1:]
	}
	if f, v, ok := strings.Cut(head, ":"); ok && filterFields[strings.ToLower(f)] {
		tm.field = strings.ToLower(f)
		head = v
	}
	if t.quoted {
		if head != "" && tm.field == "" {
			return nil, fmt.Errorf("unexpected %q before a phrase", t.pre)
		}
		tm.text, tm.phrase = t.text, tm.field == ""
		if t.suffix != "" {
			n, err := strconv.Atoi(strings.TrimPrefix(t.suffix, "~"))
			if !strings.HasPrefix(t.suffix, "~") || err != nil || n < 0 || n > 2 {
				return nil, fmt.Errorf("after a phrase: %q (use ~1 or ~2 for a fuzzy phrase)", t.suffix)
			}
			tm.fuzzy = n
		}
		return tm, nil
	}
	text = head
	if tm.field != "" {
		if text == "" {
			return nil, fmt.Errorf("%s: needs a value (%s:VALUE)", tm.field, tm.field)
		}
		tm.text = text
		return tm, nil
	}
	if i := strings.LastIndex(text, "~"); i > 0 {
		n := 1
		if rest := text[i+1:]; rest != "" {
			v, err := strconv.Atoi(rest)
			if err != nil || v < 0 || v > 2 {
				return nil, fmt.Errorf("%q: fuzzy takes ~, ~1 or ~2", t.text)
			}
			n = v
		}
		tm.fuzzy, text = n, text[:i]
	} else if strings.HasSuffix(text, "*") {
		tm.prefix, text = true, strings.TrimRight(text, "*")
	}
	if strings.Trim(text, "*~") == "" {
		return nil, nil // a lone sign or operator character
	}
	tm.text = text
	return tm, nil
}

// conjunction: every positive term is required, negative ones excluded.
func conjunction(ts []term) (query.Query, error) {
	var must, not []query.Query
	for _, t := range ts {
		q := t.query()
		if t.neg {
			not = append(not, q)
		} else {
			must = append(must, q)
		}
	}
	if len(must) == 0 {
		return nil, errors.New("a query needs at least one word or field that is not excluded")
	}
	b := bleve.NewBooleanQuery()
	b.AddMust(must...)
	if len(not) > 0 {
		b.AddMustNot(not...)
	}
	return b, nil
}

func (t term) query() query.Query {
	if t.field != "" {
		q := bleve.NewTermQuery(t.text)
		q.SetField(t.field)
		return q
	}
	if t.phrase {
		q := bleve.NewMatchPhraseQuery(t.text)
		q.SetField("text")
		if t.fuzzy > 0 {
			q.SetFuzziness(t.fuzzy)
		}
		return q
	}
	lower := strings.ToLower(t.text)
	switch {
	case t.prefix:
		a := bleve.NewPrefixQuery(lower)
		a.SetField("text")
		b := bleve.NewPrefixQuery(lower)
		b.SetField("code")
		return bleve.NewDisjunctionQuery(a, b)
	case t.fuzzy >= 0:
		a := bleve.NewFuzzyQuery(lower)
		a.SetField("text")
		a.SetFuzziness(t.fuzzy)
		b := bleve.NewFuzzyQuery(lower)
		b.SetField("code")
		b.SetFuzziness(t.fuzzy)
		return bleve.NewDisjunctionQuery(a, b)
	}
	// A word in the text, or among the code words (its parts, all of
	// them: payments_service is payments and service).
	a := bleve.NewMatchQuery(t.text)
	a.SetField("text")
	a.SetOperator(query.MatchQueryOperatorAnd)
	b := bleve.NewMatchQuery(t.text)
	b.SetField("code")
	b.SetOperator(query.MatchQueryOperatorAnd)
	return bleve.NewDisjunctionQuery(a, b)
}
