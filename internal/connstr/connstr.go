// Package connstr owns what Hermes does to PostgreSQL connection strings (a
// postgres:// URL or libpq key=value pairs) that more than one ring needs:
// hiding their password. The event store and the projections both open
// PostgreSQL from one, and both name it in logs and messages.
package connstr

import (
	"net/url"
	"regexp"
)

// Redact returns dsn with any password replaced, for logs and messages.
func Redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	dsn = userinfo.ReplaceAllString(dsn, "${1}xxxxx@")
	return passwordKV.ReplaceAllString(dsn, "${1}xxxxx")
}

var (
	passwordKV = regexp.MustCompile(`(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)`)
	userinfo   = regexp.MustCompile(`^([a-z]+://[^:/@]*:)[^@]*@`)
)
