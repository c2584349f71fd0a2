package connstr

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, hidden string }{
		{"postgres://hermes:s3cret@db:5432/hermes?sslmode=disable", "s3cret"},
		{"postgres://hermes@db/hermes?password=s3cret", "s3cret"},
		{"host=db user=hermes password=s3cret dbname=hermes", "s3cret"},
		{"host=db password='s3 cret' dbname=hermes", "s3 cret"},
	} {
		got := Redact(tc.in)
		if strings.Contains(got, tc.hidden) || !strings.Contains(got, "xxxxx") {
			t.Errorf("Redact(%q) = %q", tc.in, got)
		}
	}
}
