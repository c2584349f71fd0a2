package dashboard

import (
	"bytes"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// linkFilter turns a link, autolink or image whose address could run
// code in the page into its text. Goldmark's own check looks at the
// address before it resolves entities and escapes ([x](jav&#x61;script:…)
// gets through) and not at all at autolinks (<javascript:…>), so the
// filter looks at the address as goldmark will write it, which is what
// the browser acts on once it has unescaped the attribute. It allows
// relative addresses and http, https, ftp, mailto and tel; an image may
// also be an inline PNG, GIF, JPEG or WebP (not SVG, which can hold
// script).
type linkFilter struct{}

// Transform implements parser.ASTTransformer.
func (linkFilter) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	src := reader.Source()
	var drop []ast.Node
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch l := n.(type) {
		case *ast.Link:
			if !safeAddress(util.URLEscape(l.Destination, true), false) {
				drop = append(drop, n)
			}
		case *ast.Image:
			if !safeAddress(util.URLEscape(l.Destination, true), true) {
				drop = append(drop, n)
			}
		case *ast.AutoLink:
			u := l.URL(src)
			if l.AutoLinkType == ast.AutoLinkEmail && !bytes.HasPrefix(bytes.ToLower(u), []byte("mailto:")) {
				u = append([]byte("mailto:"), u...)
			}
			if !safeAddress(util.URLEscape(u, false), false) {
				drop = append(drop, n)
			}
		}
		return ast.WalkContinue, nil
	})
	// Outer links come first: an image inside a dropped link is moved up
	// and then dropped in its turn.
	for _, n := range drop {
		parent := n.Parent()
		if parent == nil {
			continue
		}
		if a, ok := n.(*ast.AutoLink); ok {
			parent.ReplaceChild(parent, n, ast.NewString(a.Label(src)))
			continue
		}
		for c := n.FirstChild(); c != nil; c = n.FirstChild() {
			parent.InsertBefore(parent, n, c)
		}
		parent.RemoveChild(parent, n)
	}
}

// safeAddress reports whether an href (or, for an image, a src) holding
// addr cannot run code. The scheme is read the way a browser reads it,
// and more strictly: whitespace and control characters anywhere are left
// out first (browsers drop tabs and newlines inside a URL and spaces and
// controls around it), and its case does not matter.
func safeAddress(addr []byte, image bool) bool {
	s := strings.ToLower(strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return -1
		}
		return r
	}, string(addr)))
	scheme, ok := schemeOf(s)
	if !ok {
		return true // relative: this site
	}
	switch scheme {
	case "http", "https":
		return true
	case "ftp", "mailto", "tel":
		return !image
	case "data":
		if !image {
			return false
		}
		for _, t := range []string{"png", "gif", "jpeg", "webp"} {
			if strings.HasPrefix(s, "data:image/"+t+";") || strings.HasPrefix(s, "data:image/"+t+",") {
				return true
			}
		}
	}
	return false
}

// schemeOf returns the scheme of a URL (what comes before the first colon
// when it starts with a letter and holds only letters, digits, + - and .),
// and false for a relative URL.
func schemeOf(s string) (string, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return s[:i], true
		default:
			return "", false
		}
	}
	return "", false
}
