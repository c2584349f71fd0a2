package clarify

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/tool"
)

type asker func(context.Context, tool.Question) (string, error)

func (a asker) Ask(ctx context.Context, q tool.Question) (string, error) { return a(ctx, q) }

func TestClarify(t *testing.T) {
	var got tool.Question
	env := &tool.Env{Values: tool.NewSessionValues(), Asker: asker(func(_ context.Context, q tool.Question) (string, error) {
		got = q
		return "blue", nil
	})}
	out, err := Tool{}.Run(tool.WithEnv(context.Background(), env), json.RawMessage(`{"question":"Which colour?","choices":["red","blue"]}`))
	if err != nil || out != "The user answered: blue" || got.Kind != "clarify" || len(got.Choices) != 2 {
		t.Fatalf("%q %v %+v", out, err, got)
	}
	if !(Tool{}).Flags().Interactive {
		t.Fatal("clarify must be interactive")
	}
	_, err = Tool{}.Run(tool.WithEnv(context.Background(), &tool.Env{Values: tool.NewSessionValues()}), json.RawMessage(`{"question":"?"}`))
	if !errors.Is(err, tool.ErrNoAsker) {
		t.Fatalf("no asker: %v", err)
	}
	// An asker that finds nobody to ask says so; it is no timeout.
	nobody := &tool.Env{Values: tool.NewSessionValues(), Asker: asker(func(context.Context, tool.Question) (string, error) {
		return "", tool.ErrNoAsker
	})}
	_, err = Tool{}.Run(tool.WithEnv(context.Background(), nobody), json.RawMessage(`{"question":"?"}`))
	if !errors.Is(err, tool.ErrNoAsker) || strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("an asker with nobody to ask: %v", err)
	}
	// Any other failure of the asker is said as it is.
	broken := &tool.Env{Values: tool.NewSessionValues(), Asker: asker(func(context.Context, tool.Question) (string, error) {
		return "", errors.New("the chat is gone")
	})}
	_, err = Tool{}.Run(tool.WithEnv(context.Background(), broken), json.RawMessage(`{"question":"?"}`))
	if err == nil || !strings.Contains(err.Error(), "could not be asked (the chat is gone)") {
		t.Fatalf("a failing asker: %v", err)
	}
	slow := &tool.Env{Values: tool.NewSessionValues(), Asker: asker(func(ctx context.Context, _ tool.Question) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})}
	_, err = Tool{Timeout: 50 * time.Millisecond}.Run(tool.WithEnv(context.Background(), slow), json.RawMessage(`{"question":"?"}`))
	if err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("timeout: %v", err)
	}
}
