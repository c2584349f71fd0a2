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
	switch strings.ToLower(m) {
	case "true", "false", "null", "none", "nil", "undefined", "required", "optional", "string", "redacted":
		return false
	}
	if strings.HasPrefix(m, "[REDACTED") {
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

func mk(kind, re string, group int, ok func(string, string, int) bool) shape {
	return shape{kind: kind, re: regexp.MustCompile(re), group: group, ok: ok}
}

// secretName is the name part of an assignment whose value is a secret:
// it ends in one of these words (so max_tokens and secret_santa do not).
const secretName = `(?i)\b([A-Za-z0-9_.-]*(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|passphrase|credentials?|private[_-]?key|access[_-]?key|auth[_-]?key|signing[_-]?key|session[_-]?key|encryption[_-]?key|client[_-]?secret))\b["']?\s*[:=]\s*`

// shapes are tried in order; earlier, more specific shapes win because
// their replacement no longer matches the later ones.
var shapes = []shape{
	mk("private-key", `-----BEGIN[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----|\z)`, 0, nil),
	mk("anthropic-key", `\bsk-ant-[A-Za-z0-9_-]{20,}`, 0, nil),
	mk("openrouter-key", `\bsk-or-v1-[A-Za-z0-9]{32,}`, 0, nil),
	mk("openai-key", `\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`, 0, keyOK),
	mk("stripe-key", `\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}`, 0, nil),
	mk("aws-access-key", `\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[0-9A-Z]{16}\b`, 0, nil),
	mk("aws-secret", `(?i)\baws_?secret_?access_?key\b["']?\s*[:=]\s*["']?([A-Za-z0-9/+]{40})`, 1, nil),
	mk("slack-token", `\bxox[abposr]-[0-9A-Za-z-]{10,}`, 0, nil),
	mk("slack-app-token", `\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+`, 0, nil),
	mk("slack-webhook", `https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+`, 0, nil),
	mk("github-token", `\bgh[pousr]_[A-Za-z0-9]{36,}\b`, 0, nil),
	mk("github-token", `\bgithub_pat_[A-Za-z0-9_]{40,}`, 0, nil),
	mk("gitlab-token", `\bglpat-[A-Za-z0-9_-]{20,}`, 0, nil),
	mk("telegram-bot-token", `\b\d{8,10}:[A-Za-z0-9_-]{35}\b`, 0, mixedOK),
	mk("google-api-key", `\bAIza[0-9A-Za-z_-]{35}\b`, 0, nil),
	mk("huggingface-token", `\bhf_[A-Za-z0-9]{30,}\b`, 0, nil),
	mk("npm-token", `\bnpm_[A-Za-z0-9]{36}\b`, 0, nil),
	mk("pypi-token", `\bpypi-AgE[A-Za-z0-9_-]{50,}`, 0, nil),
	mk("groq-key", `\bgsk_[A-Za-z0-9]{40,}\b`, 0, nil),
	mk("xai-key", `\bxai-[A-Za-z0-9]{40,}\b`, 0, nil),
	mk("sendgrid-key", `\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b`, 0, nil),
	mk("digitalocean-token", `\bdo[por]_v1_[a-f0-9]{64}\b`, 0, nil),
	mk("shopify-token", `\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b`, 0, nil),
	mk("discord-bot-token", `\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}\b`, 0, mixedOK),
	mk("jwt", `\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*`, 0, nil),
	mk("bearer-token", `(?i)\bBearer\s+([A-Za-z0-9._~+/-]{16,}=*)`, 1, notWordy),
	mk("basic-auth", `(?i)\bAuthorization:\s*(?:Basic|token)\s+([A-Za-z0-9._~+/-]{8,}=*)`, 1, nil),
	mk("azure-key", `(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)=([^;\s"']+)`, 1, nil),
	mk("url-password", `\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:([^@\s/]+)@`, 1, nil),
	mk("assigned-secret", secretName+`"([^"\s]{4,})"`, 2, nil),
	mk("assigned-secret", secretName+`'([^'\s]{4,})'`, 2, nil),
	mk("assigned-secret", secretName+"([^\\s\"'`,;()\\[\\]{}<>]{6,})", 2, assignedOK),
}

// Find returns the kind of the first secret shape in text, if any.
func Find(text string) (string, bool) {
	for _, s := range shapes {
		for _, m := range s.re.FindAllStringSubmatchIndex(text, -1) {
			lo, hi := m[2*s.group], m[2*s.group+1]
			if lo < 0 {
				continue
			}
			if s.ok == nil || s.ok(text[lo:hi], text, hi) {
				return s.kind, true
			}
		}
	}
	return "", false
}

// redactShapes replaces every secret-shaped part of text.
func redactShapes(text string) string {
	for _, s := range shapes {
		ms := s.re.FindAllStringSubmatchIndex(text, -1)
		if ms == nil {
			continue
		}
		var b strings.Builder
		last, changed := 0, false
		for _, m := range ms {
			lo, hi := m[2*s.group], m[2*s.group+1]
			if lo < 0 || (s.ok != nil && !s.ok(text[lo:hi], text, hi)) {
				continue
			}
			b.WriteString(text[last:lo])
			b.WriteString("[REDACTED:" + s.kind + "]")
			last, changed = hi, true
		}
		if !changed {
			continue
		}
		b.WriteString(text[last:])
		text = b.String()
	}
	return text
}
