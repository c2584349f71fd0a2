package agent

import (
	"context"
	"fmt"

	"github.com/hermes-go/hermes/schema"
)

// describeImages replaces the images of msgs with text for a model that
// cannot see them: a description by Describe (upstream's vision_analyze on
// the auxiliary vision model), or a note saying an image was there. The
// history keeps the images; only this call's copy changes. The person is
// told once per turn what to set when nothing can describe them.
func (l *Loop) describeImages(ctx context.Context, modelName string, msgs []schema.Message, obs Observer, record func(...schema.Payload) error) ([]schema.Message, error) {
	var out []schema.Message
	told := false
	for i, m := range msgs {
		if len(m.Images) == 0 {
			continue
		}
		if out == nil {
			out = append([]schema.Message(nil), msgs...)
		}
		c := m
		c.Images = nil
		for _, ref := range m.Images {
			text, err := l.describe(ctx, modelName, ref, record)
			if err != nil {
				return nil, err
			}
			if text == "" {
				text = fmt.Sprintf("[The user attached an image (%s), but %s cannot see images and no vision model is configured to describe it.]", imageName(ref), modelName)
				if !told {
					told = true
					obs(Observation{Kind: ObserveStatus, Text: fmt.Sprintf("%s cannot see images: set auxiliary.vision (a vision model) in config.yaml to have images described, model.supports_vision: true if the model can see them, or switch to a vision model", modelName)})
				}
			}
			if c.Content != "" {
				c.Content += "\n\n"
			}
			c.Content += text
		}
		out[i] = c
	}
	if out == nil {
		return msgs, nil
	}
	return out, nil
}

// describe asks Describe about one image; "" when there is none to ask or
// it failed (the failure is in the text the model gets).
func (l *Loop) describe(ctx context.Context, modelName string, ref schema.ImageRef, record func(...schema.Payload) error) (string, error) {
	if l.Describe == nil {
		return "", nil
	}
	text, call, err := l.Describe(ctx, ref)
	if call != nil {
		if rerr := record(*call); rerr != nil {
			return "", rerr
		}
	}
	if err != nil {
		return fmt.Sprintf("[The user attached an image (%s); %s cannot see images and describing it failed: %v]", imageName(ref), modelName, err), nil
	}
	// The hash lets the model ask vision_analyze (image_url sha256:…)
	// more about the image than the description says.
	return fmt.Sprintf("[The user attached an image (%s, sha256:%s). %s cannot see images; a vision model describes it (vision_analyze with image_url sha256:%s answers more questions about it):]\n%s",
		imageName(ref), ref.SHA256, modelName, ref.SHA256, text), nil
}

func imageName(ref schema.ImageRef) string {
	if ref.Name != "" {
		return ref.Name
	}
	return ref.MediaType
}
