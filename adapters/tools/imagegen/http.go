package imagegen

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hermes-go/hermes/events/blobs"
)

// maxAnswer bounds a service's JSON answer: OpenRouter's carries the image
// as a data URL, a third larger than the largest image accepted.
const maxAnswer = blobs.MaxImageBytes/3*4 + 1<<20

// statusError is a service's answer with a status other than 2xx: the
// status and what the service said, for the model and the user to read.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string {
	if e.msg == "" {
		return fmt.Sprintf("HTTP %d", e.status)
	}
	return fmt.Sprintf("HTTP %d: %s", e.status, e.msg)
}

// call sends body (nil: none) as JSON with the authorization header auth
// and decodes the answer into out (nil: ignored). The key never appears in
// what it returns: a service that echoes it has it blanked.
func (t *Tool) call(ctx context.Context, method, u, auth string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "hermes-go (image_generate)")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return t.hide(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return t.hide(err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &statusError{status: resp.StatusCode, msg: t.hide(errors.New(serviceMessage(data))).Error()}
	}
	if len(data) > maxAnswer {
		return fmt.Errorf("the answer is larger than %d MiB", maxAnswer>>20)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("the answer is not the JSON expected (%v): %s", err, clip(string(data)))
	}
	return nil
}

// hide blanks the key in an error's text.
func (t *Tool) hide(err error) error {
	if err == nil || len(t.o.APIKey) < 4 || !strings.Contains(err.Error(), t.o.APIKey) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), t.o.APIKey, "[key]"))
}

// serviceMessage is what an error answer says, in the shapes the services
// use: {"error":{"message"}} (OpenAI, OpenRouter), {"error":"…"} (xAI),
// {"detail":"…"} (FAL's request errors, with error_type),
// {"detail":[{"loc","msg"}]} (FAL's validation errors), {"message"};
// otherwise the start of the text.
func serviceMessage(data []byte) string {
	var m struct {
		Error     json.RawMessage `json:"error"`
		Detail    json.RawMessage `json:"detail"`
		ErrorType string          `json:"error_type"`
		Message   string          `json:"message"`
	}
	if json.Unmarshal(data, &m) != nil {
		return clip(string(data))
	}
	var s string
	var obj struct {
		Message string `json:"message"`
	}
	var items []struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
	switch {
	case json.Unmarshal(m.Error, &obj) == nil && obj.Message != "":
		return clip(obj.Message)
	case json.Unmarshal(m.Error, &s) == nil && s != "":
		return clip(s)
	case json.Unmarshal(m.Detail, &s) == nil && s != "":
		if m.ErrorType != "" {
			s += " (" + m.ErrorType + ")"
		}
		return clip(s)
	case json.Unmarshal(m.Detail, &items) == nil && len(items) > 0:
		var parts []string
		for _, it := range items {
			var loc []string
			for _, l := range it.Loc {
				loc = append(loc, fmt.Sprint(l))
			}
			parts = append(parts, strings.TrimPrefix(strings.Join(loc, ".")+": ", ": ")+it.Msg)
		}
		return clip(strings.Join(parts, "; "))
	case m.Message != "":
		return clip(m.Message)
	}
	return clip(string(data))
}

// clip keeps an error's text short.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// poll calls check until it says the job is done, pausing between calls
// (from o.Poll, growing to five seconds), until ctx ends.
func (t *Tool) poll(ctx context.Context, check func() (done bool, err error)) error {
	pause := t.o.Poll
	if pause <= 0 {
		pause = 500 * time.Millisecond
	}
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		if pause = pause * 3 / 2; pause > 5*time.Second {
			pause = 5 * time.Second
		}
	}
}

// transient says whether a poll's failure may pass (the job is still
// there): a timeout, rate limit or server error.
func transient(err error) bool {
	var se *statusError
	if !errors.As(err, &se) {
		return false
	}
	switch se.status {
	case 408, 409, 425, 429, 500, 502, 503, 504:
		return true
	}
	return false
}

// fetch returns an image's bytes from a data: URL or by downloading an
// http(s) one, without the service's key (the URLs are its CDN's), at most
// one byte over the limit blobs enforce.
func (t *Tool) fetch(ctx context.Context, u string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, payload, ok := strings.Cut(rest, ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return nil, errors.New("the image's data URL is not base64")
		}
		if base64.StdEncoding.DecodedLen(len(payload)) > blobs.MaxImageBytes+3 {
			return nil, fmt.Errorf("%w (%.1f MiB)", blobs.ErrTooLarge, float64(base64.StdEncoding.DecodedLen(len(payload)))/(1<<20))
		}
		data, err := base64.StdEncoding.DecodeString(payload)
		if err != nil {
			return nil, fmt.Errorf("the image's data URL: %w", err)
		}
		return data, nil
	}
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") {
		return nil, fmt.Errorf("the image's URL %q is neither http(s) nor data:", clip(u))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download the image: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download the image: HTTP %d", resp.StatusCode)
	}
	if resp.ContentLength > blobs.MaxImageBytes {
		return nil, fmt.Errorf("download the image: %w (%.1f MiB)", blobs.ErrTooLarge, float64(resp.ContentLength)/(1<<20))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, blobs.MaxImageBytes+1))
	if err != nil {
		return nil, fmt.Errorf("download the image: %w", err)
	}
	return data, nil
}

// sameOrigin says whether u is on base's scheme and host: a URL the
// service hands back is called with its key only then.
func sameOrigin(u, base string) bool {
	a, err1 := url.Parse(u)
	b, err2 := url.Parse(base)
	return err1 == nil && err2 == nil && a.Scheme == b.Scheme && a.Host == b.Host
}
