// Package clarify is the clarify tool: the agent asks the person a
// question, optionally with choices, and waits for the answer.
package clarify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
)

// Tool is the clarify tool.
type Tool struct{ Timeout time.Duration }

func (Tool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "clarify", Description: "Ask the user a question when the task is ambiguous and you cannot proceed without their answer. Offer choices when there are a few clear options.",
		Parameters: map[string]any{"type": "object", "required": []string{"question"}, "properties": map[string]any{
			"question": map[string]any{"type": "string"},
			"choices":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		}}}
}

// Flags: interactive, so a response holding a clarify runs its calls one
// by one.
func (Tool) Flags() tool.Flags { return tool.Flags{Interactive: true, ReadOnly: true} }

func (t Tool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Question string   `json:"question"`
		Choices  []string `json:"choices"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("invalid arguments: %v", err)
	}
	if a.Question == "" {
		return "", errors.New("question is empty")
	}
	env := tool.EnvFrom(ctx)
	if env.Asker == nil {
		return "", fmt.Errorf("%w; decide yourself and say what you assumed", tool.ErrNoAsker)
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ans, err := env.Asker.Ask(actx, tool.Question{Kind: tool.QuestionClarify, Text: a.Question, Choices: a.Choices, Timeout: timeout})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if errors.Is(err, tool.ErrNoAsker) {
			// An asker that finds nobody to ask (a turn whose caller
			// cannot ask): said as when there is no asker at all.
			return "", fmt.Errorf("%w; decide yourself and say what you assumed", tool.ErrNoAsker)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return "", fmt.Errorf("the user did not answer within %s; decide yourself and say what you assumed", timeout)
		}
		return "", fmt.Errorf("the question could not be asked (%v); decide yourself and say what you assumed", err)
	}
	return "The user answered: " + ans, nil
}
