package judge

import (
	"bytes"
	"compress/gzip"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"io"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// lang is the language a program reads its code in.
type lang int

const (
	langShell lang = iota
	langPython
	langPerl
	langRuby
	langNode
	langPHP
	langLua
	langAwk
	langOther
)

// code judges text that a program runs as code, with positional holding
// $0, $1… for a shell.
func (w *walker) code(l lang, text string, c *ctx, positional []field, in data) data {
	if l != langShell {
		w.inline(l, text, c)
		return data{}
	}
	sc := c.env.clone()
	sc.loops = 0
	delete(sc.vars, "__hermes_dynamic")
	setPositional(sc, positional, true)
	return w.script(text, sc, in)
}

// setPositional sets $0 $1 … $# to what a caller passed: the rest are
// empty, and after an argument of unknown count nothing is known. Without
// known arguments (a function body judged where it is defined), none is.
func setPositional(sc *scope, positional []field, known bool) {
	delete(sc.vars, "0") // the shell's name, unless given
	for k := 1; k < 10; k++ {
		sc.vars[strconv.Itoa(k)] = value{"", known}
	}
	sc.vars["#"] = value{strconv.Itoa(max(len(positional)-1, 0)), known}
	for i, p := range positional {
		if p.split {
			sc.vars["#"] = value{}
			for k := i; k < 10; k++ {
				sc.vars[strconv.Itoa(k)] = value{}
			}
			return
		}
		if i < 10 {
			sc.vars[strconv.Itoa(i)] = value{p.lit, p.known}
		}
	}
}

// here judges code run by the current shell (eval, source): what it
// defines stays defined.
func (w *walker) here(f field, c *ctx) data {
	if !f.known {
		r := ruleGenerated
		if f.down {
			r = ruleDownloadShell
		}
		w.add(r, fieldText(f))
		w.quiet++
		defer func() { w.quiet-- }()
	}
	delete(c.sc.vars, "__hermes_dynamic")
	return w.script(f.lit, c.sc, c.in)
}

// codeField judges a string handed to a program as code; a string only
// known at run time asks, and is judged as far as it is known.
func (w *walker) codeField(f field, l lang, c *ctx, positional []field) data {
	if !f.known {
		r := ruleGenerated
		if f.down {
			r = ruleDownloadShell
		}
		w.add(r, fieldText(f))
		w.quiet++
		defer func() { w.quiet-- }()
	}
	return w.code(l, f.lit, c, positional, c.in)
}

// fromStdin judges a program that reads its code from standard input.
func (w *walker) fromStdin(l lang, c *ctx, what ...string) data {
	in := c.in
	label := strings.Join(what, " ")
	switch {
	case in.piped && in.download:
		w.add(ruleDownloadShell, "… | "+label)
	case in.piped:
		w.add(rulePipeShell, "… | "+label)
	case in.gen && in.download:
		w.add(ruleDownloadShell, label+" <<…")
	case in.gen:
		w.add(ruleGenerated, label+" <<…")
	}
	if in.known {
		return w.code(l, in.text, c, nil, data{})
	}
	return data{}
}

// scriptOperand judges a program run from the file named by f.
func (w *walker) scriptOperand(f field, l lang, c *ctx, rest []field, what ...string) data {
	positional := append([]field{f}, rest...)
	switch {
	case f.src != nil:
		if !f.src.known {
			r := ruleGenerated
			if f.src.download {
				r = ruleDownloadShell
			}
			w.add(r, strings.Join(what, " "))
			return data{}
		}
		return w.code(l, f.src.text, c, positional, c.in)
	case !f.known:
		if f.down {
			w.add(ruleDownloadShell, strings.Join(what, " "))
		}
		return data{}
	case f.lit == "-" || f.lit == "/dev/stdin" || f.lit == "/dev/fd/0" || f.lit == "/proc/self/fd/0":
		return w.fromStdin(l, c, what...)
	case otherFd(f.lit):
		w.add(ruleGenerated, strings.Join(what, " "))
		return data{}
	}
	if d, ok := c.sc.file(w.abs(f.lit, c.sc.cwd)); ok {
		return w.fileCode(l, d, c, positional, what...)
	}
	return data{}
}

// fileCode judges running a file this command wrote.
func (w *walker) fileCode(l lang, d data, c *ctx, positional []field, what ...string) data {
	if d.download {
		w.add(ruleDownloadShell, strings.Join(what, " "))
	}
	if d.text == "" {
		return data{}
	}
	return w.code(l, d.text, c, positional, c.in)
}

func hShell(w *walker, c *call) data {
	for _, name := range []string{"BASH_ENV", "ENV"} { // read by a shell as it starts
		if v, set := c.env.vars[name]; set && v.s != "" || set && !v.known {
			w.scriptOperand(field{lit: v.s, pat: escapePat(v.s), known: v.known}, langShell, c.ctx, nil, name+"="+v.s)
			if !v.known {
				c.flag(w, ruleGenerated)
			}
		}
	}
	args := c.args
	cmdMode, stdinMode := false, false
	i := 0
loop:
	for ; i < len(args); i++ {
		a := args[i]
		s := a.lit
		switch {
		case !a.known:
			break loop
		case s == "--" || s == "-":
			stdinMode = stdinMode || s == "-"
			i++
			break loop
		case strings.HasPrefix(s, "--"):
			name, val, eq := strings.Cut(s, "=")
			switch name {
			case "--rcfile", "--init-file", "--init-command":
				if !eq {
					i++
				}
			case "--command":
				if eq {
					return w.codeField(lit(val), langShell, c.ctx, args[i+1:])
				}
				cmdMode = true
			}
		case len(s) > 1 && (s[0] == '-' || s[0] == '+'):
			if s[0] == '-' && strings.ContainsRune(s[1:], 'c') {
				cmdMode = true
			}
			if s[0] == '-' && strings.ContainsRune(s[1:], 's') {
				stdinMode = true
			}
			if strings.ContainsAny(s[1:], "oO") {
				i++
			}
		default:
			break loop
		}
	}
	ops := args[min(i, len(args)):]
	switch {
	case cmdMode:
		if len(ops) == 0 {
			return data{}
		}
		return w.codeField(ops[0], langShell, c.ctx, ops[1:])
	case stdinMode || len(ops) == 0:
		return w.fromStdin(langShell, c.ctx, c.text())
	}
	return w.scriptOperand(ops[0], langShell, c.ctx, ops[1:], c.text())
}

func hEval(w *walker, c *call) data {
	args := c.args
	if len(args) > 0 && args[0].known && args[0].lit == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return emptyData
	}
	return w.here(joinFields(args), c.ctx)
}

func hSource(w *walker, c *call) data {
	_, ops := options(c.args, "", nil, false)
	if len(ops) == 0 {
		return emptyData
	}
	if f := ops[0]; f.known && f.src == nil && !f.glob {
		if d, ok := c.sc.file(w.abs(f.lit, c.sc.cwd)); ok { // a file this command wrote
			if d.download {
				c.flag(w, ruleDownloadShell)
			}
			return w.here(field{lit: d.text, known: true}, c.ctx)
		}
	}
	return w.scriptOperand(ops[0], langShell, c.ctx, ops[1:], c.text())
}

func hAlias(w *walker, c *call) data {
	for _, a := range c.args {
		if name, v, ok := strings.Cut(a.lit, "="); ok {
			w.codeField(field{lit: v, known: a.known, down: a.down}, langShell, c.ctx, nil)
			c.sc.aliases[name] = v
		}
	}
	return emptyData
}

// hSet sets the positional parameters (set -- a b, set a b).
func hSet(w *walker, c *call) data {
	args := c.args
	for len(args) > 0 && args[0].known && len(args[0].lit) > 1 && (args[0].lit[0] == '-' || args[0].lit[0] == '+') {
		a := args[0].lit
		args = args[1:]
		if a == "--" {
			setPositional(c.sc, append([]field{{}}, args...), true)
			return emptyData
		}
		if strings.HasSuffix(a, "o") && len(args) > 0 {
			args = args[1:]
		}
	}
	if len(args) > 0 {
		setPositional(c.sc, append([]field{{}}, args...), true)
	}
	return emptyData
}

func hShift(w *walker, c *call) data {
	n := 1
	if len(c.args) > 0 {
		var err error
		if n, err = strconv.Atoi(c.args[0].lit); err != nil || !c.args[0].known {
			setPositional(c.sc, nil, false)
			return emptyData
		}
	}
	count, err := strconv.Atoi(c.sc.get("#").s)
	if !c.sc.get("#").known || err != nil || n < 0 || n > count {
		setPositional(c.sc, nil, false)
		return emptyData
	}
	rest := []field{{}}
	for i := n + 1; i <= count && i < 10; i++ {
		v := c.sc.get(strconv.Itoa(i))
		rest = append(rest, field{lit: v.s, known: v.known})
	}
	if count >= 10 {
		setPositional(c.sc, nil, false)
		return emptyData
	}
	setPositional(c.sc, rest, true)
	return emptyData
}

// hParallel judges GNU parallel: each input is a command, or the
// arguments of the one given.
func hParallel(w *walker, c *call) data {
	args := c.args
	i := slices.IndexFunc(args, func(f field) bool { return f.known && (f.lit == ":::" || f.lit == "::::" || f.lit == ":::+") })
	var cmd, inputs []field
	if i < 0 {
		_, cmd = options(args, "jSaIdEn", []string{"--jobs", "--sshlogin", "--arg-file", "--delimiter", "--max-args"}, false)
	} else {
		_, cmd = options(args[:i], "jSaIdEn", []string{"--jobs", "--sshlogin", "--arg-file", "--delimiter", "--max-args"}, false)
		for _, f := range args[i+1:] {
			if !(f.known && strings.HasPrefix(f.lit, ":::")) {
				inputs = append(inputs, f)
			}
		}
	}
	if i < 0 { // inputs from stdin
		if len(cmd) == 0 {
			return w.fromStdin(langShell, c.ctx, c.text())
		}
		inputs = []field{{lit: dynMark, pat: "*", split: true}}
	}
	for _, in := range inputs[:min(len(inputs), maxLoopItems)] {
		if len(cmd) == 0 { // each input is a command line
			w.codeField(in, langShell, c.ctx, nil)
			continue
		}
		// with a command, inputs are quoted arguments of it; the command
		// itself is a command line
		line := joinFields(cmd)
		line.lit += " " + escapeArg(in)
		w.codeField(line, langShell, c.ctx, nil)
	}
	return data{}
}

// escapeArg quotes a field for the shell, keeping an unknown one unknown.
func escapeArg(f field) string {
	if !f.known {
		return dynMark
	}
	q, err := syntax.Quote(f.lit, syntax.LangBash)
	if err != nil {
		return "x"
	}
	return q
}

// hVim judges the shell commands of vim's -c and + commands (:!cmd).
func hVim(w *walker, c *call) data {
	for i, a := range c.args {
		cmd := ""
		switch {
		case a.known && a.lit == "-c" && i+1 < len(c.args):
			cmd = c.args[i+1].lit
		case a.known && strings.HasPrefix(a.lit, "+"):
			cmd = a.lit[1:]
		default:
			continue
		}
		if _, sh, ok := strings.Cut(cmd, "!"); ok {
			w.codeField(lit(sh), langShell, c.ctx, nil)
		}
	}
	return data{}
}

func hTrap(w *walker, c *call) data {
	_, ops := options(c.args, "", nil, false)
	if len(ops) >= 2 && ops[0].lit != "-" && ops[0].lit != "" {
		w.codeField(ops[0], langShell, c.ctx, nil)
	}
	return emptyData
}

// interp is how an interpreter takes its code on the command line.
type interp struct {
	lang     lang
	code     string   // short options whose value is code (-c, -e)
	longCode []string // long options whose value is code (--eval)
	value    string   // short options taking a value, attached or next
	attached string   // short options taking an optional attached value
	longVal  []string
	module   string // short options that run something else (-m module)
	inPlace  bool   // -i edits the files in place (perl, ruby)
	stdin    bool   // with no code and no script it reads code from stdin
}

func hInterpreter(w *walker, c *call) data {
	name := canonical(c.name)
	spec := interp{lang: langOther, code: "e"}
	if p := programFor(name); p.interp != nil {
		spec = *p.interp
	}
	args := c.args
	if name == "deno" { // deno eval CODE
		if len(args) >= 2 && args[0].lit == "eval" {
			return w.codeField(args[len(args)-1], langNode, c.ctx, nil)
		}
		return data{}
	}
	var codes []field
	stdin, inPlace, hasFile := false, false, false
	i := 0
loop:
	for ; i < len(args); i++ {
		a := args[i]
		s := a.lit
		switch {
		case !a.known || !strings.HasPrefix(s, "-"):
			break loop
		case s == "-":
			stdin = true
			break loop
		case s == "--":
			i++
			break loop
		case strings.HasPrefix(s, "--"):
			name, val, eq := strings.Cut(s, "=")
			switch {
			case slices.Contains(spec.longCode, name) && eq:
				codes = append(codes, lit(val))
			case slices.Contains(spec.longCode, name) && i+1 < len(args):
				codes = append(codes, args[i+1])
				i++
			case name == "--file" && spec.lang == langAwk:
				hasFile = true
				if !eq {
					i++
				}
			case slices.Contains(spec.longVal, name) && !eq:
				i++
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			ch := s[j]
			rest := s[j+1:]
			switch {
			case strings.IndexByte(spec.code, ch) >= 0:
				if rest != "" {
					codes = append(codes, lit(rest))
				} else if i+1 < len(args) {
					codes = append(codes, args[i+1])
					i++
				}
				continue loop
			case strings.IndexByte(spec.module, ch) >= 0:
				return data{}
			case ch == 'i' && spec.inPlace:
				inPlace = true
				continue loop
			case strings.IndexByte(spec.value, ch) >= 0:
				if spec.lang == langAwk && ch == 'f' {
					hasFile = true
				}
				if rest == "" {
					i++
				}
				continue loop
			case strings.IndexByte(spec.attached, ch) >= 0:
				continue loop
			}
		}
	}
	ops := args[min(i, len(args)):]
	if spec.lang == langAwk && len(codes) == 0 && !hasFile && len(ops) > 0 {
		codes, ops = ops[:1], ops[1:]
	}
	if len(codes) > 0 {
		for _, code := range codes {
			w.codeField(code, spec.lang, c.ctx, nil)
		}
		if inPlace {
			for _, f := range ops {
				for _, r := range w.writeRules(f, c.sc.cwd) {
					c.flag(w, r)
				}
			}
		}
		return data{download: c.in.download}
	}
	if hasFile {
		return data{}
	}
	if stdin || len(ops) == 0 {
		if spec.stdin {
			return w.fromStdin(spec.lang, c.ctx, c.text())
		}
		return data{}
	}
	return w.scriptOperand(ops[0], spec.lang, c.ctx, ops[1:], c.text())
}

// What inline code in other languages does with commands and files.
var (
	runsCommands = regexp.MustCompile(`(?i)\b(os\.(system|popen\d?|exec\w*|spawn\w*|fork|forkpty|posix_spawnp?|kill|killpg)|subprocess|commands\.get\w+|pty\.spawn|` +
		`__import__|importlib|getattr|exec|eval|system|popen\d?|spawn\w*|child_process|execsync|execfile\w*|shell_exec|passthru|` +
		`proc_open|pcntl_exec|fork|io\.popen|os\.execute|do\s+shell\s+script|open3|syscall)\b`)
	runsBackticks = regexp.MustCompile("`[^`]*`|\\bqx\\s*[{(\\[/]|%x[{(\\[]")
	awkRuns       = regexp.MustCompile(`\bsystem\s*\(|\|\s*getline|\|&|\bprintf?\b[^;{}]*\|\s*"`)
	strLit        = `[rbuf]{0,2}(?:"((?:\\.|[^"\\])*)"|'((?:\\.|[^'\\])*)')`
	shellStrings  = regexp.MustCompile(`\b(?:system|popen\d?|call|run|check_output|check_call|getoutput|getstatusoutput|Popen|exec|execSync|spawnSync|` +
		`shell_exec|passthru|execute|do\s+shell\s+script)\s*\(?\s*` + strLit)
	argvLists = regexp.MustCompile(`\b(?:run|call|check_output|check_call|Popen|execv\w*|execl\w*|spawnv\w*)\s*\(\s*(?:[\w.]+\s*,\s*)?\[([^\]]*)\]`)
	nodeSpawn = regexp.MustCompile(`\b(?:spawn|spawnSync|execFile|execFileSync)\s*\(\s*` + strLit + `\s*,\s*\[([^\]]*)\]`)
	rmTrees   = regexp.MustCompile(`\b(?:rmtree|rm_rf|rm_r|rmSync|rmdirSync|remove_tree|rmtree)\s*\(\s*` + strLit)
	rmFiles   = regexp.MustCompile(`\b(?:os\.remove|os\.unlink|unlink|unlinkSync|File\.delete|FileUtils\.rm|FileUtils\.rm_f)\s*\(\s*` + strLit)
	backticks = regexp.MustCompile("`([^`]*)`|\\bqx\\s*\\{([^}]*)\\}|%x\\{([^}]*)\\}|%x\\(([^)]*)\\)")
	strItems  = regexp.MustCompile(strLit)
)

// inline judges code in a language other than the shell: it asks when the
// code runs commands, and judges the commands written in it as literals.
func (w *walker) inline(l lang, text string, c *ctx) {
	label := clip(text)
	switch {
	case l == langAwk:
		if awkRuns.MatchString(text) {
			w.add(ruleInline, label)
		}
	case runsCommands.MatchString(text) || (l == langPerl || l == langRuby || l == langPHP) && runsBackticks.MatchString(text):
		w.add(ruleInline, label)
	}
	w.sqlText(text, label)
	sub := func() *ctx { sc := c.env.clone(); return &ctx{sc: sc, env: sc} }
	for _, m := range shellStrings.FindAllStringSubmatch(text, 16) {
		w.script(unquoteLit(m[1]+m[2]), sub().sc, data{})
	}
	if l == langPerl || l == langRuby || l == langPHP {
		for _, m := range backticks.FindAllStringSubmatch(text, 16) {
			w.script(m[1]+m[2]+m[3]+m[4], sub().sc, data{})
		}
	}
	for _, m := range argvLists.FindAllStringSubmatch(text, 16) {
		w.run(litItems(m[1]), sub())
	}
	for _, m := range nodeSpawn.FindAllStringSubmatch(text, 16) {
		w.run(append([]field{lit(unquoteLit(m[1] + m[2]))}, litItems(m[3])...), sub())
	}
	for _, m := range rmTrees.FindAllStringSubmatch(text, 16) {
		w.run([]field{lit("rm"), lit("-rf"), lit(unquoteLit(m[1] + m[2]))}, sub())
	}
	for _, m := range rmFiles.FindAllStringSubmatch(text, 16) {
		w.run([]field{lit("rm"), lit(unquoteLit(m[1] + m[2]))}, sub())
	}
}

func litItems(s string) []field {
	var out []field
	for _, m := range strItems.FindAllStringSubmatch(s, 64) {
		out = append(out, lit(unquoteLit(m[1]+m[2])))
	}
	return out
}

// unquoteLit resolves the common escapes of a string literal.
func unquoteLit(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			sb.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		default:
			sb.WriteByte(s[i])
		}
	}
	return sb.String()
}

// SQL that loses data, wherever a command carries it.
var sqlRules = []struct {
	re   *regexp.Regexp
	rule *Rule
}{
	{regexp.MustCompile(`(?i)\bDELETE\s+FROM\s+[^\s;]+\s*(;|$|"|')`), ruleDeleteFrom},
	{regexp.MustCompile(`(?i)\bDROP\s+(TABLE|DATABASE|SCHEMA)\b`), ruleDrop},
	{regexp.MustCompile(`(?i)\bTRUNCATE\s+(TABLE\s+)?\w`), ruleTruncate},
}

func (w *walker) sqlCheck(c *call, p *program) {
	if p.notSQL {
		return
	}
	text := c.text()
	w.sqlText(text, text)
	for _, a := range c.args {
		if a.known && strings.ContainsAny(a.lit, " \t\n") {
			w.sqlText(a.lit, text)
		}
	}
	if p.sql && c.in.known {
		w.sqlText(c.in.text, text)
	}
}

func (w *walker) sqlText(s, what string) {
	for _, r := range sqlRules {
		if r.re.MatchString(s) {
			w.add(r.rule, what)
		}
	}
}

// producers: commands whose output the judge can tell

func isEchoFlag(s string) bool {
	return len(s) > 1 && s[0] == '-' && strings.Trim(s[1:], "neE") == ""
}

func hEcho(w *walker, c *call) data {
	args := c.args
	newline, esc := true, false
	for len(args) > 0 && args[0].known && isEchoFlag(args[0].lit) {
		for _, ch := range args[0].lit[1:] {
			switch ch {
			case 'n':
				newline = false
			case 'e':
				esc = true
			case 'E':
				esc = false
			}
		}
		args = args[1:]
	}
	f := joinFields(args)
	if !f.known {
		return data{download: f.down}
	}
	text := f.lit
	if esc {
		if s, ok := format(strings.ReplaceAll(text, "%", "%%"), nil); ok {
			text = s
		}
	}
	if newline {
		text += "\n"
	}
	return data{text: text, known: true}
}

// format runs printf's format, recovering from whatever the formatter does
// with hostile input.
func format(f string, args []string) (s string, ok bool) {
	defer func() {
		if recover() != nil {
			s, ok = "", false
		}
	}()
	var sb strings.Builder
	for n := 0; n < 64; n++ {
		out, used, err := expand.Format(nil, f, args)
		if err != nil {
			return "", false
		}
		sb.WriteString(out)
		if sb.Len() > maxText {
			return "", false
		}
		if used == 0 || used >= len(args) {
			break
		}
		args = args[used:]
	}
	return sb.String(), true
}

func hPrintf(w *walker, c *call) data {
	args := c.args
	varName := ""
	if len(args) >= 2 && args[0].known && args[0].lit == "-v" {
		varName, args = args[1].lit, args[2:]
	}
	if len(args) > 0 && args[0].known && args[0].lit == "--" {
		args = args[1:]
	}
	out := data{}
	if len(args) > 0 && !slices.ContainsFunc(args, func(f field) bool { return !f.known }) {
		strs := make([]string, len(args)-1)
		for i, a := range args[1:] {
			strs[i] = a.lit
		}
		if s, ok := format(args[0].lit, strs); ok {
			out = data{text: s, known: true}
		}
	}
	if varName != "" {
		c.sc.vars[varName] = value{out.text, out.known}
		return emptyData
	}
	return out
}

// input is what a filter reads: its file operand, or its standard input.
func (w *walker) input(c *call, ops []field) data {
	if len(ops) == 0 || ops[0].known && ops[0].lit == "-" {
		in := c.in
		in.piped = false
		return in
	}
	f := ops[0]
	if f.src != nil {
		return *f.src
	}
	if f.known && !f.glob {
		if d, ok := c.sc.file(w.abs(f.lit, c.sc.cwd)); ok {
			return d
		}
	}
	return data{}
}

func hCat(w *walker, c *call) data {
	_, ops := options(c.args, "", nil, true)
	if len(ops) == 0 {
		return w.input(c, nil)
	}
	out := emptyData
	for _, f := range ops {
		out = concat(out, w.input(c, []field{f}))
	}
	return out
}

func hBase64(w *walker, c *call) data {
	opts, ops := options(c.args, "w", []string{"--wrap"}, true)
	in := w.input(c, ops)
	if !in.known {
		return data{download: in.download}
	}
	if !hasOpt(opts, "-d", "--decode", "-D") {
		return data{text: base64.StdEncoding.EncodeToString([]byte(in.text)) + "\n", known: true, download: in.download}
	}
	b, ok := decodeBase(in.text, c.name == "base32", hasOpt(opts, "-i", "--ignore-garbage"))
	if !ok {
		return data{download: in.download}
	}
	return data{text: string(b), known: true, download: in.download}
}

func decodeBase(s string, b32, garbage bool) ([]byte, bool) {
	alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_"
	if b32 {
		alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567="
	}
	s = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' || garbage && !strings.ContainsRune(alphabet, r) {
			return -1
		}
		return r
	}, s)
	if b32 {
		for _, enc := range []*base32.Encoding{base32.StdEncoding, base32.StdEncoding.WithPadding(base32.NoPadding)} {
			if b, err := enc.DecodeString(s); err == nil {
				return b, true
			}
		}
		return nil, false
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}

func hRev(w *walker, c *call) data {
	_, ops := options(c.args, "", nil, true)
	in := w.input(c, ops)
	if !in.known {
		return data{download: in.download}
	}
	lines := strings.Split(in.text, "\n")
	for i, l := range lines {
		r := []rune(l)
		slices.Reverse(r)
		lines[i] = string(r)
	}
	return data{text: strings.Join(lines, "\n"), known: true, download: in.download}
}

func hXxd(w *walker, c *call) data {
	opts, ops := options(c.args, "cglos", nil, true)
	in := w.input(c, ops)
	if !in.known || !hasOpt(opts, "-r") || !hasOpt(opts, "-p", "-ps", "-plain") {
		return data{download: in.download}
	}
	b, err := hex.DecodeString(strings.Join(strings.Fields(in.text), ""))
	if err != nil {
		return data{download: in.download}
	}
	return data{text: string(b), known: true, download: in.download}
}

// trSet expands a tr set (ranges, escapes, [:lower:] and [:upper:]).
func trSet(s string) ([]byte, bool) {
	var out []byte
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch >= 0x80:
			return nil, false
		case strings.HasPrefix(s[i:], "[:lower:]"):
			for c := byte('a'); c <= 'z'; c++ {
				out = append(out, c)
			}
			i += len("[:lower:]") - 1
			continue
		case strings.HasPrefix(s[i:], "[:upper:]"):
			for c := byte('A'); c <= 'Z'; c++ {
				out = append(out, c)
			}
			i += len("[:upper:]") - 1
			continue
		case strings.HasPrefix(s[i:], "[:"):
			return nil, false
		case ch == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				ch = '\n'
			case 't':
				ch = '\t'
			default:
				ch = s[i]
			}
		}
		if i+2 < len(s) && s[i+1] == '-' {
			hi := s[i+2]
			if hi < ch || hi >= 0x80 {
				return nil, false
			}
			for c := int(ch); c <= int(hi); c++ {
				out = append(out, byte(c))
			}
			i += 2
			continue
		}
		out = append(out, ch)
	}
	return out, true
}

func hTr(w *walker, c *call) data {
	opts, ops := options(c.args, "", nil, false)
	unknown := data{download: c.in.download}
	if !c.in.known || hasOpt(opts, "-c", "-C", "--complement", "-s", "--squeeze-repeats") || len(ops) == 0 ||
		slices.ContainsFunc(ops, func(f field) bool { return !f.known }) {
		return unknown
	}
	set1, ok := trSet(ops[0].lit)
	if !ok {
		return unknown
	}
	var m [256]int
	for i := range m {
		m[i] = i
	}
	if hasOpt(opts, "-d", "--delete") {
		for _, b := range set1 {
			m[b] = -1
		}
	} else {
		if len(ops) < 2 {
			return unknown
		}
		set2, ok := trSet(ops[1].lit)
		if !ok || len(set2) == 0 {
			return unknown
		}
		for i, b := range set1 {
			m[b] = int(set2[min(i, len(set2)-1)])
		}
	}
	out := make([]byte, 0, len(c.in.text))
	for i := 0; i < len(c.in.text); i++ {
		if v := m[c.in.text[i]]; v >= 0 {
			out = append(out, byte(v))
		}
	}
	return data{text: string(out), known: true, download: c.in.download}
}

func hGunzip(w *walker, c *call) data {
	opts, ops := options(c.args, "S", []string{"--suffix"}, true)
	if c.name == "gzip" && !hasOpt(opts, "-d", "--decompress", "--uncompress") {
		return data{download: c.in.download}
	}
	in := w.input(c, ops)
	if !in.known {
		return data{download: in.download}
	}
	r, err := gzip.NewReader(strings.NewReader(in.text))
	if err != nil {
		return data{download: in.download}
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(r, maxText)); err != nil {
		return data{download: in.download}
	}
	return data{text: buf.String(), known: true, download: in.download}
}

func whichOutput(ops []field) data {
	out := emptyData
	for _, f := range ops {
		if !f.known {
			return data{}
		}
		out.text += "/usr/bin/" + path.Base(f.lit) + "\n"
	}
	return out
}

// hPathname prints paths computed from its arguments (dirname, basename,
// realpath, pwd).
func hPathname(w *walker, c *call) data {
	opts, ops := options(c.args, "s", []string{"--suffix", "--relative-to", "--relative-base"}, true)
	name := canonical(c.name)
	if name == "pwd" {
		if c.sc.cwd == "" {
			return data{}
		}
		return data{text: c.sc.cwd + "\n", known: true}
	}
	if name == "readlink" && !hasOpt(opts, "-f", "-e", "-m", "--canonicalize", "--canonicalize-existing", "--canonicalize-missing") {
		return data{}
	}
	out := emptyData
	for _, f := range ops {
		if !f.known || f.glob {
			return data{}
		}
		switch name {
		case "dirname":
			out.text += path.Dir(f.lit) + "\n"
		case "basename":
			out.text += path.Base(f.lit) + "\n"
			if len(ops) == 2 && !hasOpt(opts, "-a", "--multiple") {
				return data{text: strings.TrimSuffix(path.Base(f.lit), ops[1].lit) + "\n", known: true}
			}
		default:
			p := w.abs(f.lit, c.sc.cwd)
			if !path.IsAbs(p) {
				return data{}
			}
			out.text += p + "\n"
		}
	}
	return out
}

func hWhich(w *walker, c *call) data {
	opts, ops := options(c.args, "", nil, true)
	if c.name == "type" && !hasOpt(opts, "-P", "-p") || c.name == "whereis" {
		return data{}
	}
	return whichOutput(ops)
}

// forkBombs names the functions of f that call themselves (directly or
// through each other) at least twice, at least once concurrently (&, a
// pipe) — whatever the functions are called.
func forkBombs(f *syntax.File) []string {
	decls := map[string]*syntax.FuncDecl{}
	syntax.Walk(f, func(n syntax.Node) bool {
		if d, ok := n.(*syntax.FuncDecl); ok {
			if d.Name != nil {
				decls[d.Name.Value] = d
			}
			for _, n := range d.Names {
				decls[n.Value] = d
			}
		}
		return true
	})
	if len(decls) == 0 {
		return nil
	}
	type fcall struct {
		name       string
		conc, loop bool
	}
	calls := map[string][]fcall{}
	for name, d := range decls {
		var out []fcall
		var visit func(n syntax.Node, conc, loop bool)
		visit = func(n syntax.Node, conc, loop bool) {
			syntax.Walk(n, func(m syntax.Node) bool {
				if m == n {
					return true
				}
				switch m := m.(type) {
				case *syntax.Stmt:
					if m.Background || m.Coprocess || m.Disown {
						visit(m, true, loop)
						return false
					}
				case *syntax.BinaryCmd:
					if m.Op == syntax.Pipe || m.Op == syntax.PipeAll {
						visit(m.X, true, loop)
						visit(m.Y, true, loop)
						return false
					}
				case *syntax.WhileClause, *syntax.ForClause:
					visit(m, conc, true)
					return false
				case *syntax.CoprocClause:
					visit(m, true, loop)
					return false
				case *syntax.FuncDecl:
					return false
				case *syntax.CallExpr:
					for _, a := range m.Args {
						s := staticLit(a)
						if s == "nohup" || s == "exec" || s == "command" || s == "builtin" || s == "nice" || s == "setsid" || s == "time" {
							continue
						}
						if s != "" {
							out = append(out, fcall{s, conc, loop})
						}
						break
					}
				}
				return true
			})
		}
		visit(d.Body, false, false)
		calls[name] = out
	}
	// reaching[f]: the functions from which f can be called, f included.
	callers := map[string][]string{}
	for from, cs := range calls {
		for _, c := range cs {
			if decls[c.name] != nil {
				callers[c.name] = append(callers[c.name], from)
			}
		}
	}
	var bombs []string
	for name := range decls {
		reaching := map[string]bool{name: true}
		stack := []string{name}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, from := range callers[n] {
				if !reaching[from] {
					reaching[from] = true
					stack = append(stack, from)
				}
			}
		}
		weight, conc := 0, false
		for _, c := range calls[name] {
			if !reaching[c.name] {
				continue
			}
			weight++
			if c.loop {
				weight++
			}
			conc = conc || c.conc
		}
		if weight >= 2 && conc {
			bombs = append(bombs, name)
		}
	}
	slices.Sort(bombs)
	return bombs
}

// staticLit is a word whose value needs no expansion, or "".
func staticLit(w *syntax.Word) string {
	var sb strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			sb.WriteString(unbackslash(p.Value))
		case *syntax.SglQuoted:
			v := p.Value
			if p.Dollar {
				v = ansiC(v)
			}
			sb.WriteString(v)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return ""
				}
				sb.WriteString(l.Value)
			}
		default:
			return ""
		}
	}
	return sb.String()
}

// unbackslash resolves the backslash escapes of an unquoted word.
func unbackslash(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}
