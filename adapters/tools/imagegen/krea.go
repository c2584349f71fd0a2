package imagegen

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// kreaPaths are Krea 2's models and their endpoints' last segment.
var kreaPaths = map[string]string{"krea-2-medium": "medium", "krea-2-large": "large", "krea-2-medium-turbo": "medium-turbo"}

var kreaRatios = [3]string{"16:9", "1:1", "9:16"}

// krea speaks Krea's job API (https://docs.krea.ai/developers/krea-2/overview):
// POST {base}/generate/image/krea/krea-2/{medium|large|medium-turbo}
// answers a job_id; GET {base}/jobs/{id} until its status is completed
// (result.urls), failed (result.error) or cancelled. The key goes as a
// bearer token.
type krea struct{ t *Tool }

func (k krea) generate(ctx context.Context, prompt, aspect string) (image, error) {
	t := k.t
	out := image{model: t.o.Model}
	path := kreaPaths[t.o.Model]
	if path == "" {
		return out, fmt.Errorf("unknown Krea model %q: use krea-2-medium, krea-2-large or krea-2-medium-turbo", t.o.Model)
	}
	auth := "Bearer " + t.o.APIKey
	body := map[string]any{"prompt": prompt, "aspect_ratio": kreaRatios[aspectIndex[aspect]], "resolution": "1K", "creativity": "medium"}
	var sub struct {
		JobID string `json:"job_id"`
	}
	if err := t.call(ctx, "POST", t.o.BaseURL+"/generate/image/krea/krea-2/"+path, auth, body, &sub); err != nil {
		return out, fmt.Errorf("Krea refused the job: %w", err)
	}
	if sub.JobID == "" {
		return out, errors.New("Krea answered without a job_id")
	}
	var job struct {
		Status      string `json:"status"`
		CompletedAt string `json:"completed_at"`
		Result      struct {
			URLs  []string `json:"urls"`
			URL   string   `json:"url"`
			Error string   `json:"error"`
		} `json:"result"`
	}
	last := "queued"
	err := t.poll(ctx, func() (bool, error) {
		if err := t.call(ctx, "GET", t.o.BaseURL+"/jobs/"+url.PathEscape(sub.JobID), auth, nil, &job); err != nil {
			if transient(err) {
				return false, nil
			}
			return false, fmt.Errorf("Krea's status of job %s: %w", sub.JobID, err)
		}
		if job.Status != "" {
			last = job.Status
		}
		switch strings.ToLower(job.Status) {
		case "completed", "failed", "cancelled":
			return true, nil
		}
		return job.CompletedAt != "", nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return out, fmt.Errorf("Krea job %s was still %s: %w", sub.JobID, last, ctx.Err())
		}
		return out, err
	}
	switch strings.ToLower(job.Status) {
	case "failed":
		if job.Result.Error == "" {
			job.Result.Error = "no reason given"
		}
		return out, fmt.Errorf("Krea job %s failed: %s", sub.JobID, clip(job.Result.Error))
	case "cancelled":
		return out, fmt.Errorf("Krea job %s was cancelled", sub.JobID)
	}
	for _, u := range append(job.Result.URLs, job.Result.URL) {
		if u != "" {
			out.url = u
			return out, nil
		}
	}
	return out, fmt.Errorf("Krea job %s completed without an image", sub.JobID)
}
