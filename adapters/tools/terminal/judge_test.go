package terminal

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
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
// per line, the command taken literally unless the verdict ends with *, in
// which case it is a Go string literal (for newlines and tabs).
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
		fs, err := testJudge.findings(l.command)
		if err != nil {
			t.Errorf("line %d: %v", l.line, err)
			continue
		}
		got := verdict(fs)
		ok := got == l.verdict
		if ok && l.rule != "" {
			ok = false
			for _, f := range fs {
				if f.Rule.Description == l.rule {
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
