package dashboard

import (
	"bytes"
	"html/template"
	"strings"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// markdown renders messages: CommonMark plus tables, strikethrough and
// autolinks. Raw HTML in a message is never passed through (goldmark
// leaves it out unless told otherwise), a link that could run code is
// only its text (linkFilter), and fenced code is highlighted
// with CSS classes, so the page needs no inline style.
type markdown struct {
	md  goldmark.Markdown
	fmt *chromahtml.Formatter
}

const codeStyle = "github"

func newMarkdown() *markdown {
	m := &markdown{fmt: chromahtml.New(chromahtml.WithClasses(true))}
	m.md = goldmark.New(
		goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify),
		goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(linkFilter{}, 10000))),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(&codeRenderer{m: m}, 100))),
	)
	return m
}

// render turns a message into safe HTML; on any failure it shows the text
// escaped.
func (m *markdown) render(s string) template.HTML {
	var b bytes.Buffer
	if err := m.md.Convert([]byte(s), &b); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(s) + "</pre>")
	}
	return template.HTML(b.String()) // #nosec: goldmark escapes text, raw HTML is shown as text, linkFilter drops scripting links
}

// css is the highlighter's style sheet.
func (m *markdown) css() string {
	var b bytes.Buffer
	_ = m.fmt.WriteCSS(&b, styles.Get(codeStyle))
	return b.String()
}

// codeRenderer renders fenced code blocks through chroma.
type codeRenderer struct{ m *markdown }

func (c *codeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindFencedCodeBlock, c.fenced)
	reg.Register(ast.KindRawHTML, c.rawInline)
	reg.Register(ast.KindHTMLBlock, c.rawBlock)
}

// rawInline shows inline HTML of a message as the text it is.
func (c *codeRenderer) rawInline(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	segs := n.(*ast.RawHTML).Segments
	for i := 0; i < segs.Len(); i++ {
		seg := segs.At(i)
		_, _ = w.WriteString(template.HTMLEscapeString(string(seg.Value(src))))
	}
	return ast.WalkSkipChildren, nil
}

// rawBlock shows a block of HTML of a message as the text it is.
func (c *codeRenderer) rawBlock(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	b := n.(*ast.HTMLBlock)
	_, _ = w.WriteString("<p>")
	for i := 0; i < b.Lines().Len(); i++ {
		seg := b.Lines().At(i)
		_, _ = w.WriteString(template.HTMLEscapeString(string(seg.Value(src))))
	}
	if b.HasClosure() {
		_, _ = w.WriteString(template.HTMLEscapeString(string(b.ClosureLine.Value(src))))
	}
	_, _ = w.WriteString("</p>")
	return ast.WalkSkipChildren, nil
}

func (c *codeRenderer) fenced(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	fb := n.(*ast.FencedCodeBlock)
	var code strings.Builder
	for i := 0; i < fb.Lines().Len(); i++ {
		seg := fb.Lines().At(i)
		code.Write(seg.Value(src))
	}
	lang := string(fb.Language(src))
	lexer := lexers.Get(lang)
	if lexer == nil {
		lexer = lexers.Analyse(code.String())
	}
	if lexer == nil {
		lexer = lexers.Fallback
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, code.String())
	if err == nil {
		var b bytes.Buffer
		if c.m.fmt.Format(&b, styles.Get(codeStyle), it) == nil {
			_, _ = w.Write(b.Bytes())
			return ast.WalkSkipChildren, nil
		}
	}
	_, _ = w.WriteString("<pre><code>" + template.HTMLEscapeString(code.String()) + "</code></pre>")
	return ast.WalkSkipChildren, nil
}
