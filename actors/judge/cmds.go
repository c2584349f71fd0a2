package judge

import (
	"path"
	"slices"
	"strconv"
	"strings"
)

// ctx is where a simple command runs.
type ctx struct {
	sc  *scope // the shell running it
	env *scope // what the programs it starts inherit (with its assignments)
	in  data   // its standard input
	via string // "xargs" or "find" when those start it
}

// call is one simple command with its name resolved.
type call struct {
	*ctx
	name string // as written, without a path
	args []field
}

func fieldText(f field) string {
	return strings.ReplaceAll(f.lit, dynMark, "$(…)")
}

func argvText(argv []field) string {
	parts := make([]string, len(argv))
	for i, f := range argv {
		parts[i] = fieldText(f)
	}
	return strings.Join(parts, " ")
}

func (c *call) text() string {
	if len(c.args) == 0 {
		return c.name
	}
	return c.name + " " + argvText(c.args)
}

func (c *call) flag(w *walker, r *Rule) { w.add(r, c.text()) }

func lit(s string) field { return field{lit: s, pat: escapePat(s), known: true} }

func escapePat(s string) string {
	if !strings.ContainsAny(s, "*?[\\") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if isGlobMeta(s[i]) {
			sb.WriteByte('\\')
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

type kind int

const (
	kindNormal  kind = iota
	kindWrapper      // runs another command: that one is judged
	kindText         // treats its arguments as text, not code or SQL
)

type handler func(w *walker, c *call) data

// run judges one simple command given as fields.
func (w *walker) run(argv []field, c *ctx) data {
	if w.tick() {
		return data{}
	}
	if len(argv) == 0 {
		return emptyData
	}
	a0 := argv[0]
	if !a0.known && !a0.split && !a0.glob {
		// "$(go env GOPATH)/bin/tool": the directory is unknown, the
		// program is not.
		if i := strings.LastIndexByte(a0.lit, '/'); i >= 0 && !strings.Contains(a0.lit[i:], dynMark) && a0.lit[i+1:] != "" {
			a0 = lit(a0.lit[i+1:])
			argv = append([]field{a0}, argv[1:]...)
		}
	}
	if !a0.known || a0.glob {
		return w.dynamicName(argv, c)
	}
	name := a0.lit
	if body := c.sc.funcs[name]; body != nil && !w.calling[name] { // a function: judge its body with these arguments
		if w.calling == nil {
			w.calling = map[string]bool{}
		}
		w.calling[name] = true
		b := c.sc.clone()
		setPositional(b, append([]field{{}}, argv[1:]...), true)
		w.stmt(body, b, c.in)
		c.sc.merge(b)
		delete(w.calling, name)
	}
	if v, ok := c.sc.aliases[name]; ok && !w.calling["alias "+name] {
		if w.calling == nil {
			w.calling = map[string]bool{}
		}
		w.calling["alias "+name] = true
		w.codeField(joinFields(append([]field{lit(v)}, argv[1:]...)), langShell, c, nil)
		delete(w.calling, "alias "+name)
	}
	if strings.Contains(name, "/") {
		p := w.abs(name, c.sc.cwd)
		if d, ok := c.sc.file(p); ok { // a script this command wrote
			return w.fileCode(langShell, d, c, argv, argvText(argv))
		}
		if !path.IsAbs(p) { // ./script: a program of the project
			return data{download: c.in.download}
		}
		if strings.HasPrefix(p, "/etc/init.d/") || strings.HasPrefix(p, "/etc/rc.d/") {
			cl := &call{ctx: c, name: name, args: argv[1:]}
			if len(cl.args) > 0 && cl.args[0].known && serviceStops[cl.args[0].lit] {
				cl.flag(w, ruleService)
			}
			return data{}
		}
		name = path.Base(p)
	}
	cl := &call{ctx: c, name: name, args: argv[1:]}
	p := programFor(canonical(name))
	out := data{download: c.in.download || p.download}
	if p.run != nil {
		out = p.run(w, cl)
	}
	if p.kind != kindWrapper {
		if p.kind != kindText {
			w.sqlCheck(cl, p)
		}
		if !p.noRead {
			for i, a := range cl.args {
				// a key given with -i logs in (scp, rsync -e); a string with
				// blanks is not a path
				if i > 0 && cl.args[i-1].lit == "-i" || strings.ContainsAny(a.lit, " \t\n") {
					continue
				}
				w.readPath(a, c.sc, cl.text())
			}
		}
	}
	return out
}

func (w *walker) dynamicName(argv []field, c *ctx) data {
	a0 := argv[0]
	text := argvText(argv)
	// An unknown name that is all a parameter is reported, except in code
	// already reported as generated and in a function body judged without
	// its arguments (each call judges it again with them).
	if w.quiet == 0 && w.defining == 0 || a0.lit != dynMark {
		w.add(ruleDynamic, text)
	}
	if a0.down {
		w.add(ruleDownloadShell, text)
	}
	if base := path.Base(a0.pat); strings.ContainsFunc(base, func(r rune) bool { return !strings.ContainsRune("*?[]\\", r) }) {
		for _, n := range guessNames {
			if matches(base, n) {
				w.run(append([]field{lit(n)}, argv[1:]...), c)
			}
		}
	}
	// It may be a wrapper (sudo, env) or a shell: judge what it would run.
	for i := 1; i+1 < len(argv); i++ {
		if argv[i].known && argv[i].lit == "-c" {
			w.codeField(argv[i+1], langShell, c, argv[i+2:])
			break
		}
	}
	if len(argv) > 1 {
		w.run(argv[1:], c)
	}
	return data{download: c.in.download || a0.down}
}

// opt is one option of a command line.
type opt struct {
	name string // -x or --name
	val  field
	has  bool
}

// options splits args GNU style into options and operands. shortVal lists
// the short options that take a value, longVal the long ones that take the
// next argument (--name=value is always understood). With permute, options
// may follow operands; otherwise the first operand ends them.
func options(args []field, shortVal string, longVal []string, permute bool) (opts []opt, operands []field) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		s := a.lit
		if !a.known || s == "-" || !strings.HasPrefix(s, "-") {
			operands = append(operands, a)
			if !permute {
				return opts, append(operands, args[i+1:]...)
			}
			continue
		}
		if s == "--" {
			return opts, append(operands, args[i+1:]...)
		}
		if strings.HasPrefix(s, "--") {
			name, val, eq := strings.Cut(s, "=")
			switch {
			case eq:
				opts = append(opts, opt{name, lit(val), true})
			case slices.Contains(longVal, name) && i+1 < len(args):
				opts = append(opts, opt{name, args[i+1], true})
				i++
			default:
				opts = append(opts, opt{name: name})
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			name := "-" + s[j:j+1]
			if strings.IndexByte(shortVal, s[j]) < 0 {
				opts = append(opts, opt{name: name})
				continue
			}
			if j+1 < len(s) {
				opts = append(opts, opt{name, lit(s[j+1:]), true})
			} else if i+1 < len(args) {
				opts = append(opts, opt{name, args[i+1], true})
				i++
			} else {
				opts = append(opts, opt{name: name})
			}
			break
		}
	}
	return opts, operands
}

func hasOpt(opts []opt, names ...string) bool {
	for _, o := range opts {
		if slices.Contains(names, o.name) {
			return true
		}
	}
	return false
}

func optVal(opts []opt, names ...string) (field, bool) {
	var v field
	found := false
	for _, o := range opts {
		if o.has && slices.Contains(names, o.name) {
			v, found = o.val, true
		}
	}
	return v, found
}

// longIs tells whether name is an accepted abbreviation of the long option full.
func longIs(name, full string) bool {
	return len(name) >= 3 && strings.HasPrefix(full, name)
}

func anySplit(fs []field) bool {
	return slices.ContainsFunc(fs, func(f field) bool { return f.split })
}

func wrapper(shortVal string, longVal []string) handler {
	return func(w *walker, c *call) data {
		_, ops := options(c.args, shortVal, longVal, false)
		return w.run(ops, c.ctx)
	}
}

// skipWrapper makes a wrapper whose first n operands come before the
// command (timeout DURATION, chroot DIR).
func skipWrapper(shortVal string, longVal []string, n int) handler {
	return func(w *walker, c *call) data {
		_, ops := options(c.args, shortVal, longVal, false)
		if len(ops) <= n {
			return emptyData
		}
		return w.run(ops[n:], c.ctx)
	}
}

func flagAll(r *Rule) handler {
	return func(w *walker, c *call) data {
		c.flag(w, r)
		return data{}
	}
}

func hSudo(w *walker, c *call) data {
	args := c.args
	shell, edit := false, false
	i := 0
loop:
	for ; i < len(args); i++ {
		a := args[i]
		s := a.lit
		switch {
		case !a.known || !strings.HasPrefix(s, "-"):
			break loop
		case s == "--":
			i++
			break loop
		case strings.HasPrefix(s, "--"):
			name, _, eq := strings.Cut(s, "=")
			switch name {
			case "--shell", "--login":
				shell = true
			case "--edit":
				edit = true
			case "--user", "--group", "--host", "--prompt", "--close-from", "--role", "--type", "--other-user", "--chdir", "--chroot", "--command-timeout":
				if !eq {
					i++
				}
			}
		default:
			for j := 1; j < len(s); j++ {
				switch s[j] {
				case 's', 'i':
					shell = true
				case 'e':
					edit = true
				case 'u', 'g', 'h', 'p', 'C', 'r', 't', 'U', 'D', 'R', 'T':
					if j == len(s)-1 {
						i++
					}
					continue loop
				}
			}
		}
	}
	if i > len(args) {
		return emptyData
	}
	rest := args[i:]
	env := c.env
	for len(rest) > 0 && rest[0].known && isAssignment(rest[0].lit) {
		if env == c.env {
			env = c.env.clone()
		}
		n, v, _ := strings.Cut(rest[0].lit, "=")
		env.vars[n] = value{v, true}
		rest = rest[1:]
	}
	cx := *c.ctx
	cx.env = env
	switch {
	case edit:
		for _, f := range rest {
			w.writePath(f, c.sc, "sudoedit "+fieldText(f))
		}
		return emptyData
	case shell && len(rest) > 0:
		return w.codeField(joinFields(rest), langShell, &cx, nil)
	case shell:
		return w.fromStdin(langShell, &cx)
	}
	return w.run(rest, &cx)
}

func hSudoedit(w *walker, c *call) data {
	_, ops := options(c.args, "ugCpr", nil, true)
	for _, f := range ops {
		w.writePath(f, c.sc, "sudoedit "+fieldText(f))
	}
	return emptyData
}

func isAssignment(s string) bool {
	n, _, ok := strings.Cut(s, "=")
	return ok && n != "" && validName(n)
}

func validName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// joinFields makes one field of several, as eval, ssh and sudo -s do.
func joinFields(fs []field) field {
	out := field{known: true}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.lit
		out.known = out.known && f.known
		out.down = out.down || f.down
	}
	out.lit = strings.Join(parts, " ")
	out.pat = escapePat(out.lit)
	return out
}

func hEnv(w *walker, c *call) data {
	args := c.args
	env := c.env.clone()
	cx := *c.ctx
	cx.env = env
	for i := 0; i < len(args); i++ {
		a := args[i]
		s := a.lit
		switch {
		case !a.known:
			return w.run(args[i:], &cx)
		case s == "--":
			return w.run(args[i+1:], &cx)
		case s == "-S" || s == "--split-string":
			if i+1 < len(args) {
				return w.codeField(joinFields(args[i+1:]), langShell, &cx, nil)
			}
			return emptyData
		case strings.HasPrefix(s, "--split-string="):
			return w.codeField(joinFields(append([]field{lit(s[len("--split-string="):])}, args[i+1:]...)), langShell, &cx, nil)
		case strings.HasPrefix(s, "-S"):
			return w.codeField(joinFields(append([]field{lit(s[2:])}, args[i+1:]...)), langShell, &cx, nil)
		case s == "-C" || s == "--chdir":
			if i+1 < len(args) {
				cx.sc = c.sc.clone()
				hCd(w, &call{ctx: &cx, name: "cd", args: args[i+1 : i+2]})
			}
			i++
		case s == "-u" || s == "--unset" || s == "-P":
			i++
		case strings.HasPrefix(s, "-"):
		case isAssignment(s):
			n, v, _ := strings.Cut(s, "=")
			env.vars[n] = value{v, true}
		default:
			return w.run(args[i:], &cx)
		}
	}
	return emptyData
}

func hCommand(w *walker, c *call) data {
	opts, ops := options(c.args, "", nil, false)
	if hasOpt(opts, "-v", "-V") {
		return whichOutput(ops)
	}
	return w.run(ops, c.ctx)
}

func hIonice(w *walker, c *call) data {
	opts, ops := options(c.args, "cnPu", []string{"--class", "--classdata", "--pgid", "--uid"}, false)
	if hasOpt(opts, "-p", "--pid", "-P", "--pgid", "-u", "--uid") {
		return emptyData
	}
	return w.run(ops, c.ctx)
}

func hChrt(w *walker, c *call) data {
	opts, ops := options(c.args, "TPD", []string{"--sched-runtime", "--sched-period", "--sched-deadline"}, false)
	if hasOpt(opts, "-p", "--pid", "-m", "--max") || len(ops) < 2 {
		return emptyData
	}
	return w.run(ops[1:], c.ctx)
}

func hTaskset(w *walker, c *call) data {
	opts, ops := options(c.args, "", nil, false)
	if hasOpt(opts, "-p", "--pid") || len(ops) < 2 {
		return emptyData
	}
	return w.run(ops[1:], c.ctx)
}

func hTrace(w *walker, c *call) data {
	_, ops := options(c.args, "oepsaAbEIOPSuX", nil, false)
	return w.run(ops, c.ctx)
}

func hFlock(w *walker, c *call) data {
	opts, ops := options(c.args, "wEc", []string{"--timeout", "--conflict-exit-code", "--command"}, false)
	if code, ok := optVal(opts, "-c", "--command"); ok {
		return w.codeField(code, langShell, c.ctx, nil)
	}
	if len(ops) < 2 {
		return emptyData
	}
	if ops[1].known && (ops[1].lit == "-c" || ops[1].lit == "--command") { // flock FILE -c CMD
		if len(ops) > 2 {
			return w.codeField(ops[2], langShell, c.ctx, nil)
		}
		return emptyData
	}
	return w.run(ops[1:], c.ctx)
}

func hWatch(w *walker, c *call) data {
	opts, ops := options(c.args, "nq", []string{"--interval", "--equexit"}, false)
	if len(ops) == 0 {
		return emptyData
	}
	if hasOpt(opts, "-x", "--exec") {
		return w.run(ops, c.ctx)
	}
	return w.codeField(joinFields(ops), langShell, c.ctx, nil)
}

func hScript(w *walker, c *call) data {
	opts, _ := options(c.args, "cEIOTBm", []string{"--command", "--echo", "--log-in", "--log-out", "--log-timing", "--log-io", "--logging-format"}, true)
	if code, ok := optVal(opts, "-c", "--command"); ok {
		return w.codeField(code, langShell, c.ctx, nil)
	}
	return emptyData
}

func hSu(w *walker, c *call) data {
	opts, ops := options(c.args, "cCsgGuw", []string{"--command", "--session-command", "--shell", "--group", "--supp-group", "--user", "--whitelist-environment"}, true)
	if code, ok := optVal(opts, "-c", "-C", "--command", "--session-command"); ok {
		return w.codeField(code, langShell, c.ctx, nil)
	}
	if _, ok := optVal(opts, "-u", "--user"); ok && len(ops) > 0 { // runuser -u user -- cmd
		return w.run(ops, c.ctx)
	}
	if len(ops) == 0 && c.in.piped {
		return w.fromStdin(langShell, c.ctx)
	}
	return emptyData
}

func hSg(w *walker, c *call) data {
	_, ops := options(c.args, "", nil, false)
	if len(ops) < 2 {
		return emptyData
	}
	rest := ops[1:]
	if rest[0].known && rest[0].lit == "-c" {
		rest = rest[1:]
	}
	return w.codeField(joinFields(rest), langShell, c.ctx, nil)
}

func hAt(w *walker, c *call) data {
	opts, _ := options(c.args, "qfmMtbrdl", nil, true)
	if f, ok := optVal(opts, "-f"); ok {
		return w.scriptOperand(f, langShell, c.ctx, nil)
	}
	if hasOpt(opts, "-l", "-r", "-d", "-c") {
		return data{}
	}
	return w.fromStdin(langShell, c.ctx)
}

func hSSH(w *walker, c *call) data {
	_, ops := options(c.args, "BbcDEeFIiJLlmOoPpQRSWw", nil, false)
	if len(ops) == 0 {
		return data{}
	}
	remote := w.topScope()
	remote.cwd = homeMark
	delete(remote.vars, "PWD")
	cx := &ctx{sc: remote, env: remote, in: c.in}
	if len(ops) == 1 {
		if c.in.piped || c.in.known {
			w.fromStdin(langShell, cx, c.text())
		}
		return data{download: true}
	}
	w.codeField(joinFields(ops[1:]), langShell, cx, nil)
	return data{download: true}
}

func hCd(w *walker, c *call) data {
	_, ops := options(c.args, "", nil, false)
	switch {
	case len(ops) == 0:
		c.sc.cwd = homeMark
	case !ops[0].known || ops[0].glob || ops[0].lit == "-":
		c.sc.cwd = ""
	default:
		p := w.abs(ops[0].lit, c.sc.cwd)
		if !path.IsAbs(p) {
			p = ""
		}
		c.sc.cwd = p
	}
	if c.sc.cwd == "" {
		c.sc.vars["PWD"] = value{}
	} else {
		c.sc.vars["PWD"] = value{c.sc.cwd, true}
	}
	return emptyData
}

func hUnset(w *walker, c *call) data {
	opts, ops := options(c.args, "", nil, true)
	if hasOpt(opts, "-f") {
		return emptyData
	}
	for _, f := range ops {
		if f.known && validName(f.lit) {
			c.sc.vars[f.lit] = value{"", true}
		}
	}
	return emptyData
}

func hRead(w *walker, c *call) data {
	_, ops := options(c.args, "adeinNptuCcOs", nil, true)
	for _, f := range ops {
		if f.known {
			c.sc.vars[f.lit] = value{}
		}
	}
	c.sc.vars["REPLY"] = value{}
	return emptyData
}

func hExport(w *walker, c *call) data {
	_, ops := options(c.args, "", nil, true)
	for _, f := range ops {
		if f.known && isAssignment(f.lit) {
			n, v, _ := strings.Cut(f.lit, "=")
			c.sc.vars[n] = value{v, true}
		} else if n, _, ok := strings.Cut(f.lit, "="); ok && validName(n) {
			c.sc.vars[n] = value{}
		}
	}
	return emptyData
}

// rm and friends

func hRm(w *walker, c *call) data {
	opts, ops := options(c.args, "", nil, true)
	rec := c.via == "find"
	for _, o := range opts {
		if o.name == "-r" || o.name == "-R" || longIs(o.name, "--recursive") {
			rec = true
		}
	}
	maybe := rec || anySplit(c.args)
	for _, f := range ops {
		switch {
		case maybe && w.protected(f, c.sc.cwd):
			c.flag(w, ruleRootDelete)
		case w.inAgentHome(f, c.sc.cwd):
			c.flag(w, ruleAgentHomeDelete)
		default:
			for _, r := range w.writeRules(f, c.sc.cwd) {
				c.flag(w, r)
			}
		}
	}
	switch {
	case c.via == "xargs":
		c.flag(w, ruleXargsRm)
	case c.via == "find":
		c.flag(w, ruleFindRm)
	case rec && len(ops) > 0:
		c.flag(w, ruleRecursiveDelete)
	}
	return emptyData
}

func hShred(w *walker, c *call) data {
	_, ops := options(c.args, "nsx", []string{"--iterations", "--size", "--random-source", "--remove"}, true)
	for _, f := range ops {
		if w.inAgentHome(f, c.sc.cwd) {
			c.flag(w, ruleAgentHomeDelete)
			continue
		}
		for _, r := range w.writeRules(f, c.sc.cwd) {
			c.flag(w, r)
		}
	}
	return emptyData
}

// writeDest judges copying srcs onto dest (a file, or a directory they go into).
func (w *walker) writeDest(c *call, dest field, srcs []field) {
	for _, r := range w.writeRules(dest, c.sc.cwd) {
		c.flag(w, r)
	}
	if !dest.known || dest.glob {
		return
	}
	for _, s := range srcs {
		if !s.known || s.glob {
			continue
		}
		f := lit(strings.TrimSuffix(dest.lit, "/") + "/" + path.Base(s.lit))
		for _, r := range w.writeRules(f, c.sc.cwd) {
			c.flag(w, r)
		}
	}
}

func destAndSources(opts []opt, ops []field) (dest field, srcs []field, ok bool) {
	if t, found := optVal(opts, "-t", "--target-directory"); found {
		return t, ops, true
	}
	if len(ops) < 2 {
		return field{}, nil, false
	}
	return ops[len(ops)-1], ops[:len(ops)-1], true
}

func hMv(w *walker, c *call) data {
	opts, ops := options(c.args, "tS", []string{"--target-directory", "--suffix"}, true)
	dest, srcs, ok := destAndSources(opts, ops)
	if !ok {
		return emptyData
	}
	for _, s := range srcs {
		switch {
		case w.protected(s, c.sc.cwd):
			c.flag(w, ruleRootDelete)
		case w.inAgentHome(s, c.sc.cwd):
			c.flag(w, ruleAgentHomeDelete)
		default:
			for _, r := range w.writeRules(s, c.sc.cwd) {
				c.flag(w, r)
			}
		}
	}
	if dest.known && w.abs(dest.lit, c.sc.cwd) == "/dev/null" {
		c.flag(w, ruleDevNull)
		return emptyData
	}
	w.writeDest(c, dest, srcs)
	return emptyData
}

func hCp(w *walker, c *call) data {
	opts, ops := options(c.args, "tSmogZ", []string{"--target-directory", "--suffix", "--mode", "--owner", "--group"}, true)
	if hasOpt(opts, "-d") && c.name == "install" {
		for _, f := range ops {
			for _, r := range w.writeRules(f, c.sc.cwd) {
				c.flag(w, r)
			}
		}
		return emptyData
	}
	if dest, srcs, ok := destAndSources(opts, ops); ok {
		w.writeDest(c, dest, srcs)
	}
	return emptyData
}

func hLn(w *walker, c *call) data {
	opts, ops := options(c.args, "tS", []string{"--target-directory", "--suffix"}, true)
	if len(ops) == 1 {
		if _, ok := optVal(opts, "-t", "--target-directory"); !ok {
			if ops[0].known {
				w.writeDest(c, lit(path.Base(ops[0].lit)), nil)
			}
			return emptyData
		}
	}
	if dest, srcs, ok := destAndSources(opts, ops); ok {
		w.writeDest(c, dest, srcs)
		if len(srcs) == 1 && srcs[0].known && !srcs[0].glob && dest.known && !dest.glob {
			link := w.abs(dest.lit, c.sc.cwd)
			target := srcs[0].lit
			if !path.IsAbs(target) {
				target = path.Dir(link) + "/" + target
			}
			w.link(link, w.abs(target, c.sc.cwd))
		}
	}
	return emptyData
}

// remotePath is the path part of host:path, relative to the remote home.
func remotePath(f field) (field, bool) {
	if !f.known {
		return f, false
	}
	i := strings.IndexByte(f.lit, ':')
	if i <= 0 || strings.Contains(f.lit[:i], "/") {
		return f, false
	}
	p := f.lit[i+1:]
	switch {
	case strings.HasPrefix(p, "~/"):
		p = homeMark + p[1:]
	case p == "" || p == "~":
		p = homeMark
	case !strings.HasPrefix(p, "/"):
		p = homeMark + "/" + p
	}
	return lit(p), true
}

func hRsync(w *walker, c *call) data {
	opts, ops := options(c.args, "efBTM", []string{"--rsh", "--filter", "--exclude", "--include", "--exclude-from", "--include-from",
		"--temp-dir", "--log-file", "--password-file", "--rsync-path", "--files-from", "--backup-dir", "--suffix", "--chmod",
		"--compare-dest", "--copy-dest", "--link-dest", "--bwlimit", "--timeout", "--port", "--out-format", "--remote-option"}, true)
	if rsh, ok := optVal(opts, "-e", "--rsh"); ok {
		w.codeField(rsh, langShell, c.ctx, nil)
	}
	if len(ops) < 2 {
		return emptyData
	}
	dest, srcs := ops[len(ops)-1], ops[:len(ops)-1]
	if rp, remote := remotePath(dest); remote {
		w.writeDest(c, rp, srcs)
		return emptyData
	}
	deletes := slices.ContainsFunc(opts, func(o opt) bool { return strings.HasPrefix(o.name, "--delete") || o.name == "--remove-source-files" })
	if deletes && w.protected(dest, c.sc.cwd) {
		c.flag(w, ruleRootDelete)
	}
	w.writeDest(c, dest, srcs)
	return emptyData
}

func hScp(w *walker, c *call) data {
	_, ops := options(c.args, "cDFiJloPSX", nil, true)
	if len(ops) < 2 {
		return emptyData
	}
	dest, srcs := ops[len(ops)-1], ops[:len(ops)-1]
	if rp, remote := remotePath(dest); remote {
		dest = rp
	}
	w.writeDest(c, dest, srcs)
	return emptyData
}

func hDD(w *walker, c *call) data {
	for _, a := range c.args {
		k, v, ok := strings.Cut(a.lit, "=")
		if !ok {
			continue
		}
		f := a
		f.lit, f.pat = v, strings.TrimPrefix(a.pat, k+"=")
		switch k {
		case "of":
			if f.known && !f.glob && isDiskDevice(w.abs(v, c.sc.cwd)) {
				c.flag(w, ruleDD)
				continue
			}
			for _, r := range w.writeRules(f, c.sc.cwd) {
				if r == ruleDisk {
					r = ruleDD
				}
				c.flag(w, r)
			}
		case "if":
			w.readPath(f, c.sc, c.text())
		}
	}
	return data{}
}

func hTee(w *walker, c *call) data {
	opts, ops := options(c.args, "", []string{"--output-error"}, true)
	appendMode := hasOpt(opts, "-a", "--append")
	for _, f := range ops {
		for _, r := range w.writeRules(f, c.sc.cwd) {
			c.flag(w, r)
		}
		if f.known && !f.glob {
			c.sc.write(w.abs(f.lit, c.sc.cwd), c.in, appendMode)
		}
	}
	out := c.in
	out.piped = false
	return out
}

func hTruncate(w *walker, c *call) data {
	_, ops := options(c.args, "sr", []string{"--size", "--reference"}, true)
	for _, f := range ops {
		for _, r := range w.writeRules(f, c.sc.cwd) {
			c.flag(w, r)
		}
	}
	return emptyData
}

func hSed(w *walker, c *call) data {
	inPlace, scripts := false, 0
	var ops []field
	args := c.args
	for i := 0; i < len(args); i++ {
		a := args[i]
		s := a.lit
		switch {
		case !a.known || s == "-" || !strings.HasPrefix(s, "-"):
			ops = append(ops, a)
		case s == "--":
			ops = append(ops, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(s, "--"):
			name, _, eq := strings.Cut(s, "=")
			switch name {
			case "--in-place":
				inPlace = true
			case "--expression", "--file":
				scripts++
				if !eq {
					i++
				}
			case "--line-length":
				if !eq {
					i++
				}
			}
		default:
		bundle:
			for j := 1; j < len(s); j++ {
				switch s[j] {
				case 'i':
					inPlace = true
					break bundle
				case 'e', 'f':
					scripts++
					if j == len(s)-1 {
						i++
					}
					break bundle
				case 'l':
					if j == len(s)-1 {
						i++
					}
					break bundle
				}
			}
		}
	}
	if scripts == 0 && len(ops) > 0 {
		ops = ops[1:]
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

func hTar(w *walker, c *call) data {
	extract := false
	var dir *field
	args := c.args
	for i := 0; i < len(args); i++ {
		a := args[i]
		s := a.lit
		switch {
		case !a.known:
		case i == 0 && !strings.HasPrefix(s, "-"):
			extract = strings.ContainsAny(s, "x")
		case s == "-C" || s == "--directory":
			if i+1 < len(args) {
				dir = &args[i+1]
				i++
			}
		case strings.HasPrefix(s, "--directory="):
			f := lit(s[len("--directory="):])
			dir = &f
		case s == "--extract" || s == "--get":
			extract = true
		case strings.HasPrefix(s, "--checkpoint-action=exec=") || strings.HasPrefix(s, "--to-command=") || strings.HasPrefix(s, "--use-compress-program=") ||
			strings.HasPrefix(s, "--rsh-command=") || strings.HasPrefix(s, "--info-script=") || strings.HasPrefix(s, "--new-volume-script="):
			_, code, _ := strings.Cut(s, "=")
			code = strings.TrimPrefix(code, "exec=")
			w.codeField(lit(code), langShell, c.ctx, nil)
		case strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--"):
			if strings.ContainsRune(s, 'x') {
				extract = true
			}
			if strings.HasSuffix(s, "C") && i+1 < len(args) {
				dir = &args[i+1]
				i++
			}
		}
	}
	if extract && dir != nil {
		for _, r := range w.writeRules(*dir, c.sc.cwd) {
			c.flag(w, r)
		}
	}
	return data{}
}

func hUnzip(w *walker, c *call) data {
	for i, a := range c.args {
		if a.known && a.lit == "-d" && i+1 < len(c.args) {
			for _, r := range w.writeRules(c.args[i+1], c.sc.cwd) {
				c.flag(w, r)
			}
		}
	}
	return data{}
}

// chmod and chown

func worldWritable(mode string) bool {
	if isOctal(mode) {
		return (mode[len(mode)-1]-'0')&2 != 0
	}
	for _, clause := range strings.Split(mode, ",") {
		who := strings.TrimLeft(clause, "ugoa")
		whoSet := clause[:len(clause)-len(who)]
		if !strings.ContainsAny(whoSet, "oa") {
			continue
		}
		for i := 0; i < len(who); i++ {
			if who[i] != '+' && who[i] != '=' {
				continue
			}
			j := i + 1
			for j < len(who) && !strings.ContainsRune("+-=", rune(who[j])) {
				j++
			}
			if strings.ContainsRune(who[i+1:j], 'w') {
				return true
			}
		}
	}
	return false
}

func setuid(mode string) bool {
	if isOctal(mode) {
		return len(mode) >= 4 && (mode[len(mode)-4]-'0')&6 != 0
	}
	for i := 0; i < len(mode); i++ {
		if mode[i] == '+' || mode[i] == '=' {
			j := i + 1
			for j < len(mode) && !strings.ContainsRune("+-=,", rune(mode[j])) {
				j++
			}
			if strings.ContainsRune(mode[i+1:j], 's') {
				return true
			}
		}
	}
	return false
}

func isOctal(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return true
}

// modeArg tells whether a chmod argument starting with - is a mode (-w,
// -x, -rwx) rather than an option.
func modeArg(s string) bool {
	if len(s) < 2 {
		return false
	}
	return strings.Trim(s[1:], "rwxXstugo") == "" && strings.Trim(s[1:], "cfvR") != ""
}

func hChmod(w *walker, c *call) data {
	rec := false
	mode := ""
	modeKnown := false
	haveMode := false
	var paths []field
	for _, a := range c.args {
		s := a.lit
		switch {
		case a.known && (s == "-R" || longIs(s, "--recursive")):
			rec = true
		case a.known && strings.HasPrefix(s, "--reference"):
			haveMode = true
		case a.known && strings.HasPrefix(s, "--"):
		case a.known && strings.HasPrefix(s, "-") && !modeArg(s) && strings.Trim(s[1:], "cfvR") == "":
			if strings.ContainsRune(s, 'R') {
				rec = true
			}
		case !haveMode:
			haveMode, mode, modeKnown = true, s, a.known
		default:
			paths = append(paths, a)
		}
	}
	maybe := rec || anySplit(c.args)
	for _, p := range paths {
		switch {
		case maybe && w.protected(p, c.sc.cwd):
			c.flag(w, ruleChmodSystem)
		case w.protected(p, c.sc.cwd):
			c.flag(w, ruleChmodSystemDir)
		}
	}
	switch {
	case modeKnown && worldWritable(mode) && rec:
		c.flag(w, ruleChmod777R)
	case modeKnown && worldWritable(mode):
		c.flag(w, ruleChmod777)
	case rec:
		c.flag(w, ruleChmodR)
	}
	if modeKnown && setuid(mode) {
		c.flag(w, ruleSetuid)
	}
	return emptyData
}

func hChown(w *walker, c *call) data {
	opts, ops := options(c.args, "", nil, true)
	rec := false
	ref := false
	for _, o := range opts {
		switch {
		case o.name == "-R" || longIs(o.name, "--recursive"):
			rec = true
		case o.name == "--reference":
			ref = true
		}
	}
	if !ref && len(ops) > 0 {
		ops = ops[1:]
	}
	maybe := rec || anySplit(c.args)
	for _, p := range ops {
		switch {
		case maybe && w.protected(p, c.sc.cwd):
			c.flag(w, ruleChmodSystem)
		case w.protected(p, c.sc.cwd):
			c.flag(w, ruleChmodSystemDir)
		}
	}
	if rec {
		c.flag(w, ruleChownR)
	}
	return emptyData
}

// network

func hCurl(w *walker, c *call) data {
	args := c.args
	for i := 0; i < len(args); i++ {
		s := args[i].lit
		next := func() (field, bool) {
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return field{}, false
		}
		name, val, eq := strings.Cut(s, "=")
		if !strings.HasPrefix(s, "--") {
			name, eq = s, false
		}
		var v field
		var ok bool
		if eq {
			v, ok = lit(val), true
		}
		switch name {
		case "-o", "--output":
			if !ok {
				v, ok = next()
			}
			if ok && v.lit != "-" {
				w.downloaded(c, v)
			}
		case "-d", "--data", "--data-binary", "--data-urlencode", "--data-ascii", "-F", "--form", "--json", "-T", "--upload-file", "-K", "--config":
			if !ok {
				v, ok = next()
			}
			if ok && v.known {
				p := v.lit
				if _, after, found := strings.Cut(p, "@"); found {
					p = after
				} else if _, after, found := strings.Cut(p, "<"); found {
					p = after
				} else if name != "-T" && name != "--upload-file" && name != "-K" && name != "--config" {
					continue
				}
				w.readPath(lit(p), c.sc, c.text())
			}
		default:
			if strings.HasPrefix(s, "-o") && !strings.HasPrefix(s, "--") && len(s) > 2 && s != "-o-" {
				w.downloaded(c, lit(s[2:]))
			}
		}
	}
	return data{download: true}
}

// downloaded judges a download saved to f and remembers the file holds
// data from the network, so running it later in the command asks.
func (w *walker) downloaded(c *call, f field) {
	for _, r := range w.writeRules(f, c.sc.cwd) {
		c.flag(w, r)
	}
	if f.known && !f.glob {
		c.sc.write(w.abs(f.lit, c.sc.cwd), data{download: true}, false)
	}
}

func hWget(w *walker, c *call) data {
	opts, _ := options(c.args, "OoaPe", []string{"--output-document", "--output-file", "--directory-prefix", "--post-file", "--body-file"}, true)
	if f, ok := optVal(opts, "-O", "--output-document"); ok && f.lit != "-" {
		w.downloaded(c, f)
	}
	if f, ok := optVal(opts, "--post-file", "--body-file"); ok {
		w.readPath(f, c.sc, c.text())
	}
	return data{download: true}
}

func hNc(w *walker, c *call) data {
	opts, _ := options(c.args, "ecpsqwiIOTVXxmMbBgGPw", []string{"--exec", "--sh-exec", "--lua-exec", "--source-port", "--wait"}, true)
	for _, o := range opts {
		switch o.name {
		case "-e", "--exec", "--lua-exec":
			c.flag(w, ruleReverseShell)
		case "-c", "--sh-exec":
			c.flag(w, ruleReverseShell)
			if o.has {
				w.codeField(o.val, langShell, c.ctx, nil)
			}
		}
	}
	return data{download: true}
}

func hSocat(w *walker, c *call) data {
	for _, a := range c.args {
		low := strings.ToLower(a.lit)
		for _, kw := range []string{"exec:", "system:"} {
			if i := strings.Index(low, kw); i >= 0 {
				c.flag(w, ruleReverseShell)
				code, _, _ := strings.Cut(a.lit[i+len(kw):], ",")
				w.codeField(lit(code), langShell, c.ctx, nil)
			}
		}
	}
	return data{download: true}
}

// processes and the machine

func signalIsKill(s string) bool {
	s = strings.ToUpper(strings.TrimPrefix(s, "-"))
	return s == "9" || s == "KILL" || s == "SIGKILL"
}

func hKill(w *walker, c *call) data {
	args := c.args
	sig := ""
	var pids []field
	for i := 0; i < len(args); i++ {
		a := args[i]
		s := a.lit
		switch {
		case !a.known:
			pids = append(pids, a)
		case s == "--":
			pids = append(pids, args[i+1:]...)
			i = len(args)
		case s == "-l" || s == "-L" || s == "--list" || s == "--table":
			return data{}
		case s == "-s" || s == "-n" || s == "--signal":
			if i+1 < len(args) {
				sig = args[i+1].lit
				i++
			}
		case strings.HasPrefix(s, "--signal="):
			sig = s[len("--signal="):]
		case strings.HasPrefix(s, "-") && sig == "" && len(pids) == 0 && len(s) > 1:
			sig = s[1:]
		default:
			pids = append(pids, a)
		}
	}
	all := len(pids) == 0 && sig == "1" && len(args) == 1 // kill -1
	for _, p := range pids {
		if n, err := strconv.Atoi(p.lit); err == nil && n == -1 {
			all = true
		}
	}
	if all {
		c.flag(w, ruleKillAll)
	}
	if signalIsKill(sig) {
		c.flag(w, ruleKill9)
	}
	return data{}
}

func hInit(w *walker, c *call) data {
	for _, a := range c.args {
		if a.known && (a.lit == "0" || a.lit == "6") {
			c.flag(w, ruleInit)
		}
	}
	return data{}
}

var shutdownVerbs = map[string]bool{"poweroff": true, "reboot": true, "halt": true, "kexec": true, "suspend": true, "hibernate": true,
	"hybrid-sleep": true, "suspend-then-hibernate": true, "soft-reboot": true, "rescue": true, "emergency": true, "sleep": true}

var serviceStops = map[string]bool{"stop": true, "restart": true, "force-stop": true, "force-reload": true, "try-restart": true, "kill": true}

func hSystemctl(w *walker, c *call) data {
	_, ops := options(c.args, "tspPHMno", []string{"--type", "--state", "--property", "--host", "--machine", "--lines", "--output",
		"--signal", "--kill-whom", "--kill-value", "--root", "--job-mode", "--message", "--when", "--what", "--reboot-argument",
		"--timestamp", "--preset-mode", "--image", "--drop-in", "--boot-loader-entry", "--boot-loader-menu"}, true)
	if len(ops) == 0 || !ops[0].known {
		return data{}
	}
	verb := ops[0].lit
	switch {
	case shutdownVerbs[verb]:
		c.flag(w, ruleShutdown)
	case verb == "isolate" || verb == "start" || verb == "restart" || verb == "reload-or-restart" || verb == "try-restart":
		for _, u := range ops[1:] {
			if shutdownVerbs[strings.TrimSuffix(u.lit, ".target")] || strings.TrimSuffix(u.lit, ".target") == "shutdown" {
				c.flag(w, ruleShutdown)
			}
		}
		if verb != "start" {
			c.flag(w, ruleServiceStop)
		}
	case verb == "stop" || verb == "disable" || verb == "mask" || verb == "kill" || verb == "try-reload-or-restart":
		c.flag(w, ruleServiceStop)
	}
	return data{}
}

func hLoginctl(w *walker, c *call) data {
	_, ops := options(c.args, "pPHMsn", nil, true)
	if len(ops) == 0 {
		return data{}
	}
	switch ops[0].lit {
	case "poweroff", "reboot", "halt", "suspend", "hibernate", "hybrid-sleep", "suspend-then-hibernate", "kexec":
		c.flag(w, ruleShutdown)
	case "terminate-session", "terminate-user", "kill-session", "kill-user":
		c.flag(w, rulePkill)
	}
	return data{}
}

func hKexec(w *walker, c *call) data {
	opts, _ := options(c.args, "t", nil, true)
	if hasOpt(opts, "-e", "--exec", "-f", "--force") || len(c.args) == 0 {
		c.flag(w, ruleShutdown)
	}
	return data{}
}

func hService(w *walker, c *call) data {
	_, ops := options(c.args, "", nil, false)
	if len(ops) >= 2 && serviceStops[ops[1].lit] {
		c.flag(w, ruleService)
	}
	return data{}
}

func hMkswap(w *walker, c *call) data {
	_, ops := options(c.args, "LUpe", nil, true)
	for _, f := range ops {
		if f.known && isDiskDevice(w.abs(f.lit, c.sc.cwd)) {
			c.flag(w, ruleMkfs)
		}
	}
	return data{}
}

func hWipefs(w *walker, c *call) data {
	opts, ops := options(c.args, "otpO", []string{"--offset", "--types", "--output", "--backup"}, true)
	if c.name == "wipefs" && !hasOpt(opts, "-a", "--all", "-o", "--offset") || hasOpt(opts, "-n", "--no-act") {
		return data{}
	}
	for _, f := range ops {
		if f.known && isDiskDevice(w.abs(f.lit, c.sc.cwd)) {
			c.flag(w, ruleDisk)
		} else {
			c.flag(w, ruleDiskTool)
		}
	}
	return data{}
}

func hFdisk(w *walker, c *call) data {
	opts, ops := options(c.args, "bcCHSuL", nil, true)
	if hasOpt(opts, "-l", "--list", "-s", "--show-size", "-V", "--version", "-h", "--help") ||
		len(ops) > 1 && (ops[1].lit == "print" || ops[1].lit == "p") || len(ops) == 0 {
		return data{}
	}
	c.flag(w, ruleDiskTool)
	return data{}
}

func hCrontab(w *walker, c *call) data {
	opts, ops := options(c.args, "u", nil, true)
	switch {
	case hasOpt(opts, "-r"):
		c.flag(w, ruleCrontabRemove)
	case hasOpt(opts, "-l"):
	default:
		c.flag(w, ruleCrontab)
		text := c.in
		if len(ops) > 0 && ops[0].lit != "-" {
			text = data{}
			if ops[0].known {
				if d, ok := c.sc.file(w.abs(ops[0].lit, c.sc.cwd)); ok {
					text = d
				}
			}
		}
		if text.known {
			for _, line := range strings.Split(text.text, "\n") {
				fs := strings.Fields(line)
				skip := 5
				if len(fs) > 0 && strings.HasPrefix(fs[0], "@") {
					skip = 1
				}
				if len(fs) > skip && !strings.HasPrefix(fs[0], "#") && !strings.Contains(fs[0], "=") {
					w.script(strings.Join(fs[skip:], " "), c.env.clone(), data{})
				}
			}
		}
	}
	return data{}
}

func hHistory(w *walker, c *call) data {
	for _, a := range c.args {
		if a.known && strings.HasPrefix(a.lit, "-") && strings.ContainsAny(a.lit, "cd") {
			c.flag(w, ruleHistory)
		}
	}
	return data{}
}

// git and docker

func hGit(w *walker, c *call) data {
	args := c.args
	i := 0
	for ; i < len(args); i++ {
		s := args[i].lit
		if !args[i].known || !strings.HasPrefix(s, "-") {
			break
		}
		switch s {
		case "-c":
			if i+1 < len(args) {
				k, v, _ := strings.Cut(args[i+1].lit, "=")
				w.gitConfig(c, k, v, args[i+1].known)
				i++
			}
		case "-C", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path", "--super-prefix":
			i++
		}
	}
	if i >= len(args) {
		return data{}
	}
	sub, rest := args[i].lit, args[i+1:]
	switch sub {
	case "push":
		opts, ops := options(rest, "o", []string{"--repo", "--receive-pack", "--exec", "--push-option"}, true)
		force := slices.ContainsFunc(opts, func(o opt) bool {
			return o.name == "-f" || o.name == "--force" || o.name == "--mirror" || strings.HasPrefix(o.name, "--force-with-lease") || o.name == "--force-if-includes"
		})
		for j, o := range ops {
			if j > 0 && strings.HasPrefix(o.lit, "+") {
				force = true
			}
		}
		if force {
			c.flag(w, ruleGitForce)
		}
	case "reset":
		if slices.ContainsFunc(rest, func(f field) bool { return f.lit == "--hard" }) {
			c.flag(w, ruleGitReset)
		}
	case "clean":
		opts, _ := options(rest, "e", []string{"--exclude"}, true)
		if hasOpt(opts, "-f", "--force") {
			c.flag(w, ruleGitClean)
		}
	case "config":
		_, ops := options(rest, "f", []string{"--file", "--blob", "--type", "--default"}, true)
		if len(ops) >= 2 {
			w.gitConfig(c, ops[0].lit, ops[1].lit, ops[1].known)
		}
	}
	return data{}
}

// gitConfig judges configuration that makes git run a shell command.
func (w *walker) gitConfig(c *call, key, val string, known bool) {
	k := strings.ToLower(key)
	f := lit(val)
	f.known = known
	switch {
	case strings.HasPrefix(k, "alias.") || k == "credential.helper":
		if strings.HasPrefix(val, "!") {
			f.lit = val[1:]
			w.codeField(f, langShell, c.ctx, nil)
		}
	case k == "core.pager" || k == "core.sshcommand" || k == "core.editor" || k == "core.fsmonitor" || k == "sequence.editor" ||
		k == "diff.external" || k == "gpg.program" || strings.HasPrefix(k, "filter.") || k == "core.askpass":
		if val != "true" && val != "false" {
			w.codeField(f, langShell, c.ctx, nil)
		}
	}
}

func hDocker(w *walker, c *call) data {
	args := c.args
	i := 0
	for ; i < len(args); i++ {
		s := args[i].lit
		if !args[i].known || !strings.HasPrefix(s, "-") {
			break
		}
		switch s {
		case "-H", "--host", "--context", "-c", "--config", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey", "--url", "--connection":
			i++
		}
	}
	if i >= len(args) {
		return data{}
	}
	sub := args[i].lit
	var next string
	if i+1 < len(args) {
		next = args[i+1].lit
	}
	switch {
	case sub == "rm" || sub == "rmi":
		c.flag(w, ruleDocker)
	case slices.Contains([]string{"container", "image", "volume", "network", "system", "builder", "buildx", "plugin", "secret", "config", "pod"}, sub) &&
		slices.Contains([]string{"rm", "remove", "prune", "delete", "rmi"}, next):
		c.flag(w, ruleDocker)
	case sub == "compose" || sub == "stack":
		down := false
		for _, a := range args[i+1:] {
			switch a.lit {
			case "down", "rm":
				down = true
			case "-v", "--volumes", "--rmi":
				if down {
					c.flag(w, ruleDocker)
				}
			}
		}
	}
	return data{}
}

// find

var findTests = map[string]bool{"-name": true, "-iname": true, "-path": true, "-ipath": true, "-wholename": true, "-iwholename": true,
	"-regex": true, "-iregex": true, "-mtime": true, "-mmin": true, "-atime": true, "-amin": true, "-ctime": true, "-cmin": true,
	"-size": true, "-user": true, "-group": true, "-uid": true, "-gid": true, "-nouser": true, "-nogroup": true, "-perm": true,
	"-empty": true, "-links": true, "-inum": true, "-samefile": true, "-lname": true, "-ilname": true, "-used": true,
	"-fstype": true, "-readable": true, "-writable": true, "-executable": true, "-context": true, "-newer": true}

func hFind(w *walker, c *call) data {
	args := c.args
	i := 0
	for ; i < len(args) && args[i].known; i++ { // -H -L -P -D debug -Olevel
		s := args[i].lit
		if s == "-D" {
			i++
			continue
		}
		if s != "-H" && s != "-L" && s != "-P" && !strings.HasPrefix(s, "-O") {
			break
		}
	}
	i = min(i, len(args))
	var starts []field
	for ; i < len(args); i++ {
		s := args[i].lit
		if args[i].known && (strings.HasPrefix(s, "-") || s == "(" || s == "!" || s == ")" || s == ",") {
			break
		}
		starts = append(starts, args[i])
	}
	if len(starts) == 0 {
		starts = []field{lit(".")}
	}
	expr := args[i:]
	filtered, deletes := false, false
	var execs [][]field
	for j := 0; j < len(expr); j++ {
		s := expr[j].lit
		switch {
		case !expr[j].known:
			filtered = true
		case s == "-delete":
			deletes = true
		case s == "-exec" || s == "-execdir" || s == "-ok" || s == "-okdir":
			k := j + 1
			for k < len(expr) && !(expr[k].known && (expr[k].lit == ";" || expr[k].lit == "+")) {
				k++
			}
			execs = append(execs, expr[j+1:min(k, len(expr))])
			j = k
		case s == "-fprint" || s == "-fprint0" || s == "-fls" || s == "-fprintf":
			if j+1 < len(expr) {
				for _, r := range w.writeRules(expr[j+1], c.sc.cwd) {
					c.flag(w, r)
				}
				j++
			}
		case findTests[s] || strings.HasPrefix(s, "-newer"):
			filtered = true
		}
	}
	everything := false
	if !filtered {
		for _, s := range starts {
			if w.protected(s, c.sc.cwd) {
				everything = true
			}
		}
	}
	if deletes {
		if everything {
			c.flag(w, ruleRootDelete)
		} else {
			c.flag(w, ruleFindDelete)
		}
	}
	for _, argv := range execs {
		cx := &ctx{sc: c.sc, env: c.env, in: data{}, via: "find"}
		if filtered {
			w.run(argv, cx)
			continue
		}
		for _, s := range starts[:min(len(starts), 4)] {
			sub := make([]field, len(argv))
			for k, f := range argv {
				sub[k] = f
				if f.known && strings.Contains(f.lit, "{}") {
					if f.lit == "{}" {
						sub[k] = s
					} else {
						sub[k] = lit(strings.ReplaceAll(f.lit, "{}", s.lit))
						sub[k].known = s.known
					}
				}
			}
			w.run(sub, cx)
		}
	}
	return data{}
}

// xargs

func hXargs(w *walker, c *call) data {
	args := c.args
	repl, delim := "", ""
	null, lines := false, false
	i := 0
loop:
	for ; i < len(args); i++ {
		a := args[i]
		s := a.lit
		if !a.known || !strings.HasPrefix(s, "-") || s == "-" {
			break
		}
		if s == "--" {
			i++
			break
		}
		if strings.HasPrefix(s, "--") {
			name, val, eq := strings.Cut(s, "=")
			switch name {
			case "--null":
				null = true
			case "--replace":
				repl = "{}"
				if eq {
					repl = val
				}
			case "--delimiter":
				if eq {
					delim = val
				} else if i+1 < len(args) {
					delim = args[i+1].lit
					i++
				}
			case "--arg-file", "--eof", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var":
				if !eq {
					i++
				}
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			switch s[j] {
			case '0':
				null = true
			case 'I', 'a', 'd', 'E', 'L', 'n', 'P', 's':
				v := s[j+1:]
				if v == "" && i+1 < len(args) {
					v = args[i+1].lit
					i++
				}
				switch s[j] {
				case 'I':
					repl = v
				case 'd':
					delim = v
				case 'L':
					lines = true
				}
				continue loop
			case 'i':
				repl = "{}"
				if j+1 < len(s) {
					repl = s[j+1:]
				}
				continue loop
			case 'e', 'l':
				continue loop
			}
		}
	}
	cmd := args[min(i, len(args)):]
	if len(cmd) == 0 {
		cmd = []field{lit("echo")}
	}
	cx := &ctx{sc: c.sc, env: c.env, in: data{}, via: "xargs"}
	if !c.in.known {
		if repl != "" {
			sub := make([]field, len(cmd))
			for k, f := range cmd {
				sub[k] = f
				if strings.Contains(f.lit, repl) {
					sub[k].lit = strings.ReplaceAll(f.lit, repl, dynMark)
					sub[k].pat = strings.ReplaceAll(f.pat, escapePat(repl), "*")
					sub[k].known = false
				}
			}
			return w.run(sub, cx)
		}
		return w.run(append(slices.Clone(cmd), field{lit: dynMark, pat: "*", split: true}), cx)
	}
	var items []string
	switch {
	case null:
		items = strings.Split(strings.TrimSuffix(c.in.text, "\x00"), "\x00")
	case delim != "":
		items = strings.Split(c.in.text, ansiC(delim))
	case repl != "" || lines:
		items = strings.Split(strings.TrimRight(c.in.text, "\n"), "\n")
	default:
		items = strings.Fields(c.in.text)
	}
	if len(items) > maxLoopItems {
		items = items[:maxLoopItems]
	}
	if repl != "" {
		for _, it := range items {
			sub := make([]field, len(cmd))
			for k, f := range cmd {
				sub[k] = f
				if f.known && strings.Contains(f.lit, repl) {
					sub[k] = lit(strings.ReplaceAll(f.lit, repl, it))
				}
			}
			w.run(sub, cx)
		}
		return data{}
	}
	argv := slices.Clone(cmd)
	for _, it := range items {
		argv = append(argv, lit(it))
	}
	return w.run(argv, cx)
}
