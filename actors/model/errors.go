package model

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrorClass is what went wrong with a model call, decided once and then
// used to pick the recovery.
type ErrorClass string

// The classes of provider errors.
const (
	ClassRateLimit         ErrorClass = "rate_limit"
	ClassBilling           ErrorClass = "billing"
	ClassAuth              ErrorClass = "auth"
	ClassForbidden         ErrorClass = "forbidden"
	ClassOverloaded        ErrorClass = "overloaded"
	ClassServer            ErrorClass = "server"
	ClassTimeout           ErrorClass = "timeout"
	ClassContextOverflow   ErrorClass = "context_overflow"
	ClassPayloadTooLarge   ErrorClass = "payload_too_large"
	ClassModelNotFound     ErrorClass = "model_not_found"
	ClassContentPolicy     ErrorClass = "content_policy"
	ClassFormat            ErrorClass = "format"
	ClassThinkingSignature ErrorClass = "thinking_signature"
	ClassOutputCap         ErrorClass = "output_cap"
	ClassInvalidUnicode    ErrorClass = "invalid_unicode"
	// ClassStreamCut is a stream that ended before its terminator: the
	// answer is incomplete. Transient: the next attempt usually completes.
	ClassStreamCut ErrorClass = "stream_cut"
	// ClassMalformed is a response that breaks the wire format or its
	// limits (an out-of-range index, an HTML page instead of an event
	// stream). The same server would most likely answer the same way, so it
	// is not retried on the same provider.
	ClassMalformed ErrorClass = "malformed_response"
	// ClassCallTimeout is a model call that ran past its overall deadline
	// while chunks kept arriving; retrying would take as long again.
	ClassCallTimeout ErrorClass = "call_timeout"
	// ClassUnreachable is a server that cannot be reached at all: the
	// connection was refused, the host name does not resolve, no route,
	// or its certificate is not trusted. Waiting does not help, so it is
	// not retried (a fallback is tried at once).
	ClassUnreachable ErrorClass = "unreachable"
	// ClassNoAnswer is a server that took the request and sent nothing
	// back within the first-byte timeout. Each attempt would cost that
	// whole timeout again, so it is not retried on the same provider.
	ClassNoAnswer ErrorClass = "no_answer"
	ClassUnknown  ErrorClass = "unknown"
)

// ProviderError is a failed model call as the adapters report it: the
// HTTP status (0 for transport failures), the provider's message and any
// Retry-After it sent.
type ProviderError struct {
	Provider   string
	Status     int
	Message    string
	RetryAfter time.Duration
	// Transport is set for failures before any HTTP answer (connection
	// refused, reset, a stalled stream).
	Transport bool
	Err       error
}

func (e *ProviderError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s: %s", e.Provider, e.Message)
	}
	return fmt.Sprintf("%s: HTTP %d: %s", e.Provider, e.Status, e.Message)
}

func (e *ProviderError) Unwrap() error { return e.Err }

// ErrStalled is the cause of a stream cancelled for lack of chunks.
var ErrStalled = errors.New("the stream stalled: no chunk arrived in time")

// ErrCallTimeout is the cause of a model call cancelled by its overall
// deadline (agent.model_call_timeout): a server that keeps the stream
// alive without ever finishing it.
var ErrCallTimeout = errors.New("the model call ran past its deadline")

// ErrNoAnswer is the cause of a model call cancelled because its server
// sent no answer within the first-byte timeout
// (agent.first_byte_timeout).
var ErrNoAnswer = errors.New("it took the request and sent nothing back")

// ErrStreamCut is wrapped by the adapters when a stream ends, cleanly or
// not, before the terminator of its wire format (finish_reason or [DONE],
// message_stop, response.completed): what arrived is not a whole answer.
var ErrStreamCut = errors.New("the stream was cut before the response was complete")

// ErrMalformedStream is wrapped by the adapters when a response breaks its
// wire format or the bounds the adapters put on it.
var ErrMalformedStream = errors.New("malformed response stream")

var (
	reOverflow  = regexp.MustCompile(`(?i)(context.{0,20}(length|window|limit)|maximum context|too many tokens|prompt is too long|input is too long|reduce the length|exceeds? the (model'?s )?(maximum|context))`)
	reBilling   = regexp.MustCompile(`(?i)(insufficient.?quota|billing|credit balance|payment required|exceeded your current quota|out of credits)`)
	reOverload  = regexp.MustCompile(`(?i)overloaded`)
	rePolicy    = regexp.MustCompile(`(?i)(content.?(policy|filter|management)|safety system|flagged)`)
	reSignature = regexp.MustCompile(`(?i)(thinking|reasoning).{0,60}signature|signature.{0,60}(thinking|reasoning)`)
	reOutputCap = regexp.MustCompile(`(?i)max_?(completion_|output_)?tokens.{0,80}?(\d{3,7})`)
	reUnicode   = regexp.MustCompile(`(?i)(surrogate|invalid (utf-?8|unicode)|unicode.{0,20}(error|invalid))`)
	reModel     = regexp.MustCompile(`(?i)(model.{0,40}(not found|does not exist|not exist|unknown|no such))`)
)

// unreachable reports a failure to connect that no retry will mend.
func unreachable(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsNotFound || !dns.IsTemporary
	}
	var cert *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.As(err, &cert) || errors.As(err, &unknownCA) || errors.As(err, &hostname)
}

// URLOf returns the URL a failed request went to, when err says.
func URLOf(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.URL
	}
	return ""
}

// Classify decides the class of err.
func Classify(err error) ErrorClass {
	if err == nil {
		return ""
	}
	// The adapters' own causes come first: they ride on transport errors.
	switch {
	case errors.Is(err, ErrCallTimeout):
		return ClassCallTimeout
	case errors.Is(err, ErrNoAnswer):
		return ClassNoAnswer
	case errors.Is(err, ErrMalformedStream):
		return ClassMalformed
	case errors.Is(err, ErrStreamCut):
		return ClassStreamCut
	case errors.Is(err, ErrStalled) || errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	case unreachable(err):
		return ClassUnreachable
	}
	var pe *ProviderError
	if !errors.As(err, &pe) {
		var ne net.Error
		if errors.As(err, &ne) {
			return ClassTimeout
		}
		return ClassUnknown
	}
	msg := pe.Message
	switch {
	case pe.Transport:
		return ClassTimeout
	case pe.Status == 402 || reBilling.MatchString(msg):
		return ClassBilling
	case reUnicode.MatchString(msg):
		return ClassInvalidUnicode
	case reSignature.MatchString(msg):
		return ClassThinkingSignature
	case pe.Status == 413:
		if reOverflow.MatchString(msg) {
			return ClassContextOverflow
		}
		return ClassPayloadTooLarge
	case reOverflow.MatchString(msg) && (pe.Status == 400 || pe.Status == 422 || pe.Status == 0):
		return ClassContextOverflow
	case (pe.Status == 400 || pe.Status == 422) && reOutputCap.MatchString(msg):
		return ClassOutputCap
	case pe.Status == 401:
		return ClassAuth
	case pe.Status == 403:
		return ClassForbidden
	case pe.Status == 404 || reModel.MatchString(msg):
		return ClassModelNotFound
	case pe.Status == 429:
		return ClassRateLimit
	case pe.Status == 529 || pe.Status == 503 && reOverload.MatchString(msg) || reOverload.MatchString(msg):
		return ClassOverloaded
	case pe.Status == 408 || pe.Status == 504:
		return ClassTimeout
	case pe.Status >= 500:
		return ClassServer
	case (pe.Status == 400 || pe.Status == 422) && rePolicy.MatchString(msg):
		return ClassContentPolicy
	case pe.Status == 400 || pe.Status == 422:
		return ClassFormat
	}
	return ClassUnknown
}

// OutputCapFrom reads the largest allowed output from an output-cap error
// (the smallest number over 100 in the message that is below the request).
func OutputCapFrom(msg string, requested int) int {
	best := 0
	for _, m := range regexp.MustCompile(`\d{3,7}`).FindAllString(msg, -1) {
		n, _ := strconv.Atoi(m)
		if n >= 256 && (requested == 0 || n < requested) && (best == 0 || n < best) {
			best = n
		}
	}
	return best
}

// ParseRetryAfter reads a Retry-After header value (seconds or a date).
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := time.Parse(time.RFC1123, v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}
