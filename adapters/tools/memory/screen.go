package memory

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/hermes-go/hermes/adapters/secrets"
)

// Memory is read into every future system prompt, so what enters it may
// hold neither instructions nor secrets. The screen looks at the text as
// a model would read it, not as it is spelt: compatibility forms folded
// (NFKC: full-width, mathematical and circled letters), invisible
// characters removed (zero-width, bidi controls, soft hyphens, variation
// selectors, combining marks), text hidden in Unicode tag characters
// decoded, look-alike letters and dashes mapped to ASCII, and whitespace
// collapsed. Injection phrases are also looked for with every
// non-letter removed and digits read as letters ("i g n 0 r e").
//
// What it does not catch: instructions paraphrased beyond the phrases
// below, text in other languages, and content encoded (base64, rot13)
// for a later step to decode.

// invisible reports runes a model does not see but a screen would: format
// characters (zero-width, bidi, soft hyphen, tags), combining and
// enclosing marks, variation selectors and blank fillers.
func invisible(r rune) bool {
	switch r {
	case 0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x180E, 0x034F:
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me, unicode.Variation_Selector)
}

// dashes look like '-' (sk‑proj with U+2011 is sk-proj to a reader).
func dash(r rune) bool {
	switch r {
	case 0x2010, 0x2011, 0x2012, 0x2013, 0x2014, 0x2015, 0x2212, 0x2043, 0xFE58, 0xFE63, 0xFF0D, 0x02D7, 0x058A, 0x05BE,
		0x1806, 0x2E17, 0x2E1A, 0x2E3A, 0x2E3B, 0x30A0, 0xFE31, 0xFE32:
		return true
	}
	return false
}

// confusables are Cyrillic and Greek letters drawn like Latin ones.
var confusables = map[rune]rune{
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'і': 'i', 'ї': 'i', 'ј': 'j', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p',
	'с': 'c', 'т': 't', 'у': 'y', 'х': 'x', 'ѕ': 's', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'ɡ': 'g', 'ɑ': 'a', 'ɩ': 'i', 'ı': 'i',
	'А': 'A', 'В': 'B', 'Е': 'E', 'К': 'K', 'М': 'M', 'Н': 'H', 'О': 'O', 'Р': 'P', 'С': 'C', 'Т': 'T', 'Х': 'X', 'Ѕ': 'S',
	'І': 'I', 'Ј': 'J', 'У': 'Y',
	'α': 'a', 'ε': 'e', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O', 'Ρ': 'P', 'Τ': 'T',
	'Υ': 'Y', 'Χ': 'X',
	'ꞵ': 'b', 'ᴀ': 'a', 'ʙ': 'b', 'ᴄ': 'c', 'ᴅ': 'd', 'ᴇ': 'e', 'ɢ': 'g', 'ʜ': 'h', 'ɪ': 'i', 'ᴊ': 'j', 'ᴋ': 'k', 'ʟ': 'l',
	'ᴍ': 'm', 'ɴ': 'n', 'ᴏ': 'o', 'ᴘ': 'p', 'ʀ': 'r', 'ꜱ': 's', 'ᴛ': 't', 'ᴜ': 'u', 'ᴠ': 'v', 'ᴡ': 'w', 'ʏ': 'y', 'ᴢ': 'z',
}

// leet reads digits and symbols as the letters they stand for.
var leet = map[rune]rune{'0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', '$': 's', '!': 'i', '|': 'l'}

// clean is what is stored: the text without invisible format characters
// (zero-width, bidi, tags), so nothing reaches the prompt unseen.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
}

// fold is the text as a reader sees it, for the screens.
func fold(s string) string {
	s = norm.NFKC.String(s)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 0xE0020 && r <= 0xE007E:
			b.WriteRune(r - 0xE0000) // a tag character spells ASCII invisibly
		case invisible(r):
		case dash(r):
			b.WriteByte('-')
		default:
			if c, ok := confusables[r]; ok {
				r = c
			}
			b.WriteRune(r)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// squash keeps only letters, lower-cased, with digits and symbols read as
// letters: "I.g.n.0.r.e  all" → "ignoreall".
func squash(folded string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(folded) {
		if l, ok := leet[r]; ok {
			r = l
		}
		if unicode.IsLetter(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

type rule struct {
	re  *regexp.Regexp
	why string
}

const (
	whyOverride = "it tries to override instructions"
	whyOrder    = "it reads as an injected standing order"
	whyTemplate = "it contains chat-template or role markup"
	whyExfil    = "it looks like an attempt to send memory or secrets out"
	whySecret   = "it contains a credential"
)

// squashedRules match the letters-only text, so spacing, punctuation and
// leetspeak between the letters do not matter.
var squashedRules = []rule{
	{regexp.MustCompile(`(ignore|disregard|override|bypass)(all|any|every)?(of)?(the|your|my|these|those)?(previous|prior|above|earlier|preceding|former|original|initial|system|developer)(instruction|message|rule|prompt|direction|directive|guideline|guidance)`), whyOverride},
	{regexp.MustCompile(`(ignore|disregard)(all|any)?(of)?(your|the)(rules|instructions|systemprompt|guidelines|programming|training)`), whyOverride},
	{regexp.MustCompile(`forget(all|any)?(of)?your(rules|instructions|systemprompt|guidelines|programming|training)`), whyOverride},
	{regexp.MustCompile(`(forget|ignore|disregard)(everything|allthat|whatever)you(were|have|ve)?(been)?(told|taught|instructed)`), whyOverride},
	{regexp.MustCompile(`(reveal|print|leak|repeat|output|show)(me)?(your|the)(full)?(system|hidden|initial|developer)(prompt|message|instructions)`), whyOverride},
	{regexp.MustCompile(`you(are|re)now(in)?(a|an)?(dan|developermode|godmode|jailbroken|jailbreakmode|unrestricted|unfiltered|evil)`), whyOverride},
	{regexp.MustCompile(`(enable|activate|enter|switchto)(the)?(developer|god|dan|jailbreak|unrestricted)mode`), whyOverride},
	{regexp.MustCompile(`doanythingnow`), whyOverride},
	{regexp.MustCompile(`(nolonger|not)(bound|restricted|limited)by(your|any|the)?(rules|guidelines|policies|instructions|restrictions)`), whyOverride},
	{regexp.MustCompile(`(donot|dont|never)(tell|inform|mention|reveal|show)(this|it|anything)?(to)?theuser`), whyOrder},
	{regexp.MustCompile(`without(telling|informing|notifying)theuser`), whyOrder},
}

// foldedRules match the folded text (case-insensitive, punctuation kept).
var foldedRules = []rule{
	{regexp.MustCompile(`(?i)you (must|should|will|shall) (now )?(always|never) .*(regardless|no matter|even if|whatever the user)`), whyOrder},
	{regexp.MustCompile(`<\s*\|[^<>|]{1,40}\|\s*>`), whyTemplate},
	{regexp.MustCompile(`(?i)\[\s*/?\s*(inst|sys|system|assistant|user)\s*\]`), whyTemplate},
	{regexp.MustCompile(`(?i)<<\s*/?\s*sys\s*>>`), whyTemplate},
	{regexp.MustCompile(`(?i)<\s*/?\s*(start_of_turn|end_of_turn|system|assistant|user|human|developer|im_start|im_end|instructions?|sys|tool_call|function_results?)(\s+(prompt|message))?\s*>`), whyTemplate},
	{regexp.MustCompile(`(?i)#{2,}\s*(system|instruction|instructions|human|assistant|user|response)\s*(prompt|message)?\s*:`), whyTemplate},
	{regexp.MustCompile(`(?i)(^|\n)\s*(human|assistant|developer)\s*:`), whyTemplate},
	{regexp.MustCompile(`(?i)(^|\n)\s*system\s*(prompt|message)?\s*:\s*(you|ignore|from now|always|never|new)`), whyTemplate},
	{regexp.MustCompile(`(?i)\b(curl|wget|nc|netcat|scp|invoke-webrequest)\b.*(\.env\b|\bmemory\.md|\buser\.md|\.hermes\b|\bmemories/|\$\{?[A-Z_]*(KEY|TOKEN|SECRET|PASSWORD))`), whyExfil},
	{regexp.MustCompile(`(?i)\b(new|updated|real|actual) (system prompt|instructions|rules|directives)\s*:`), whyOverride},
	{regexp.MustCompile(`(?i)\b(system|admin|developer|sudo|god) (override|mode)\s*(:|enabled|activated|on\b)`), whyOverride},
	{regexp.MustCompile(`(?i)\b(send|post|upload|exfiltrate|leak|forward|transmit|e-?mail)\b.{0,60}\b(api[_ -]?keys?|credentials|secrets?|passwords?|tokens?|\.env|system prompt|memor(y|ies)|conversation|chat history)\b.{0,60}(https?://|webhook|\S+@\S+\.\w)`), whyExfil},
	{regexp.MustCompile(`(?i)\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z|da)?sh\b`), whyOrder},
}

// credential is a secret written as a note ("password: hunter2!"): a
// value with a digit or symbol, or the last word of its line.
var credential = regexp.MustCompile(`(?i)\b(password|passwd|passphrase|secret|api[_ -]?key|token|pin)\s*(is\s*)?[:=]\s*(\S{6,})`)

func hasCredential(text string) bool {
	for _, m := range credential.FindAllStringSubmatchIndex(text, -1) {
		v, rest := text[m[6]:m[7]], text[m[7]:]
		if line, _, _ := strings.Cut(rest, "\n"); strings.TrimSpace(line) == "" {
			return true
		}
		if strings.IndexFunc(v, func(r rune) bool { return !unicode.IsLetter(r) }) >= 0 {
			return true
		}
	}
	return false
}

// joinSpaced joins runs of single characters, so a key spelt out with
// spaces between its characters is seen whole.
func joinSpaced(folded string) string {
	fields := strings.Fields(folded)
	var b strings.Builder
	for i, f := range fields {
		if i > 0 && !(len([]rune(f)) == 1 && len([]rune(fields[i-1])) == 1) {
			b.WriteByte(' ')
		}
		b.WriteString(f)
	}
	return b.String()
}

// lines keeps line breaks (role prefixes are per line) but folds each.
func lines(s string) string {
	parts := strings.Split(norm.NFKC.String(s), "\n")
	for i, p := range parts {
		parts[i] = fold(p)
	}
	return strings.Join(parts, "\n")
}

// screen refuses content that carries instructions or secrets.
func screen(s string) error {
	folded := fold(s)
	refuse := func(why string) error {
		return fmt.Errorf("refused: %s; memory is loaded into every future session, so it may hold neither instructions nor secrets", why)
	}
	squashed := squash(folded)
	for _, r := range squashedRules {
		if r.re.MatchString(squashed) {
			return refuse(r.why)
		}
	}
	perLine := lines(s)
	for _, r := range foldedRules {
		if r.re.MatchString(folded) || r.re.MatchString(perLine) {
			return refuse(r.why)
		}
	}
	if hasCredential(perLine) {
		return refuse(whySecret)
	}
	for _, text := range []string{folded, joinSpaced(folded)} {
		if kind, ok := secrets.Find(text); ok {
			return refuse("it contains an API key or other secret (" + kind + ")")
		}
	}
	return nil
}
