package judge

import (
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// field is one argument of a command after expansion, as far as the judge
// can tell before the command runs.
type field struct {
	lit    string // the value; parts only known at run time read dynMark
	pat    string // a glob pattern: quoted metacharacters escaped, unknown parts "*"
	known  bool   // no part is only known at run time
	glob   bool   // an unquoted glob metacharacter: the shell expands it
	split  bool   // an unquoted unknown part: may be any number of fields
	quoted bool
	down   bool  // a part came from the network
	src    *data // a process substitution <(…): what reading it gives
	brack  bool  // an unquoted [: a glob if a ] follows
}

type quoting int

const (
	quoteNone quoting = iota
	quoteDouble
	quoteHeredoc
)

// builder expands the parts of words into fields the way bash does:
// quotes removed, escapes resolved, unquoted expansions split on IFS.
type builder struct {
	w         *walker
	sc        *scope
	splitting bool // command arguments (not assignments or redirections)
	fields    []field
	cur       field
	lit, pat  strings.Builder
	active    bool // the current field exists (has text or a quoted part)
}

func (w *walker) builder(sc *scope, splitting bool) *builder {
	return &builder{w: w, sc: sc, splitting: splitting, cur: field{known: true}}
}

func isGlobMeta(c byte) bool { return c == '*' || c == '?' || c == '[' || c == '\\' }

func (b *builder) text(s string, quoted bool) {
	b.active = true
	if quoted {
		b.cur.quoted = true
	}
	if b.lit.Len()+len(s) > maxText {
		b.unknown(quoted)
		return
	}
	b.lit.WriteString(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case !isGlobMeta(c):
			b.pat.WriteByte(c)
		case quoted || !b.splitting || c == '\\':
			b.pat.WriteByte('\\')
			b.pat.WriteByte(c)
		case c == '[':
			b.pat.WriteByte(c)
			b.cur.brack = true
		default:
			b.pat.WriteByte(c)
			b.cur.glob = true
		}
	}
}

func (b *builder) unknown(quoted bool) {
	b.active = true
	b.cur.known = false
	if quoted {
		b.cur.quoted = true
	} else if b.splitting {
		b.cur.split = true
	}
	b.lit.WriteString(dynMark)
	b.pat.WriteByte('*')
}

// expansion adds the value of a parameter or command substitution.
func (b *builder) expansion(v string, quoted bool) {
	if b.w.spend(len(v)) {
		b.unknown(quoted)
		return
	}
	if quoted || !b.splitting {
		b.text(v, true)
		return
	}
	ifs := b.sc.get("IFS")
	if !ifs.known {
		b.unknown(false)
		return
	}
	start := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !strings.ContainsRune(ifs.s, rune(c)) {
			continue
		}
		if start < i {
			b.text(v[start:i], false)
		}
		if c != ' ' && c != '\t' && c != '\n' {
			b.active = true
		}
		b.end()
		start = i + 1
	}
	if start < len(v) {
		b.text(v[start:], false)
	}
}

func (b *builder) end() {
	if b.active {
		b.cur.lit, b.cur.pat = b.lit.String(), b.pat.String()
		if b.cur.brack && !b.cur.glob {
			b.cur.glob = closedBracket(b.cur.pat)
		}
		b.fields = append(b.fields, b.cur)
	}
	b.cur = field{known: true}
	b.lit.Reset()
	b.pat.Reset()
	b.active = false
}

// one is the single field of a word that is not split.
func (b *builder) one() field {
	b.end()
	if len(b.fields) == 0 {
		return field{known: true}
	}
	f := b.fields[0]
	for _, g := range b.fields[1:] {
		f.lit += " " + g.lit
		f.pat += " " + g.pat
		f.known = f.known && g.known
		f.down = f.down || g.down
	}
	return f
}

func (b *builder) parts(wps []syntax.WordPart, q quoting) {
	for i, p := range wps {
		switch p := p.(type) {
		case *syntax.Lit:
			s := p.Value
			switch q {
			case quoteNone:
				if i == 0 && strings.HasPrefix(s, "~") {
					s = b.tilde(s, len(wps) == 1)
				}
				for j := 0; j < len(s); j++ {
					if s[j] == '\\' && j+1 < len(s) {
						j++
						if s[j] != '\n' {
							b.text(s[j:j+1], true)
						}
						continue
					}
					b.text(s[j:j+1], false)
				}
			case quoteDouble:
				b.text(unescape(s, "$`\"\\\n"), true)
			default:
				b.text(unescape(s, "$`\\\n"), true)
			}
		case *syntax.SglQuoted:
			v := p.Value
			if p.Dollar {
				v = ansiC(v)
			}
			b.text(v, true)
		case *syntax.DblQuoted:
			b.text("", true)
			b.parts(p.Parts, quoteDouble)
		case *syntax.ParamExp:
			if args, ok := b.w.positional(p, b.sc); ok { // "$@": a field per argument
				for k, a := range args {
					switch {
					case k == 0:
					case q == quoteNone || p.Param.Value == "@":
						b.end()
					default: // "$*": one field
						b.text(" ", true)
					}
					if a.known {
						b.expansion(a.s, q != quoteNone)
					} else {
						b.unknown(q != quoteNone)
					}
				}
				continue
			}
			v := b.w.param(p, b.sc)
			if v.known {
				b.expansion(v.s, q != quoteNone)
			} else {
				b.unknown(q != quoteNone)
			}
		case *syntax.CmdSubst:
			out := b.w.subshell(p.Stmts, b.sc, data{})
			if out.known {
				b.expansion(strings.TrimRight(out.text, "\n"), q != quoteNone)
			} else {
				b.unknown(q != quoteNone)
			}
			b.cur.down = b.cur.down || out.download
		case *syntax.ArithmExp:
			if n, ok := b.w.arith(p.X, b.sc); ok {
				b.expansion(strconv.Itoa(n), q != quoteNone)
			} else {
				b.unknown(q != quoteNone)
			}
		case *syntax.ProcSubst:
			in := data{}
			if p.Op == syntax.CmdOut { // >(…) reads what the command writes
				in = data{piped: true}
			}
			out := b.w.subshell(p.Stmts, b.sc, in)
			b.text("/dev/fd/63", true)
			if p.Op == syntax.CmdIn {
				b.cur.src = &out
			}
			b.cur.down = b.cur.down || out.download
		case *syntax.ExtGlob:
			b.active = true
			b.lit.WriteString(p.Op.String() + p.Pattern.Value + ")")
			b.pat.WriteByte('*')
			b.cur.glob = b.cur.glob || b.splitting
		default:
			b.unknown(q != quoteNone)
		}
	}
}

// tilde expands a leading ~, ~+, ~- or ~user and returns the rest of s.
func (b *builder) tilde(s string, whole bool) string {
	prefix, rest, slash := strings.Cut(s[1:], "/")
	if !slash && !whole {
		return s
	}
	switch {
	case prefix == "":
		b.text(homeMark, true)
	case prefix == "+" && b.sc.cwd != "":
		b.text(b.sc.cwd, true)
	case prefix == "+" || prefix == "-":
		b.unknown(true)
	case prefix == "root":
		b.text("/root", true)
	case syntax.ValidName(strings.ReplaceAll(strings.ReplaceAll(prefix, "-", "_"), ".", "_")):
		b.text("/home/"+prefix, true)
	default:
		return s
	}
	if slash {
		return "/" + rest
	}
	return ""
}

// unescape drops the backslash before the characters in special, as bash
// does inside double quotes and here-documents.
func unescape(s, special string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(special, s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// ansiC decodes the body of $'…'.
func ansiC(s string) string {
	v, _, err := expand.Format(nil, s, nil)
	if err != nil {
		return s
	}
	v, _, _ = strings.Cut(v, "\x00")
	return v
}

// wordFields expands a command argument: braces, then fields.
func (w *walker) wordFields(word *syntax.Word, sc *scope) []field {
	b := w.builder(sc, true)
	for _, wd := range braces(word) {
		b.parts(wd.Parts, quoteNone)
		b.end()
	}
	return b.fields
}

// wordOne expands a word that is not split (assignment values, redirection
// targets, here-strings, operands of ${x:-word}).
func (w *walker) wordOne(word *syntax.Word, sc *scope) field {
	b := w.builder(sc, false)
	b.parts(word.Parts, quoteNone)
	return b.one()
}

func braces(word *syntax.Word) []*syntax.Word {
	c := &syntax.Word{Parts: slices.Clone(word.Parts)}
	if !syntax.SplitBraces(c) {
		return []*syntax.Word{word}
	}
	var out []*syntax.Word
	for wd, err := range expand.BracesSeq(nil, c) {
		if err != nil || len(out) >= maxBraces {
			break
		}
		out = append(out, wd)
	}
	if len(out) == 0 {
		return []*syntax.Word{word}
	}
	return out
}

// positional is the arguments "$@" and "$*" stand for, when their number is
// known.
func (w *walker) positional(pe *syntax.ParamExp, sc *scope) ([]value, bool) {
	if pe.Param == nil || pe.Param.Value != "@" && pe.Param.Value != "*" || pe.Excl || pe.Length || pe.Exp != nil ||
		pe.Slice != nil || pe.Repl != nil || pe.Index != nil {
		return nil, false
	}
	n, err := strconv.Atoi(sc.get("#").s)
	if !sc.get("#").known || err != nil || n < 2 || n > 9 {
		return nil, false
	}
	out := make([]value, n)
	for i := range out {
		out[i] = sc.get(strconv.Itoa(i + 1))
	}
	return out, true
}

func specialParam(name string) bool {
	switch name {
	case "@", "*", "#", "?", "$", "!", "-", "_":
		return true
	}
	return false
}

// param is the value of a parameter expansion when it is known statically.
func (w *walker) param(pe *syntax.ParamExp, sc *scope) value {
	if pe.Param == nil || pe.Excl || pe.Names != 0 || pe.NestedParam != nil || pe.Index != nil {
		w.nested(pe, sc)
		return value{}
	}
	name := pe.Param.Value
	base := value{}
	switch {
	case !specialParam(name):
		base = sc.get(name)
	case name == "#":
		base = sc.get("#")
	case name == "@" || name == "*": // known for a single argument, or none
		if n := sc.get("#"); n.known && n.s == "0" {
			base = value{"", true}
		} else if n.known && n.s == "1" {
			base = sc.get("1")
		}
	}
	plain := !pe.Length && !pe.Width && !pe.IsSet && pe.Flags == nil && pe.Slice == nil && pe.Repl == nil &&
		len(pe.Modifiers) == 0 && pe.Split == syntax.OptUnset && pe.GlobSubst == syntax.OptUnset && pe.RcExpand == syntax.OptUnset
	if plain && pe.Exp == nil {
		return base
	}
	if plain {
		op := pe.Exp.Op
		word := func() value {
			if pe.Exp.Word == nil {
				return value{"", true}
			}
			f := w.wordOne(pe.Exp.Word, sc)
			return value{f.lit, f.known}
		}
		switch op {
		case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
			v := word()
			if base.known && base.s != "" {
				return base
			}
			if !base.known {
				return value{}
			}
			if op == syntax.AssignUnset || op == syntax.AssignUnsetOrNull {
				sc.vars[name] = v
			}
			return v
		case syntax.AlternateUnset, syntax.AlternateUnsetOrNull:
			v := word()
			if !base.known {
				return value{}
			}
			if base.s == "" {
				return value{"", true}
			}
			return v
		case syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
			word()
			return base
		}
	}
	w.nested(pe, sc)
	if !base.known {
		return value{}
	}
	s, ok := w.expandStatic(sc, func(cfg *expand.Config) (string, error) {
		return expand.Literal(cfg, &syntax.Word{Parts: []syntax.WordPart{pe}})
	}, pe)
	return value{s, ok}
}

// arith evaluates an arithmetic expression when every variable in it is known.
func (w *walker) arith(x syntax.ArithmExpr, sc *scope) (int, bool) {
	w.nested(x, sc)
	s, ok := w.expandStatic(sc, func(cfg *expand.Config) (string, error) {
		n, err := expand.Arithm(cfg, x)
		return strconv.Itoa(n), err
	}, x)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// expandStatic runs mvdan's expander over n with the variables the judge
// knows; anything else it would need (an unknown variable, a command)
// makes the result unknown.
func (w *walker) expandStatic(sc *scope, run func(*expand.Config) (string, error), n syntax.Node) (s string, ok bool) {
	dynamic := false
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			dynamic = true
		}
		return !dynamic
	})
	if dynamic {
		return "", false
	}
	missed := false
	cfg := &expand.Config{Env: expand.FuncEnviron(func(name string) string {
		v, found := sc.vars[name]
		if !found || !v.known {
			if name != "IFS" {
				missed = true
			}
			return ""
		}
		return v.s
	})}
	defer func() {
		if recover() != nil {
			s, ok = "", false
		}
	}()
	s, err := run(cfg)
	if err != nil || missed || len(s) > maxText {
		return "", false
	}
	return s, true
}

// closedBracket tells whether an unescaped [ of pat is closed by a ].
func closedBracket(pat string) bool {
	open := false
	for i := 0; i < len(pat); i++ {
		switch pat[i] {
		case '\\':
			i++
		case '[':
			open = true
		case ']':
			if open {
				return true
			}
		}
	}
	return false
}
