package model

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

// A refused connection and an unknown host are unreachable, not timeouts:
// the ladder does not wait for them.
func TestUnreachableIsNotRetried(t *testing.T) {
	client := &http.Client{Timeout: 5 * time.Second}
	for _, u := range []string{"http://127.0.0.1:1/v1/models", "http://nonexistent.invalid/v1/models"} {
		_, err := client.Get(u)
		if err == nil {
			t.Fatalf("%s answered", u)
		}
		pe := &ProviderError{Provider: "openai", Transport: true, Message: err.Error(), Err: err}
		if c := Classify(pe); c != ClassUnreachable || transient(c) {
			t.Fatalf("%s: class %s", u, c)
		}
		if got := URLOf(pe); got != u {
			t.Fatalf("URL %q", got)
		}
	}
	// A temporary DNS failure stays a timeout.
	if c := Classify(&ProviderError{Transport: true, Err: &net.DNSError{Err: "server misbehaving", IsTemporary: true}}); c == ClassUnreachable {
		t.Fatal("a temporary DNS failure is unreachable")
	}
	if c := Classify(errors.Join(context.DeadlineExceeded)); c != ClassTimeout {
		t.Fatal(c)
	}
}
