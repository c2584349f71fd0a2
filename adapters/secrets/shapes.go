// Package secrets keeps provider and platform keys away from the model and
// the event log. It owns three things: the shapes secrets have (so tool
// output can be redacted and memory screened), the environment child
// processes of tools get (without the keys Hermes holds), and the list of
// secret values this process actually holds (redacted wherever they show
// up, whatever their shape).
//
// Redaction is a safety net, not a vault: a secret printed in pieces,
// encoded (base64, hex) or with a shape not listed here gets through.
// Keeping secrets out of child processes in the first place is what
// matters; redaction catches what a file or a command prints anyway.
package secrets

import (
	"regexp"
	"strings"
	"unicode"
)

// shape is one kind of secret recognisable by its text.
type shape struct {
	kind string
	re   *regexp.Regexp
	// group, when non-zero, is the submatch to redact (the value of an
	// assignment, the password of a URL); the rest of the match stays.
	group int
	// ok, when set, vets a match (the redacted part) so that words and
	// identifiers of the same form are left alone.
	ok func(match, text string, end int) bool
	// find, when set, stands for re: it returns the spans to redact.
	find func(text string) [][2]int
	// hints are lower-case strings one of which a match must contain:
	// without any in the text the expression is not run at all (most
	// output holds no secret, and scanning 100 KB with thirty expressions
	// is what costs). lineWise shapes run only on the lines holding one.
	hints    []string
	lineWise bool
}

// mixed reports whether s has both a letter and a digit: real keys do,
// kebab-case words and identifiers mostly do not.
func mixed(s string) bool {
	var letter, digit bool
	for _, r := range s {
		letter = letter || unicode.IsLetter(r)
		digit = digit || unicode.IsDigit(r)
	}
	return letter && digit
}

func mixedOK(m, _ string, _ int) bool { return mixed(m) }

// keyOK accepts sk-… with digits, or one unbroken run of letters (a key
// without digits); kebab-case words after "sk-" have more hyphens.
func keyOK(m, _ string, _ int) bool {
	body := strings.TrimPrefix(m, "sk-")
	for _, p := range []string{"proj-", "svcacct-", "admin-"} {
		body = strings.TrimPrefix(body, p)
	}
	return mixed(body) || !strings.Contains(body, "-")
}

// notWordy rejects runs of lower-case letters and underscores (prose and
// identifiers after "Bearer").
func notWordy(m, _ string, _ int) bool {
	return strings.TrimFunc(m, func(r rune) bool { return unicode.IsLower(r) || r == '_' }) != ""
}

// assignedOK vets the value of NAME=value: code that reads a secret
// (api_key = os.environ["X"], token: str, password = get_password())
// is not a secret.
func assignedOK(m, text string, end int) bool {
	if end < len(text) && strings.ContainsRune("([.", rune(text[end])) {
		return false
	}
	if stopWord(m) {
		return false
	}
	// A bare identifier or dotted name without digits is a reference.
	ident := true
	for _, r := range m {
		if !(unicode.IsLetter(r) || r == '_' || r == '.' || unicode.IsDigit(r)) {
			ident = false
			break
		}
	}
	return !ident || mixed(m)
}

// stopWord is a value that is a placeholder, not a secret.
func stopWord(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false", "null", "none", "nil", "undefined", "required", "optional", "string", "redacted":
		return true
	}
	return strings.HasPrefix(v, "[REDACTED") || strings.HasPrefix(v, "$")
}

func mk(kind, re string, group int, ok func(string, string, int) bool, hints ...string) shape {
	return shape{kind: kind, re: regexp.MustCompile(re), group: group, ok: ok, hints: hints}
}

func lineWise(s shape) shape { s.lineWise = true; return s }

// shapes are tried in order; earlier, more specific shapes win because
// their replacement no longer matches the later ones.
var shapes = []shape{
	mk("private-key", `-----BEGIN[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----|\z)`, 0, nil, "private key"),
	mk("anthropic-key", `\bsk-ant-[A-Za-z0-9_-]{20,}`, 0, nil, "sk-ant-"),
	mk("openrouter-key", `\bsk-or-v1-[A-Za-z0-9]{32,}`, 0, nil, "sk-or-v1-"),
	mk("openai-key", `\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`, 0, keyOK, "sk-"),
	mk("stripe-key", `\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}`, 0, nil, "k_live_", "k_test_"),
	mk("aws-access-key", `\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[0-9A-Z]{16}\b`, 0, nil, "akia", "asia", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "abia", "acca"),
	mk("aws-secret", `(?i)\baws_?secret_?access_?key\b["']?\s*[:=]\s*["']?([A-Za-z0-9/+]{40})`, 1, nil, "secret"),
	mk("slack-token", `\bxox[abposr]-[0-9A-Za-z-]{10,}`, 0, nil, "xox"),
	mk("slack-app-token", `\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+`, 0, nil, "xapp-"),
	mk("slack-webhook", `https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+`, 0, nil, "hooks.slack.com"),
	mk("github-token", `\bgh[pousr]_[A-Za-z0-9]{36,}\b`, 0, nil, "ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
	mk("github-token", `\bgithub_pat_[A-Za-z0-9_]{40,}`, 0, nil, "github_pat_"),
	mk("gitlab-token", `\bglpat-[A-Za-z0-9_-]{20,}`, 0, nil, "glpat-"),
	mk("telegram-bot-token", `\b\d{8,10}:[A-Za-z0-9_-]{35}\b`, 0, mixedOK, ":"),
	mk("google-api-key", `\bAIza[0-9A-Za-z_-]{35}\b`, 0, nil, "aiza"),
	mk("huggingface-token", `\bhf_[A-Za-z0-9]{30,}\b`, 0, nil, "hf_"),
	mk("npm-token", `\bnpm_[A-Za-z0-9]{36}\b`, 0, nil, "npm_"),
	mk("pypi-token", `\bpypi-AgE[A-Za-z0-9_-]{50,}`, 0, nil, "pypi-age"),
	mk("groq-key", `\bgsk_[A-Za-z0-9]{40,}\b`, 0, nil, "gsk_"),
	mk("xai-key", `\bxai-[A-Za-z0-9]{40,}\b`, 0, nil, "xai-"),
	mk("sendgrid-key", `\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b`, 0, nil, "sg."),
	mk("digitalocean-token", `\bdo[por]_v1_[a-f0-9]{64}\b`, 0, nil, "_v1_"),
	mk("shopify-token", `\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b`, 0, nil, "shp"),
	mk("discord-bot-token", `\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}\b`, 0, mixedOK, "."),
	mk("jwt", `\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*`, 0, nil, "eyj"),
	mk("bearer-token", `(?i)\bBearer\s+([A-Za-z0-9._~+/-]{16,}=*)`, 1, notWordy, "bearer"),
	mk("basic-auth", `(?i)\bAuthorization:\s*(?:Basic|token)\s+([A-Za-z0-9._~+/-]{8,}=*)`, 1, nil, "authorization"),
	mk("azure-key", `(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)=([^;\s"']+)`, 1, nil, "accountkey", "sharedaccess"),
	mk("url-password", `\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:([^@\s/]+)@`, 1, nil, "://"),
	lineWise(shape{kind: "assigned-secret", find: assignments, hints: []string{"key", "secret", "token", "passw", "credential"}}),
}

// secretSuffixes end the name of an assignment whose value is a secret
// (DB_PASSWORD=, "client_secret":, x-api-key:), so that max_tokens and
// secret_santa are not.
var secretSuffixes = func() []string {
	out := []string{"secret", "token", "password", "passwd", "passphrase", "credential", "credentials"}
	for _, w := range []string{"api", "private", "access", "auth", "signing", "session", "encryption"} {
		for _, sep := range []string{"_", "-", ""} {
			out = append(out, w+sep+"key")
		}
	}
	return out
}()

func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// valueByte may be part of an unquoted secret value.
func valueByte(c byte) bool {
	return c > ' ' && !strings.ContainsRune("\"'`,;()[]{}<>", rune(c))
}

// assignments finds the values of NAME=value, NAME: value, "name": "value"
// and NAME := value where NAME ends in a secret word. A hand-written scan:
// an expression for it costs thirty times more on long output.
func assignments(text string) [][2]int {
	var out [][2]int
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '=' && c != ':' {
			continue
		}
		j := i - 1
		for j >= 0 && (text[j] == ' ' || text[j] == '\t') {
			j--
		}
		if j >= 0 && (text[j] == '"' || text[j] == '\'') {
			j--
		}
		end := j + 1
		for j >= 0 && nameByte(text[j]) {
			j--
		}
		name := asciiLower(text[j+1 : end])
		secret := false
		for _, suf := range secretSuffixes {
			if strings.HasSuffix(name, suf) {
				secret = true
				break
			}
		}
		if !secret {
			continue
		}
		k := i + 1
		if c == ':' && k < len(text) && text[k] == '=' {
			k++
		}
		for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
			k++
		}
		if k < len(text) && (text[k] == '"' || text[k] == '\'') {
			q, lo := text[k], k+1
			hi := lo
			for hi < len(text) && text[hi] != q && text[hi] > ' ' {
				hi++
			}
			if hi < len(text) && text[hi] == q && hi-lo >= 4 && !stopWord(text[lo:hi]) {
				out = append(out, [2]int{lo, hi})
			}
			i = hi
			continue
		}
		hi := k
		for hi < len(text) && valueByte(text[hi]) {
			hi++
		}
		if hi-k >= 6 && assignedOK(text[k:hi], text, hi) {
			out = append(out, [2]int{k, hi})
		}
		i = max(i, hi-1)
	}
	return out
}

// span is the part of match m a shape redacts: its group.
func (s shape) span(m []int) (int, int) { return m[2*s.group], m[2*s.group+1] }

// ranges are the parts of text the shape is run on: none when no hint is
// in it, the lines holding a hint for a lineWise shape, else all of it.
func (s shape) ranges(text, lower string) [][2]int {
	if len(s.hints) == 0 {
		return [][2]int{{0, len(text)}}
	}
	found := false
	for _, h := range s.hints {
		if strings.Contains(lower, h) {
			found = true
			break
		}
	}
	if !found {
		return nil
	}
	if !s.lineWise {
		return [][2]int{{0, len(text)}}
	}
	var out [][2]int
	for start := 0; start < len(text); {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		line := lower[start:end]
		for _, h := range s.hints {
			if strings.Contains(line, h) {
				out = append(out, [2]int{start, end})
				break
			}
		}
		start = end + 1
	}
	return out
}

// matches are the spans of text the shape redacts, in order.
func (s shape) matches(text, lower string) [][2]int {
	var out [][2]int
	for _, r := range s.ranges(text, lower) {
		part := text[r[0]:r[1]]
		if s.find != nil {
			for _, m := range s.find(part) {
				out = append(out, [2]int{r[0] + m[0], r[0] + m[1]})
			}
			continue
		}
		for _, m := range s.re.FindAllStringSubmatchIndex(part, -1) {
			lo, hi := s.span(m)
			if lo < 0 || (s.ok != nil && !s.ok(part[lo:hi], part, hi)) {
				continue
			}
			out = append(out, [2]int{r[0] + lo, r[0] + hi})
		}
	}
	return out
}

// asciiLower lower-cases A-Z only, so that offsets in the result are
// offsets in s (strings.ToLower changes the length of some letters).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Find returns the kind of the first secret shape in text, if any.
func Find(text string) (string, bool) {
	lower := asciiLower(text)
	for _, s := range shapes {
		if len(s.matches(text, lower)) > 0 {
			return s.kind, true
		}
	}
	return "", false
}

// redactShapes replaces every secret-shaped part of text.
func redactShapes(text string) string {
	lower := asciiLower(text)
	for _, s := range shapes {
		ms := s.matches(text, lower)
		if len(ms) == 0 {
			continue
		}
		var b strings.Builder
		last := 0
		for _, m := range ms {
			b.WriteString(text[last:m[0]])
			b.WriteString("[REDACTED:" + s.kind + "]")
			last = m[1]
		}
		b.WriteString(text[last:])
		text = b.String()
		lower = asciiLower(text)
	}
	return text
}
