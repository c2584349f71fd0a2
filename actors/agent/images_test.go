package agent_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/schema"
)

var dot, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

func imageRig(t *testing.T, sees bool) (*rig, schema.ImageRef) {
	r := newRig(t, nil, llmtest.Reply{Content: "seen"}, llmtest.Reply{Content: "seen again"})
	bs := blobs.Open(t.TempDir())
	ref, err := bs.PutImage(context.Background(), dot, "dot.png")
	if err != nil {
		t.Fatal(err)
	}
	r.loop.Blobs = bs
	r.loop.Sees = func(string) bool { return sees }
	return r, ref
}

func (r *rig) imageTurn(t *testing.T, ref schema.ImageRef) {
	t.Helper()
	if _, err := r.loop.TurnMessage(context.Background(), r.tr, "turn-1", schema.UserMessageAdded{Content: "what is this?", Images: []schema.ImageRef{ref}}); err != nil {
		t.Fatal(err)
	}
}

// A model that sees gets the picture; the event and the history keep the
// reference, never the bytes.
func TestImageReachesAVisionModel(t *testing.T) {
	r, ref := imageRig(t, true)
	r.imageTurn(t, ref)
	raw := string(r.srv.Requests()[0].Raw)
	if !strings.Contains(raw, `"type":"image_url"`) || !strings.Contains(raw, base64.StdEncoding.EncodeToString(dot)) {
		t.Fatalf("request %s", raw)
	}
	u := r.rec.all()[0].(schema.UserMessageAdded)
	if len(u.Images) != 1 || u.Images[0] != ref {
		t.Fatalf("event %+v", u)
	}
	if imgs := r.tr.Messages[0].Images; len(imgs) != 1 || imgs[0] != ref {
		t.Fatalf("history %+v", r.tr.Messages[0])
	}
}

// A model that cannot see gets a note instead, and the person is told
// what to set; nothing of the image is sent.
func TestBlindModelWithoutDescriber(t *testing.T) {
	r, ref := imageRig(t, false)
	r.imageTurn(t, ref)
	msgs := r.sent(t, 0)
	last := msgs[len(msgs)-1]
	content, _ := last["content"].(string)
	if !strings.Contains(content, "what is this?") || !strings.Contains(content, "cannot see images") || strings.Contains(string(r.srv.Requests()[0].Raw), "base64") {
		t.Fatalf("request %s", r.srv.Requests()[0].Raw)
	}
	told := false
	for _, o := range r.obs {
		if o.Kind == agent.ObserveStatus && strings.Contains(o.Text, "auxiliary.vision") && strings.Contains(o.Text, "model.supports_vision") {
			told = true
		}
	}
	if !told {
		t.Fatalf("the person was not told what to set: %+v", r.obs)
	}
	// History keeps the image: a later switch to a vision model sees it.
	if len(r.tr.Messages[0].Images) != 1 {
		t.Fatal("the history lost the image")
	}
}

// With an auxiliary vision model, its description goes to the blind model
// (upstream's vision_analyze) and its call is recorded; a failure to
// describe is said in the text, not hidden.
func TestBlindModelGetsADescription(t *testing.T) {
	r, ref := imageRig(t, false)
	calls := 0
	r.loop.Describe = func(_ context.Context, got schema.ImageRef) (string, *schema.AuxiliaryCallCompleted, error) {
		calls++
		if got != ref {
			t.Errorf("asked about %+v", got)
		}
		return "A single black pixel on white.", &schema.AuxiliaryCallCompleted{Purpose: "vision", Model: "gpt-4o-mini"}, nil
	}
	r.imageTurn(t, ref)
	msgs := r.sent(t, 0)
	if c, _ := msgs[len(msgs)-1]["content"].(string); !strings.Contains(c, "A single black pixel on white.") || !strings.Contains(c, "what is this?") ||
		!strings.Contains(c, "vision_analyze with image_url sha256:"+ref.SHA256) {
		t.Fatalf("request %s", r.srv.Requests()[0].Raw)
	}
	var aux []schema.AuxiliaryCallCompleted
	for _, p := range r.rec.all() {
		if a, ok := p.(schema.AuxiliaryCallCompleted); ok {
			aux = append(aux, a)
		}
	}
	if calls != 1 || len(aux) != 1 || aux[0].Purpose != "vision" {
		t.Fatalf("%d describe calls, recorded %+v", calls, aux)
	}

	r.loop.Describe = func(context.Context, schema.ImageRef) (string, *schema.AuxiliaryCallCompleted, error) {
		return "", nil, errors.New("auxiliary.vision (tiny): 404 model not found")
	}
	if _, err := r.loop.Turn(context.Background(), r.tr, "turn-2", "and now?"); err != nil {
		t.Fatal(err)
	}
	if raw := string(r.srv.Requests()[1].Raw); !strings.Contains(raw, "describing it failed: auxiliary.vision (tiny): 404 model not found") {
		t.Fatalf("request %s", raw)
	}
}
