package secrets

import (
	"path"
	"sort"
	"strings"
)

// MinValue is the shortest secret value redacted by its value: shorter
// ones would cut ordinary words out of every output.
const MinValue = 8

// Set is what this process knows about its secrets: the values of its
// secret environment variables and configured keys, and the variables a
// person chose to pass to child processes anyway. A nil *Set knows no
// values and passes nothing through; it still scrubs and redacts by name
// and shape.
type Set struct {
	known []known // longest value first, so a value inside another is not cut in two
	pass  []string
}

type known struct{ name, value string }

// New builds the set from environ (the process environment at start),
// passthrough (variable names, or path.Match patterns, that child
// processes keep although they look secret; config
// terminal.env_passthrough) and keys (secrets that are not in the
// environment, such as api_key from config.yaml, by a name to show in
// their place).
func New(environ []string, passthrough []string, keys map[string]string) *Set {
	s := &Set{pass: append([]string(nil), passthrough...)}
	seen := map[string]bool{}
	add := func(name, value string) {
		if len(value) < MinValue || seen[value] {
			return
		}
		seen[value] = true
		s.known = append(s.known, known{name, value})
	}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if SecretVar(name, value) {
			add(name, value)
		}
	}
	names := make([]string, 0, len(keys))
	for n := range keys {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		add(n, keys[n])
	}
	sort.SliceStable(s.known, func(i, j int) bool { return len(s.known[i].value) > len(s.known[j].value) })
	return s
}

// familyPrefixes are providers and platforms whose every variable is
// kept from child processes (keys, but also base URLs and organisation
// ids that say where the keys go).
var familyPrefixes = []string{"OPENAI_", "ANTHROPIC_", "OPENROUTER_", "TELEGRAM_", "SLACK_", "DISCORD_", "WHATSAPP_", "MATTERMOST_", "NOUS_"}

// secretWords anywhere in a variable's name (split at _ - .) mark it;
// secretParts mark it even inside a word (PGPASSWORD).
var (
	secretWords = map[string]bool{"TOKEN": true, "TOKENS": true, "PASS": true, "PASSPHRASE": true, "APIKEY": true, "COOKIE": true, "PAT": true}
	secretParts = []string{"PASSWORD", "PASSWD", "SECRET", "CREDENTIAL"}
)

// SecretName reports whether a variable's name says it holds a secret:
// *_API_KEY, *_TOKEN, *SECRET*, *PASSWORD*, *_KEY, *_AUTH, *_PWD, and every
// variable of a provider or platform (OPENAI_*, ANTHROPIC_*, SLACK_*, …).
// SSH_AUTH_SOCK, TOKENIZERS_PARALLELISM and PWD are not secrets.
func SecretName(name string) bool {
	up := strings.ToUpper(name)
	for _, p := range familyPrefixes {
		if strings.HasPrefix(up, p) {
			return true
		}
	}
	for _, p := range secretParts {
		if strings.Contains(up, p) {
			return true
		}
	}
	words := strings.FieldsFunc(up, func(r rune) bool { return r == '_' || r == '-' || r == '.' })
	for i, w := range words {
		if secretWords[w] {
			return true
		}
		if w == "KEY" && i > 0 && (words[i-1] == "ACCESS" || words[i-1] == "PRIVATE" || words[i-1] == "API") {
			return true
		}
	}
	if n := len(words); n > 0 && (words[n-1] == "KEY" || words[n-1] == "AUTH" || (n > 1 && words[n-1] == "PWD")) {
		return true
	}
	return false
}

// SecretVar reports whether a variable is a secret by its name or by its
// value (a key-shaped value, a URL with a password).
func SecretVar(name, value string) bool {
	if SecretName(name) {
		return true
	}
	_, shaped := Find(value)
	return shaped
}

func (s *Set) passes(name string) bool {
	if s == nil {
		return false
	}
	for _, p := range s.pass {
		if p == name {
			return true
		}
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// holds reports whether value contains a secret this process holds.
func (s *Set) holds(value string) bool {
	if s == nil {
		return false
	}
	for _, k := range s.known {
		if strings.Contains(value, k.value) {
			return true
		}
	}
	return false
}

// Env returns environ without secrets, for a child process of a tool:
// variables secret by name or value, or holding a value this process
// knows to be secret, are dropped unless passed through by name.
func (s *Set) Env(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if s.passes(name) || (!SecretVar(name, value) && !s.holds(value)) {
			out = append(out, kv)
		}
	}
	return out
}

// Redact replaces the secrets this process holds, and every secret-shaped
// part of text, with [REDACTED:<what>]. A known value is named by its
// variable (the model may know OPENAI_API_KEY is set, not what it is).
func (s *Set) Redact(text string) string {
	if text == "" {
		return text
	}
	if s != nil {
		for _, k := range s.known {
			if strings.Contains(text, k.value) {
				text = strings.ReplaceAll(text, k.value, "[REDACTED:"+k.name+"]")
			}
		}
	}
	return redactShapes(text)
}
