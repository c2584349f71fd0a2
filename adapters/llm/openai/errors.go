package openai

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openai/openai-go"

	"github.com/hermes-go/hermes/actors/agent"
)

// wrapErr turns an SDK error into an agent.ProviderError the recovery
// ladder can classify; a cancellation by the caller passes through.
func wrapErr(ctx context.Context, provider string, wd *agent.Watchdog, err error) error {
	if wd != nil && wd.Stalled() {
		return &agent.ProviderError{Provider: provider, Transport: true, Message: agent.ErrStalled.Error(), Err: agent.ErrStalled}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var apierr *openai.Error
	if errors.As(err, &apierr) {
		pe := &agent.ProviderError{Provider: provider, Status: apierr.StatusCode, Message: apierr.Message, Err: err}
		if pe.Message == "" {
			pe.Message = apierr.RawJSON()
		}
		if pe.Message == "" {
			pe.Message = fmt.Sprint(err)
		}
		if apierr.Response != nil {
			pe.RetryAfter = agent.ParseRetryAfter(apierr.Response.Header.Get("Retry-After"), time.Now())
		}
		return pe
	}
	return &agent.ProviderError{Provider: provider, Transport: true, Message: err.Error(), Err: err}
}
