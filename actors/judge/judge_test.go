package judge

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// testJudge is the judge the corpus is written for: a user alice whose
// Hermes home is the default one.
var testJudge = Judge{Home: "/home/alice", AgentHome: "/home/alice/.hermes"}

// verdict is how a command is judged: refused, asked about, or run.
func verdict(fs []Finding) string {
	v := "safe"
	for _, f := range fs {
		if f.Rule.Hard {
			return "hard"
		}
		v = "ask"
	}
	return v
}

type corpusLine struct {
	line    int
	verdict string
	rule    string // a rule the findings must hold, when given
	command string
}

// readCorpus reads testdata/approval_corpus.txt: "verdict[:rule]<TAB>command"
// per line (the rule by its ID or description), the command taken
// literally unless the verdict ends with *, in which case it is a Go
// string literal (for newlines and tabs).
func readCorpus(t testing.TB) []corpusLine {
	f, err := os.Open("testdata/approval_corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		v, cmd, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("corpus line %d: no tab: %q", n, line)
		}
		v, rule, _ := strings.Cut(v, ":")
		if strings.HasSuffix(v, "*") {
			v = strings.TrimSuffix(v, "*")
			if cmd, err = strconv.Unquote(cmd); err != nil {
				t.Fatalf("corpus line %d: %v", n, err)
			}
		}
		if v != "hard" && v != "ask" && v != "safe" {
			t.Fatalf("corpus line %d: verdict %q", n, v)
		}
		out = append(out, corpusLine{n, v, rule, cmd})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestJudgeCorpus(t *testing.T) {
	lines := readCorpus(t)
	counts := map[string]int{}
	bypasses := 0
	for _, l := range lines {
		counts[l.verdict]++
		w, err := testJudge.judge(l.command)
		if err != nil {
			t.Errorf("line %d: %v", l.line, err)
			continue
		}
		fs := w.findings
		if w.fallbacks > 0 { // the safety net is for nodes the walk does not know yet
			t.Errorf("line %d: %d statements missed by the walk: %q", l.line, w.fallbacks, l.command)
		}
		got := verdict(fs)
		ok := got == l.verdict
		if ok && l.rule != "" {
			ok = false
			for _, f := range fs {
				if f.Rule.Description == l.rule || f.Rule.ID == l.rule {
					ok = true
				}
			}
		}
		if !ok {
			// a bypass is a command judged milder than it is
			if got == "safe" || got == "ask" && l.verdict == "hard" {
				bypasses++
			}
			t.Errorf("line %d: %s (%s) judged %s %v:\n\t%s", l.line, l.verdict, l.rule, got, fs, l.command)
		}
	}
	t.Logf("%d spellings (%d hard, %d ask, %d safe), %d bypasses", len(lines), counts["hard"], counts["ask"], counts["safe"], bypasses)
}

// contexts put a command somewhere else in a command line; a hard-line
// command stays hard-line in every one of them.
var contexts = []struct {
	name string
	wrap func(cmd, quoted string) string
}{
	{"bash -c", func(_, q string) string { return "bash -c -- " + q }},
	{"sudo bash -c", func(_, q string) string { return "sudo bash -c -- " + q }},
	{"sh -c twice", func(_, q string) string {
		q2, _ := syntax.Quote("sh -c -- "+q, syntax.LangBash)
		return "sh -c -- " + q2
	}},
	{"eval", func(_, q string) string { return "eval -- " + q }},
	{"subshell", func(c, _ string) string { return "(\n" + c + "\n)" }},
	{"group", func(c, _ string) string { return "{\n" + c + "\n}" }},
	{"after &&", func(c, _ string) string { return "true && {\n" + c + "\n}" }},
	{"before ;", func(c, _ string) string { return "{\n" + c + "\n}\ntrue" }},
	{"after ||", func(c, _ string) string { return "false || {\n" + c + "\n}" }},
	{"in a pipe", func(c, _ string) string { return "hermes_src | {\n" + c + "\n}" }},
	{"if", func(c, _ string) string { return "if true; then\n" + c + "\nfi" }},
	{"function", func(c, _ string) string { return "hermes_f() {\n" + c + "\n}\nhermes_f" }},
	{"$(…)", func(c, _ string) string { return "x=$(\n" + c + "\n)" }},
	{"here-doc", func(c, _ string) string { return "bash <<'HERMES_EOF'\n" + c + "\nHERMES_EOF" }},
}

// FuzzJudge checks the judge never crashes, and that hard-line commands
// stay hard-line wherever they are put (metamorphic relations).
func FuzzJudge(f *testing.F) {
	for _, l := range readCorpus(f) {
		f.Add(l.command)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		if len(cmd) > 2000 {
			return
		}
		w, err := judgeWithin(t, cmd)
		if err != nil {
			t.Fatal(err)
		}
		if verdict(w.findings) != "hard" || w.steps > maxSteps/8 || w.maxDepth > 4 ||
			strings.HasSuffix(cmd, "\\") || strings.Contains(cmd, "HERMES_EOF") || strings.Contains(cmd, "hermes_") {
			return
		}
		q, err := syntax.Quote(cmd, syntax.LangBash)
		if err != nil {
			return
		}
		for _, c := range contexts {
			wrapped := c.wrap(cmd, q)
			if _, err := newParser().Parse(strings.NewReader(wrapped), ""); err != nil {
				continue // cmd does not stand alone there (an unclosed here-doc)
			}
			if w, _ := judgeWithin(t, wrapped); verdict(w.findings) != "hard" {
				fs := w.findings
				t.Errorf("%q is hard-line, but not %s: %q %v", cmd, c.name, wrapped, fs)
			}
		}
	})
}

// judgeWithin judges cmd, failing the test if that takes more than a
// second: the judge runs before every command, on input the model writes.
func judgeWithin(t *testing.T, cmd string) (*walker, error) {
	type result struct {
		w   *walker
		err error
	}
	done := make(chan result, 1)
	go func() {
		w, err := testJudge.judge(cmd)
		done <- result{w, err}
	}()
	select {
	case r := <-done:
		return r.w, r.err
	case <-time.After(time.Second):
		t.Fatalf("judging took over a second: %q", cmd)
		return nil, nil
	}
}

// BenchmarkJudge judges the whole corpus; parsing alone is the baseline.
func BenchmarkJudge(b *testing.B) {
	lines := readCorpus(b)
	b.Run("parse", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			for _, l := range lines {
				newParser().Parse(strings.NewReader(l.command), "")
			}
		}
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*len(lines)), "ns/command")
	})
	b.Run("judge", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			for _, l := range lines {
				testJudge.Findings(l.command)
			}
		}
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*len(lines)), "ns/command")
	})
}

// Large scripts and inputs built to blow up (doubling strings, functions
// calling each other twice, nested brace expansions) are judged quickly;
// what is past the budget asks.
func TestJudgeBoundedWork(t *testing.T) {
	var long strings.Builder
	for i := range 300 {
		fmt.Fprintf(&long, "f%d() { f%d; f%d; }\n", i, i+1, i+1)
	}
	long.WriteString("f0\n")
	for range 500 {
		long.WriteString("go test ./... && git status --short | head -5\n")
	}
	doubling := "x=0123456789abcdef; " + strings.Repeat("x=$x$x; ", 20) + strings.Repeat("echo $x$x$x$x | base64 -d | sh; ", 50)
	braces := "echo " + strings.Repeat("{a,b,c,d}", 12) + " $(echo " + strings.Repeat("{a,b,c,d}", 12) + ")"
	for name, cmd := range map[string]string{"long script": long.String(), "doubling": doubling, "braces": braces} {
		start := time.Now()
		fs := testJudge.Findings(cmd)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: judged in %s", name, d)
		}
		if name == "long script" && verdict(fs) == "hard" || name == "doubling" && verdict(fs) == "safe" {
			t.Errorf("%s: %s %v", name, verdict(fs), fs)
		}
	}
}
