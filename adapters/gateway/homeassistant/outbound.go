package homeassistant

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// Send creates a persistent notification (title NotificationTitle) with
// the answer's text, cut at MaxMessage characters, through the REST API's
// persistent_notification.create service. The notification's id is
// derived from the reply's, so a retried delivery replaces the
// notification rather than adding a second one; the id is returned.
// Typing indicators and deltas are dropped (Home Assistant has neither).
func (a *Adapter) Send(ctx context.Context, out schema.Outbound) ([]string, error) {
	switch out.Kind {
	case schema.OutboundTyping, schema.OutboundDelta:
		return nil, nil
	case schema.OutboundReply, schema.OutboundNotice, schema.OutboundApproval, "":
	default:
		return nil, &gw.PermanentError{Err: fmt.Errorf("homeassistant: unknown outbound kind %q", out.Kind)}
	}
	text := strings.TrimSpace(out.Text)
	if text == "" {
		return nil, &gw.PermanentError{Err: errors.New("homeassistant: an empty message cannot be sent")}
	}
	if r := []rune(text); len(r) > MaxMessage {
		text = string(r[:MaxMessage])
	}
	id := "hermes_" + uuid.NewString()
	if key := first(out.ReplyID, out.Key); key != "" {
		id = "hermes_" + uuid.NewSHA1(uuid.NameSpaceURL, []byte(key)).String()
	}
	body, _ := json.Marshal(map[string]string{"title": NotificationTitle, "message": text, "notification_id": id})
	if err := a.post(ctx, "/api/services/persistent_notification/create", body); err != nil {
		return nil, err
	}
	return []string{id}, nil
}

// post calls one REST endpoint with the token, sorting its failures: 429
// and 503 with Retry-After wait, other 4xx are permanent (a bad token, a
// refused call), the rest is retried.
func (a *Adapter) post(ctx context.Context, path string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base.String()+path, bytes.NewReader(body))
	if err != nil {
		return &gw.PermanentError{Err: err}
	}
	req.Header.Set("Authorization", "Bearer "+a.cfg.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.cfg.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("homeassistant %s: %w", path, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	if resp.StatusCode < 300 {
		return nil
	}
	err = fmt.Errorf("homeassistant %s: %s: %s", path, resp.Status, strings.TrimSpace(string(msg)))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		after := 5 * time.Second
		if s, e := strconv.Atoi(resp.Header.Get("Retry-After")); e == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return &gw.RetryAfterError{After: after, Err: err}
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return &gw.PermanentError{Err: fmt.Errorf("%w (check HASS_TOKEN)", err)}
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return &gw.PermanentError{Err: err}
	}
	return err
}

func first(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}
