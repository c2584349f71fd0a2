package imagegen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// fal speaks FAL's queue API (https://docs.fal.ai/model-endpoints/queue):
// POST {base}/{model} with the model's input submits a job and answers its
// request_id and the URLs of its status, result and cancellation; GET the
// status until it is COMPLETED; GET the result, whose images[].url are
// downloaded (from FAL's CDN, without the key). The key goes in
// "Authorization: Key …".
type fal struct{ t *Tool }

// falModel is how one of FAL's models takes its size, and the inputs
// upstream pins for it (PNG, one image, a moderate quality).
type falModel struct {
	key   string // image_size or aspect_ratio
	sizes [3]string
	extra map[string]any
}

var (
	falPreset   = [3]string{"landscape_16_9", "square_hd", "portrait_16_9"}
	falPreset43 = [3]string{"landscape_4_3", "square_hd", "portrait_4_3"}
	falRatio    = [3]string{"16:9", "1:1", "9:16"}
	falLiteral  = [3]string{"1536x1024", "1024x1024", "1024x1536"}
	png1        = map[string]any{"num_images": 1, "output_format": "png"}
)

// falModels are the models upstream's FAL catalog offers. Another model
// is sent FAL's usual preset image_size.
var falModels = map[string]falModel{
	"fal-ai/flux-2/klein/9b":              {"image_size", falPreset, map[string]any{"num_inference_steps": 4, "output_format": "png"}},
	"fal-ai/flux-2-pro":                   {"image_size", falPreset, png1},
	"fal-ai/z-image/turbo":                {"image_size", falPreset, png1},
	"fal-ai/nano-banana-pro":              {"aspect_ratio", falRatio, map[string]any{"num_images": 1, "output_format": "png", "resolution": "1K"}},
	"fal-ai/gpt-image-1.5":                {"image_size", falLiteral, map[string]any{"num_images": 1, "output_format": "png", "quality": "medium"}},
	"fal-ai/gpt-image-2":                  {"image_size", falPreset43, map[string]any{"num_images": 1, "output_format": "png", "quality": "medium"}},
	"fal-ai/ideogram/v3":                  {"image_size", falPreset, nil},
	"fal-ai/recraft/v4/pro/text-to-image": {"image_size", falPreset, nil},
	"fal-ai/qwen-image":                   {"image_size", falPreset, png1},
	"fal-ai/krea/v2/medium/text-to-image": {"aspect_ratio", falRatio, nil},
	"fal-ai/krea/v2/large/text-to-image":  {"aspect_ratio", falRatio, nil},
}

// falInput is a model's input for prompt at aspect.
func falInput(model, prompt, aspect string) map[string]any {
	m, ok := falModels[model]
	if !ok {
		m = falModel{key: "image_size", sizes: falPreset}
	}
	in := map[string]any{"prompt": prompt, m.key: m.sizes[aspectIndex[aspect]]}
	for k, v := range m.extra {
		in[k] = v
	}
	return in
}

func (f fal) generate(ctx context.Context, prompt, aspect string) (image, error) {
	t := f.t
	auth := "Key " + t.o.APIKey
	model := strings.Trim(t.o.Model, "/")
	out := image{model: model}
	var job struct {
		RequestID   string `json:"request_id"`
		StatusURL   string `json:"status_url"`
		ResponseURL string `json:"response_url"`
		CancelURL   string `json:"cancel_url"`
	}
	if err := t.call(ctx, "POST", t.o.BaseURL+"/"+model, auth, falInput(model, prompt, aspect), &job); err != nil {
		return out, fmt.Errorf("FAL refused the job: %w", err)
	}
	if job.RequestID == "" {
		return out, errors.New("FAL's queue answered without a request_id")
	}
	// The status and result live under the model's app (owner/name), not
	// its subpath; URLs FAL hands back are used when they are FAL's own.
	app := model
	if parts := strings.SplitN(model, "/", 3); len(parts) == 3 {
		app = parts[0] + "/" + parts[1]
	}
	own := func(u, path string) string {
		if u != "" && sameOrigin(u, t.o.BaseURL) {
			return u
		}
		return t.o.BaseURL + "/" + app + "/requests/" + job.RequestID + path
	}
	statusURL, resultURL, cancelURL := own(job.StatusURL, "/status"), own(job.ResponseURL, ""), own(job.CancelURL, "/cancel")
	last := "IN_QUEUE"
	err := t.poll(ctx, func() (bool, error) {
		var st struct {
			Status    string `json:"status"`
			Error     string `json:"error"`
			ErrorType string `json:"error_type"`
		}
		if err := t.call(ctx, "GET", statusURL, auth, nil, &st); err != nil {
			if transient(err) {
				return false, nil
			}
			return false, fmt.Errorf("FAL's status of request %s: %w", job.RequestID, err)
		}
		if st.Status != "" {
			last = st.Status
		}
		if st.Error != "" {
			if st.ErrorType != "" {
				st.Error += " (" + st.ErrorType + ")"
			}
			return false, fmt.Errorf("FAL request %s failed: %s", job.RequestID, clip(st.Error))
		}
		switch st.Status {
		case "COMPLETED":
			return true, nil
		case "FAILED", "ERROR", "CANCELED", "CANCELLED":
			return false, fmt.Errorf("FAL request %s ended %s", job.RequestID, st.Status)
		}
		return false, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			// Leave no job running (and billed) that nobody waits for.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			t.call(cctx, "PUT", cancelURL, auth, nil, nil)
			cancel()
			return out, fmt.Errorf("FAL request %s was still %s (cancelled it): %w", job.RequestID, last, ctx.Err())
		}
		return out, err
	}
	var res struct {
		Images []struct {
			URL string `json:"url"`
		} `json:"images"`
	}
	if err := t.call(ctx, "GET", resultURL, auth, nil, &res); err != nil {
		return out, fmt.Errorf("FAL request %s failed: %w", job.RequestID, err)
	}
	for _, im := range res.Images {
		if im.URL != "" {
			out.url = im.URL
			return out, nil
		}
	}
	return out, fmt.Errorf("FAL request %s completed without an image", job.RequestID)
}
