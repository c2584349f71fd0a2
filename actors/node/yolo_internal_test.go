package node

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/tool"
)

type fixedAsker string

func (f fixedAsker) Ask(context.Context, tool.Question) (string, error) { return string(f), nil }

// TestYoloStaysWithTheCaller: a yolo turn's request carries no permission
// (a "yolo" field sent by anyone decodes to nothing the grain uses), and its
// approvals are answered by the caller's side: "once" for an approval,
// the caller's own asker for anything else.
func TestYoloStaysWithTheCaller(t *testing.T) {
	var req request
	if err := json.Unmarshal([]byte(`{"op":"turn","id":"t1","text":"rm -rf x","yolo":true}`), &req); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(req)
	if strings.Contains(string(b), "yolo") {
		t.Fatalf("a request carries yolo: %s", b)
	}
	ctx := context.Background()
	y := yoloAsker{next: fixedAsker("blue")}
	if a, err := y.Ask(ctx, tool.Question{Kind: tool.QuestionApproval, Text: "Allow it?"}); a != "once" || err != nil {
		t.Fatalf("approval: %q %v", a, err)
	}
	if a, err := y.Ask(ctx, tool.Question{Kind: tool.QuestionClarify, Text: "Which colour?"}); a != "blue" || err != nil {
		t.Fatalf("clarify: %q %v", a, err)
	}
	if _, err := (yoloAsker{}).Ask(ctx, tool.Question{Kind: tool.QuestionClarify}); !errors.Is(err, tool.ErrNoAsker) {
		t.Fatalf("clarify with no asker: %v", err)
	}
}
