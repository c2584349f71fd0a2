package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Signature headers.
const (
	// HeaderSignature is Hermes' timestamped signature:
	// "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>".
	// Several v1 entries may be given (one per secret while a secret is
	// being rotated); one match is enough.
	HeaderSignature = "X-Hermes-Signature"
	// HeaderDelivery names a delivery; a delivery seen before is refused.
	HeaderDelivery = "X-Hermes-Delivery"
	// HeaderGitHubSignature is GitHub's "sha256=<hex HMAC-SHA256(secret,
	// body)>". It carries no timestamp: replays are caught by
	// X-GitHub-Delivery alone.
	HeaderGitHubSignature = "X-Hub-Signature-256"
	// HeaderGitHubDelivery is GitHub's delivery id.
	HeaderGitHubDelivery = "X-GitHub-Delivery"
	// HeaderGitHubEvent names GitHub's event (push, pull_request, ping…).
	HeaderGitHubEvent = "X-GitHub-Event"
)

// DefaultWindow is how far a timestamped signature may be from the
// receiver's clock, either way.
const DefaultWindow = 5 * time.Minute

// Reasons a request is refused; they are recorded in
// GatewayInboundRefused.Reason.
var (
	ErrNoSignature  = errors.New("no signature (X-Hermes-Signature or X-Hub-Signature-256)")
	ErrBadSignature = errors.New("bad signature")
	ErrMalformed    = errors.New("malformed signature header")
	ErrStale        = errors.New("signature timestamp outside the allowed window")
	ErrReplayed     = errors.New("delivery seen before (replay)")
)

// Sign returns the X-Hermes-Signature value of body signed with secret at
// time t. The gateway signs its callbacks with it; senders may use it too.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, []byte(ts+"."), body))
}

// SignGitHub returns the X-Hub-Signature-256 value of body, as GitHub
// computes it.
func SignGitHub(secret string, body []byte) string {
	return "sha256=" + hex.EncodeToString(mac(secret, body))
}

func mac(secret string, parts ...[]byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// signed is a request whose signature checked out.
type signed struct {
	// form is "hermes" or "github".
	form string
	// ts is the signed timestamp (hermes form): with the body it names a
	// delivery whose sender gave no id, so a replay of the same signed
	// request has the same id and a new signature of the same body not.
	ts string
}

// Verify checks the signature of a request with body against secret: the
// X-Hermes-Signature form when present (its timestamp within window of
// now), else GitHub's X-Hub-Signature-256. Comparisons take constant time.
// The error is one of ErrNoSignature, ErrMalformed, ErrBadSignature and
// ErrStale.
func Verify(secret string, h http.Header, body []byte, now time.Time, window time.Duration) error {
	_, err := verify(secret, h, body, now, window)
	return err
}

func verify(secret string, h http.Header, body []byte, now time.Time, window time.Duration) (signed, error) {
	if v := h.Get(HeaderSignature); v != "" {
		return verifyHermes(secret, v, body, now, window)
	}
	if v := h.Get(HeaderGitHubSignature); v != "" {
		hexSig, ok := strings.CutPrefix(strings.TrimSpace(v), "sha256=")
		if !ok {
			return signed{}, fmt.Errorf("%w: %s must start with sha256=", ErrMalformed, HeaderGitHubSignature)
		}
		got, err := hex.DecodeString(hexSig)
		if err != nil {
			return signed{}, fmt.Errorf("%w: %s is not hex", ErrMalformed, HeaderGitHubSignature)
		}
		if !hmac.Equal(got, mac(secret, body)) {
			return signed{}, ErrBadSignature
		}
		return signed{form: "github"}, nil
	}
	return signed{}, ErrNoSignature
}

func verifyHermes(secret, header string, body []byte, now time.Time, window time.Duration) (signed, error) {
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return signed{}, fmt.Errorf("%w: %q is not key=value", ErrMalformed, part)
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil {
				return signed{}, fmt.Errorf("%w: v1 is not hex", ErrMalformed)
			}
			sigs = append(sigs, b)
		}
		// Other schemes (v0, v2…) are ignored, as a receiver of a newer
		// sender should.
	}
	if ts == "" || len(sigs) == 0 {
		return signed{}, fmt.Errorf("%w: %s needs t= and v1=", ErrMalformed, HeaderSignature)
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return signed{}, fmt.Errorf("%w: t is not a unix time", ErrMalformed)
	}
	want := mac(secret, []byte(ts+"."), body)
	ok := false
	for _, s := range sigs {
		// Every entry is compared, so the time taken does not say which
		// one matched.
		if hmac.Equal(s, want) {
			ok = true
		}
	}
	if !ok {
		return signed{}, ErrBadSignature
	}
	if d := now.Sub(time.Unix(unix, 0)); d > window || d < -window {
		return signed{}, fmt.Errorf("%w (%s)", ErrStale, d.Round(time.Second))
	}
	return signed{form: "hermes", ts: ts}, nil
}
