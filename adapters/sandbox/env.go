package sandbox

import "strings"

// DefaultEnv are the variables a sandboxed command receives from Hermes'
// environment: what programs need to find themselves and speak the
// user's language, never a key. A trailing * matches a prefix.
var DefaultEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "NO_COLOR", "LANG", "LANGUAGE",
	"LC_*", "TZ", "EDITOR", "VISUAL", "PAGER"}

// FilterEnv keeps the variables of environ that DefaultEnv or extra name.
func FilterEnv(environ, extra []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if named(k, DefaultEnv) || named(k, extra) {
			out = append(out, kv)
		}
	}
	return out
}

func named(k string, names []string) bool {
	for _, n := range names {
		if p, ok := strings.CutSuffix(n, "*"); ok {
			if strings.HasPrefix(k, p) {
				return true
			}
		} else if k == n {
			return true
		}
	}
	return false
}
