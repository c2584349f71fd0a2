package openai

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openai/openai-go"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/stream"
)

// wrapErr turns an SDK error into an model.ProviderError the recovery
// ladder can classify; a cancellation by the caller passes through.
func wrapErr(ctx context.Context, provider string, wd *model.Watchdog, w *stream.Watch, err error) error {
	if e := stream.Interrupted(ctx, provider, wd); e != nil {
		return e
	}
	var apierr *openai.Error
	if errors.As(err, &apierr) {
		pe := &model.ProviderError{Provider: provider, Status: apierr.StatusCode, Message: apierr.Message, Err: err}
		if pe.Message == "" {
			pe.Message = apierr.RawJSON()
		}
		if pe.Message == "" {
			pe.Message = fmt.Sprint(err)
		}
		if apierr.Response != nil {
			pe.RetryAfter = model.ParseRetryAfter(apierr.Response.Header.Get("Retry-After"), time.Now())
		}
		return pe
	}
	// An error object sent as an event: the server failed mid-answer and
	// said why (overloaded, rate limited); its message decides the class.
	if msg, ok := strings.CutPrefix(err.Error(), "received error while streaming: "); ok {
		return &model.ProviderError{Provider: provider, Message: msg, Err: err}
	}
	return stream.Wrap(provider, w, err)
}
