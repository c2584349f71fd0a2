// Package judge decides, before a shell command runs, whether it is
// dangerous: which of its parts need a person's approval and which are
// refused outright (hard-line rules). It is pure logic over the bash
// syntax tree (stdlib and mvdan.cc/sh only): the terminal tool's Approver,
// the cron scheduler and the approvals command use it.
package judge

import (
	"fmt"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Judge decides, before a command runs, which of its parts need a person's
// decision. It parses the command as bash and judges every simple command it
// would run, wherever it sits (pipelines, lists, subshells, groups, function
// bodies, loops, command and process substitutions, strings handed to
// bash -c, eval, ssh, su, find -exec, xargs, here-documents fed to a shell).
// Words are resolved statically (quotes, escapes, $'…', braces, known
// variables, the output of echo/printf/base64 -d in substitutions) and paths
// cleaned, so every spelling of one command gets the same verdict; what cannot
// be resolved statically asks.
//
// The zero value judges for the current user: the home directory from $HOME
// and the agent's own home from $HERMES_HOME (or ~/.hermes).
type Judge struct {
	// Home is the user's home directory; paths under it are treated like
	// paths under ~.
	Home string
	// AgentHome is Hermes' home ($HERMES_HOME: config.yaml, the event
	// store). Writing there asks; deleting it is refused.
	AgentHome string
	// Dir is the directory the command starts in; "" when unknown, in which
	// case relative paths are judged by their names only.
	Dir string
}

// Finding is one part of a command that needs a decision.
type Finding struct {
	Rule *Rule
	// Command is the simple command that triggered the rule, with quotes
	// and escapes resolved.
	Command string
}

// String is the rule and the command part, for messages and logs.
func (f Finding) String() string { return f.Rule.Description + ": " + f.Command }

// DefaultJudge judges for the current user.
func DefaultJudge() Judge { return Judge{}.withDefaults() }

func (jd Judge) withDefaults() Judge {
	if jd.Home == "" {
		jd.Home, _ = os.UserHomeDir()
	}
	if jd.AgentHome == "" {
		jd.AgentHome = os.Getenv("HERMES_HOME")
	}
	return jd
}

// Findings returns every finding in command, hard-line ones included, in the
// order they were found. A command that cannot be parsed gets one finding
// (it asks); nil means the command may run without a question.
func (jd Judge) Findings(command string) []Finding {
	fs, err := jd.findings(command)
	if err != nil {
		fs = append(fs, Finding{Rule: ruleUnparsable, Command: clip(command)})
	}
	return fs
}

// limits that keep the judge fast on hostile input: a command past them
// asks instead of being judged further.
const (
	maxSteps     = 20000    // simple commands and statements judged
	maxBytes     = 32 << 20 // text expanded or parsed
	maxDepth     = 12       // strings run as code inside strings run as code
	maxLoopItems = 16       // values of a for loop judged one by one
	maxBraces    = 64       // words of one brace expansion
	maxText      = 1 << 20
)

// findings is Findings that reports a crash of the judge as an error, so the
// fuzz test sees it while Findings still asks for the command.
func (jd Judge) findings(command string) ([]Finding, error) {
	w, err := jd.judge(command)
	return w.findings, err
}

func (jd Judge) judge(command string) (w *walker, err error) {
	w = newWalker(jd.withDefaults())
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("judge crashed on %q: %v\n%s", command, r, debug.Stack())
		}
	}()
	w.script(command, w.topScope(), data{})
	return w, nil
}

// homeMark stands for the user's home directory in judged paths: "~",
// "$HOME" and the real home all become it, so ~/.. is /home and ~/../.. is /.
const homeMark = "/home/~"

// dynMark stands for a part of a string that is only known at run time when
// the string is judged again as code: it parses back as an unknown variable.
const dynMark = "${__hermes_dynamic}"

// value is a shell variable as far as the judge knows it.
type value struct {
	s     string
	known bool
}

// scope is what the judge knows of the shell at one point of the command.
type scope struct {
	vars    map[string]value
	cwd     string                  // absolute and clean, or "" when unknown
	files   map[string]data         // files this command wrote (shared by every scope: the file system is one)
	funcs   map[string]*syntax.Stmt // functions defined, with their bodies
	aliases map[string]string
	loops   int // nesting of loops expanded value by value
}

func (s *scope) get(name string) value { return s.vars[name] }

func (s *scope) clone() *scope {
	c := &scope{vars: make(map[string]value, len(s.vars)), cwd: s.cwd, files: s.files,
		funcs: make(map[string]*syntax.Stmt, len(s.funcs)), aliases: make(map[string]string, len(s.aliases)), loops: s.loops}
	for k, v := range s.vars {
		c.vars[k] = v
	}
	for k, v := range s.funcs {
		c.funcs[k] = v
	}
	for k, v := range s.aliases {
		c.aliases[k] = v
	}
	return c
}

// merge folds in a branch that may or may not have run: what differs
// becomes unknown.
func (s *scope) merge(b *scope) {
	for k, v := range b.vars {
		if old, ok := s.vars[k]; !ok || old != v {
			s.vars[k] = value{}
		}
	}
	for k := range s.vars {
		if _, ok := b.vars[k]; !ok {
			s.vars[k] = value{}
		}
	}
	if s.cwd != b.cwd {
		s.cwd = ""
	}
	for k, v := range b.funcs {
		s.funcs[k] = v
	}
	for k, v := range b.aliases {
		s.aliases[k] = v
	}
}

// write records what a command wrote to the file p. Content written before
// is kept (a branch may not have run), so running the file judges both.
func (s *scope) write(p string, d data, appendMode bool) {
	d.piped, d.gen = false, false
	old, had := s.files[p]
	switch {
	case !had:
		s.files[p] = d
	case appendMode:
		s.files[p] = concat(old, d)
	default:
		s.files[p] = concat(concat(old, data{text: "\n", known: true}), d)
	}
}

// file is what reading p gives, when this command wrote it.
func (s *scope) file(p string) (data, bool) {
	d, ok := s.files[p]
	return d, ok
}

// data is a stream between commands (a command's output, another's input)
// as far as the judge knows it.
type data struct {
	text     string
	known    bool
	download bool // it comes from the network
	piped    bool // (as input) it comes through a pipe from this command
	gen      bool // (as input) a here-document only known at run time
}

var emptyData = data{known: true}

func concat(a, b data) data {
	out := data{known: a.known && b.known, download: a.download || b.download}
	if out.known && len(a.text)+len(b.text) <= maxText {
		out.text = a.text + b.text
	} else {
		out.known = false
	}
	return out
}

type walker struct {
	home      string // the real home directory, cleaned ("" if unknown)
	agentHome []string
	dir       string
	findings  []Finding
	seen      map[Finding]bool
	visited   map[*syntax.Stmt]bool
	steps     int
	bytes     int
	depth     int
	maxDepth  int // the deepest nesting of code in strings reached
	fallbacks int // statements the structured walk missed (judged on their own)
	over      bool
	quiet     int               // judging code only partly known: its unknown parts are already reported
	links     map[string]string // symbolic links the command made: path → target
	calling   map[string]bool   // functions and aliases being judged at a call
	defining  int               // judging a function body where it is defined, without its arguments
}

func newWalker(jd Judge) *walker {
	w := &walker{seen: map[Finding]bool{}, visited: map[*syntax.Stmt]bool{}}
	if jd.Home != "" && path.IsAbs(jd.Home) {
		w.home = path.Clean(jd.Home)
		if w.home == "/" {
			w.home = ""
		}
	}
	w.agentHome = []string{homeMark + "/.hermes"}
	if jd.AgentHome != "" && path.IsAbs(jd.AgentHome) {
		if ah := w.abs(jd.AgentHome, ""); ah != w.agentHome[0] && ah != "/" {
			w.agentHome = append(w.agentHome, ah)
		}
	}
	if jd.Dir != "" && path.IsAbs(jd.Dir) {
		w.dir = w.abs(jd.Dir, "")
	}
	return w
}

func (w *walker) topScope() *scope {
	sc := &scope{vars: map[string]value{
		"HOME":        {homeMark, true},
		"IFS":         {" \t\n", true},
		"HERMES_HOME": {w.agentHome[len(w.agentHome)-1], true},
	}, files: map[string]data{}, funcs: map[string]*syntax.Stmt{}, aliases: map[string]string{}, cwd: w.dir}
	// The terminal runs a command as bash -c COMMAND, without arguments. $0
	// is the shell's name, which differs from shell to shell: unknown.
	sc.vars["#"] = value{"0", true}
	for k := 1; k < 10; k++ {
		sc.vars[strconv.Itoa(k)] = value{"", true}
	}
	if w.dir != "" {
		sc.vars["PWD"] = value{w.dir, true}
	}
	return sc
}

func (w *walker) add(r *Rule, command string) {
	f := Finding{Rule: r, Command: clip(command)}
	if !w.seen[f] {
		w.seen[f] = true
		w.findings = append(w.findings, f)
	}
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// tick counts work; once over budget the rest of the command asks.
func (w *walker) tick() bool {
	w.steps++
	if w.steps > maxSteps {
		if !w.over {
			w.over = true
			w.add(ruleUnparsable, "(too complex to judge)")
		}
		return true
	}
	return false
}

func newParser() *syntax.Parser {
	return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true))
}

// parse parses code as bash does. mvdan's parser takes a # inside a word
// for a comment in some places where bash does not (inside ( ) and $( ),
// "$A# x"); bash starts a comment only at the beginning of a word, so such
// a # is escaped and the code parsed again, lest the rest of the line hide
// from the judge.
func parse(code string) (*syntax.File, error) {
	for range 16 {
		f, err := newParser().Parse(strings.NewReader(code), "")
		if err != nil {
			return nil, err
		}
		var fix []int
		syntax.Walk(f, func(n syntax.Node) bool {
			if c, ok := n.(*syntax.Comment); ok {
				if i := int(c.Hash.Offset()); i > 0 && i < len(code) && code[i] == '#' && !strings.ContainsRune(" \t\n;&|()<>", rune(code[i-1])) {
					fix = append(fix, i)
				}
			}
			return true
		})
		if len(fix) == 0 {
			return f, nil
		}
		slices.Sort(fix)
		for k := len(fix) - 1; k >= 0; k-- {
			code = code[:fix[k]] + "\\" + code[fix[k]:]
		}
	}
	return nil, fmt.Errorf("comments the parser and bash disagree on")
}

// spend counts text expanded or parsed; past the budget the rest of the
// command asks.
func (w *walker) spend(n int) bool {
	w.bytes += n
	if w.bytes > maxBytes {
		w.steps = maxSteps
		return w.tick()
	}
	return w.over
}

// script judges code run by a shell.
func (w *walker) script(code string, sc *scope, in data) data {
	if w.spend(len(code)) {
		return data{}
	}
	if w.depth >= maxDepth || len(code) > maxText {
		w.add(ruleUnparsable, "(nested too deeply to judge)")
		return data{}
	}
	f, err := parse(code)
	if err != nil {
		w.add(ruleUnparsable, code)
		return data{}
	}
	w.depth++
	w.maxDepth = max(w.maxDepth, w.depth)
	defer func() { w.depth-- }()
	for _, name := range forkBombs(f) {
		w.add(ruleForkBomb, name+"(){ … }")
	}
	out := w.stmts(f.Stmts, sc, in)
	// Anything the structured walk did not reach is judged on its own, so
	// no simple command goes unjudged whatever node it hides in.
	syntax.Walk(f, func(n syntax.Node) bool {
		if s, ok := n.(*syntax.Stmt); ok && !w.visited[s] && !w.over {
			w.fallbacks++
			w.stmt(s, w.topScope(), data{})
		}
		return true
	})
	return out
}

func (w *walker) stmts(list []*syntax.Stmt, sc *scope, in data) data {
	out := emptyData
	for _, s := range list {
		out = concat(out, w.stmt(s, sc, in))
	}
	return out
}

// subshell judges statements whose changes to variables and the working
// directory do not outlive them.
func (w *walker) subshell(list []*syntax.Stmt, sc *scope, in data) data {
	return w.stmts(list, sc.clone(), in)
}

func (w *walker) stmt(s *syntax.Stmt, sc *scope, in data) data {
	w.visited[s] = true
	if w.tick() {
		return data{}
	}
	type sink struct {
		path   string
		append bool
	}
	var sinks []sink
	stdoutAway := false
	for _, r := range s.Redirs {
		fd := ""
		if r.N != nil {
			fd = r.N.Value
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			in = w.heredoc(r, sc)
		case syntax.WordHdoc:
			f := w.wordOne(r.Word, sc)
			in = data{text: f.lit + "\n", known: f.known, download: f.down, gen: !f.known}
		case syntax.RdrIn, syntax.RdrInOut:
			f := w.wordOne(r.Word, sc)
			w.readPath(f, sc, "<"+f.lit)
			in = data{}
			if f.known {
				if d, ok := sc.file(w.abs(f.lit, sc.cwd)); ok {
					in = d
				} else if otherFd(f.lit) {
					in = data{piped: true}
				}
			}
			if r.Op == syntax.RdrInOut {
				w.writePath(f, sc, "<>"+f.lit)
			}
		case syntax.DplIn, syntax.DplOut:
			f := w.wordOne(r.Word, sc)
			if f.known && (isNumber(f.lit) || f.lit == "-") {
				if r.Op == syntax.DplOut && (fd == "" || fd == "1") && f.lit != "1" {
					stdoutAway = true
				}
				if r.Op == syntax.DplIn && (fd == "" || fd == "0") && f.lit != "0" { // stdin from another stream
					in = data{piped: true}
				}
				continue
			}
			if r.Op == syntax.DplOut { // >&file is &>file
				w.writePath(f, sc, ">&"+f.lit)
				stdoutAway = true
			}
		default: // > >> >| &> &>> and the zsh clobber forms
			f := w.wordOne(r.Word, sc)
			w.writePath(f, sc, ">"+f.lit)
			if fd == "" || fd == "1" || r.Op == syntax.RdrAll || r.Op == syntax.AppAll {
				stdoutAway = true
				if f.known {
					sinks = append(sinks, sink{w.abs(f.lit, sc.cwd), r.Op == syntax.AppOut || r.Op == syntax.AppAll})
				}
			}
		}
	}
	out := emptyData
	if s.Cmd != nil {
		out = w.command(s.Cmd, sc, in)
	}
	if !stdoutAway {
		return out
	}
	for _, k := range sinks {
		sc.write(k.path, out, k.append)
	}
	return emptyData
}

func (w *walker) heredoc(r *syntax.Redirect, sc *scope) data {
	if r.Hdoc == nil {
		return emptyData
	}
	quoted := false
	for _, p := range r.Word.Parts {
		if _, ok := p.(*syntax.Lit); !ok {
			quoted = true
		} else if strings.Contains(p.(*syntax.Lit).Value, "\\") {
			quoted = true
		}
	}
	if quoted {
		var sb strings.Builder
		for _, p := range r.Hdoc.Parts {
			if l, ok := p.(*syntax.Lit); ok {
				sb.WriteString(l.Value)
			}
		}
		return data{text: sb.String(), known: true}
	}
	b := w.builder(sc, false)
	b.parts(r.Hdoc.Parts, quoteHeredoc)
	f := b.one()
	return data{text: f.lit, known: f.known, download: f.down, gen: !f.known}
}

func (w *walker) command(cmd syntax.Command, sc *scope, in data) data {
	switch c := cmd.(type) {
	case *syntax.CallExpr:
		return w.callExpr(c, sc, in)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.Pipe, syntax.PipeAll:
			out := w.stmt(c.X, sc.clone(), in)
			out.piped = true
			return w.stmt(c.Y, sc.clone(), out)
		case syntax.AndStmt: // a && b && c: each runs after the ones before succeeded
			chain := w.andChain(c)
			out := w.stmt(chain[0], sc, in)
			b := sc.clone()
			for _, s := range chain[1:] {
				out = concat(out, w.stmt(s, b, in))
			}
			sc.merge(b)
			return out
		default: // ||: the right side may not run
			out := w.stmt(c.X, sc, in)
			b := sc.clone()
			out = concat(out, w.stmt(c.Y, b, in))
			sc.merge(b)
			return out
		}
	case *syntax.Subshell:
		return w.subshell(c.Stmts, sc, in)
	case *syntax.Block:
		return w.stmts(c.Stmts, sc, in)
	case *syntax.IfClause:
		w.stmts(c.Cond, sc, in)
		b := sc.clone()
		w.stmts(c.Then, b, in)
		sc.merge(b)
		if c.Else != nil {
			b := sc.clone()
			w.command(c.Else, b, in)
			sc.merge(b)
		}
		return data{download: in.download}
	case *syntax.WhileClause:
		b := sc.clone()
		w.stmts(c.Cond, b, in)
		w.stmts(c.Do, b, in)
		sc.merge(b)
		return data{download: in.download}
	case *syntax.ForClause:
		w.forClause(c, sc, in)
		return data{download: in.download}
	case *syntax.CaseClause:
		w.wordFields(c.Word, sc)
		for _, item := range c.Items {
			for _, p := range item.Patterns {
				w.nested(p, sc)
			}
			b := sc.clone()
			w.stmts(item.Stmts, b, in)
			sc.merge(b)
		}
		return data{download: in.download}
	case *syntax.FuncDecl:
		if c.Name != nil {
			sc.funcs[c.Name.Value] = c.Body
		}
		for _, n := range c.Names {
			sc.funcs[n.Value] = c.Body
		}
		// The body runs whenever the function is called, with arguments
		// not known here: judge it now, and again at each call.
		b := sc.clone()
		setPositional(b, nil, false)
		w.defining++
		w.stmt(c.Body, b, data{})
		w.defining--
		sc.merge(b)
		return emptyData
	case *syntax.DeclClause:
		w.declClause(c, sc)
		return emptyData
	case *syntax.TimeClause:
		if c.Stmt != nil {
			return w.stmt(c.Stmt, sc, in)
		}
		return emptyData
	case *syntax.CoprocClause: // reads what the shell writes to it later
		w.stmt(c.Stmt, sc.clone(), data{piped: true})
		return emptyData
	case *syntax.TestDecl:
		w.stmt(c.Body, sc.clone(), in)
		return emptyData
	default: // (( )), [[ ]], let: judge the substitutions inside
		w.nested(c, sc)
		return data{}
	}
}

// andChain flattens a && b && c into its statements.
func (w *walker) andChain(c *syntax.BinaryCmd) []*syntax.Stmt {
	x := c.X
	if inner, ok := x.Cmd.(*syntax.BinaryCmd); ok && inner.Op == syntax.AndStmt && len(x.Redirs) == 0 && !x.Negated && !x.Background && !x.Coprocess {
		w.visited[x] = true
		return append(w.andChain(inner), c.Y)
	}
	return []*syntax.Stmt{x, c.Y}
}

func (w *walker) forClause(c *syntax.ForClause, sc *scope, in data) {
	wi, ok := c.Loop.(*syntax.WordIter)
	if !ok {
		w.nested(c.Loop, sc)
		b := sc.clone()
		w.stmts(c.Do, b, in)
		sc.merge(b)
		return
	}
	var items []field
	known := wi.InPos.IsValid()
	for _, word := range wi.Items {
		for _, f := range w.wordFields(word, sc) {
			items = append(items, f)
			if !f.known || f.glob || f.split {
				known = false
			}
		}
	}
	name := wi.Name.Value
	if known && len(items) <= maxLoopItems && sc.loops < 2 {
		for _, it := range items {
			b := sc.clone()
			b.loops++
			b.vars[name] = value{it.lit, true}
			w.stmts(c.Do, b, in)
			b.loops--
			sc.merge(b)
		}
		sc.vars[name] = value{}
		return
	}
	b := sc.clone()
	b.vars[name] = value{}
	w.stmts(c.Do, b, in)
	sc.merge(b)
	sc.vars[name] = value{}
}

func (w *walker) declClause(c *syntax.DeclClause, sc *scope) {
	for _, a := range c.Args {
		if a.Naked {
			if a.Value != nil {
				w.wordFields(a.Value, sc)
			}
			continue
		}
		w.assign(a, sc, sc)
	}
}

// assign judges an assignment, evaluated in from and stored in to.
func (w *walker) assign(a *syntax.Assign, from, to *scope) {
	if a.Name == nil {
		return
	}
	name := a.Name.Value
	if a.Index != nil || a.Array != nil {
		w.nested(a, from)
		to.vars[name] = value{}
		return
	}
	v := value{"", true}
	if a.Value != nil {
		f := w.wordOne(a.Value, from)
		v = value{f.lit, f.known}
	}
	if a.Append {
		old := from.get(name)
		v = value{old.s + v.s, old.known && v.known}
	}
	if name == "__hermes_dynamic" {
		v = value{}
	}
	to.vars[name] = v
}

func (w *walker) callExpr(ce *syntax.CallExpr, sc *scope, in data) data {
	env := sc
	if len(ce.Args) > 0 && len(ce.Assigns) > 0 {
		env = sc.clone()
	}
	for _, a := range ce.Assigns {
		w.assign(a, sc, env)
	}
	if len(ce.Args) == 0 {
		return emptyData
	}
	var argv []field
	for _, word := range ce.Args {
		argv = append(argv, w.wordFields(word, sc)...)
	}
	return w.run(argv, &ctx{sc: sc, env: env, in: in})
}

// nested judges the command and process substitutions anywhere inside n
// (arithmetic, [[ ]], parameter expansion operands, case patterns).
func (w *walker) nested(n syntax.Node, sc *scope) {
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.CmdSubst:
			w.subshell(m.Stmts, sc, data{})
			return false
		case *syntax.ProcSubst:
			w.subshell(m.Stmts, sc, data{})
			return false
		}
		return true
	})
}

// otherFd tells whether p names an open stream of the shell other than
// stdin (/dev/fd/3, /proc/self/fd/3): what it holds is not known here.
func otherFd(p string) bool {
	for _, prefix := range []string{"/dev/fd/", "/proc/self/fd/", "/proc/$$/fd/"} {
		if n, ok := strings.CutPrefix(p, prefix); ok && n != "0" {
			return true
		}
	}
	return false
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
