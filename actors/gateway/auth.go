package gateway

import (
	"strings"
)

// Auth says who may reach the agent. Nobody may unless named in an
// allow-list, paired, or AllowAll is set (GATEWAY_ALLOW_ALL_USERS, off by
// default).
type Auth struct {
	AllowAll bool
	// Global holds user ids allowed on every platform
	// (GATEWAY_ALLOWED_USERS).
	Global []string
	// Platform holds user ids per platform (TELEGRAM_ALLOWED_USERS, ...).
	Platform map[string][]string
	// Pairing lets unknown users in a direct chat ask for a code.
	Pairing bool
}

// Allowed reports whether user of platform is on an allow-list. Entries
// are user ids, never names: a name can be changed and then taken by
// someone else.
func (a Auth) Allowed(platform, user string) bool {
	if a.AllowAll {
		return true
	}
	match := func(list []string) bool {
		for _, e := range list {
			e = strings.TrimSpace(e)
			if e == "" {
				continue
			}
			if e == user {
				return true
			}
		}
		return false
	}
	return match(a.Global) || match(a.Platform[platform])
}

// SplitList splits a comma-separated setting into its entries.
func SplitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
