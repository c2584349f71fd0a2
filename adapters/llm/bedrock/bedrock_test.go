package bedrock

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/schema"
)

func awsEnv(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
}

func TestRegionOf(t *testing.T) {
	for in, want := range map[string]string{
		"https://bedrock-runtime.eu-west-1.amazonaws.com":           "eu-west-1",
		"https://bedrock-runtime.us-east-1.amazonaws.com/":          "us-east-1",
		"http://127.0.0.1:9":                                        "",
		"https://bedrock-runtime.eu-west-1.amazonaws.com.evil.test": "",
	} {
		if got := regionOf(in); got != want {
			t.Errorf("regionOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// History becomes alternating Converse messages: parallel tool results
// are one user message of toolResult blocks.
func TestInput(t *testing.T) {
	in := Input(model.Request{Model: "m", System: "sys", MaxTokens: 50, Tools: []model.ToolSpec{{Name: "ls"}}, Messages: []schema.Message{
		{Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []schema.ToolCall{{ID: "a", Function: schema.FunctionCall{Name: "ls", Arguments: "{}"}}, {ID: "b", Function: schema.FunctionCall{Name: "ls"}}}},
		{Role: "tool", ToolCallID: "a", Content: "X"},
		{Role: "tool", ToolCallID: "b", Content: "Y"},
	}})
	if len(in.Messages) != 3 || in.Messages[2].Role != types.ConversationRoleUser || len(in.Messages[2].Content) != 2 ||
		aws.ToInt32(in.InferenceConfig.MaxTokens) != 50 || len(in.System) != 1 || len(in.ToolConfig.Tools) != 1 {
		t.Fatalf("input %+v", in)
	}
	r, ok := in.Messages[2].Content[1].(*types.ContentBlockMemberToolResult)
	if !ok || aws.ToString(r.Value.ToolUseId) != "b" {
		t.Fatalf("tool result %+v", in.Messages[2].Content[1])
	}
}

// A throttled call, in the error shape Bedrock sends, is a rate limit
// with the service's words.
func TestThrottled(t *testing.T) {
	awsEnv(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-Errortype", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"message":"Too many requests, please wait before trying again."}`))
	}))
	defer srv.Close()
	p, err := New(context.Background(), Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), model.Request{Model: "m", Messages: []schema.Message{{Role: "user", Content: "hi"}}}, func(model.Delta) {})
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.Status != 429 || !strings.Contains(pe.Message, "ThrottlingException: Too many requests") || model.Classify(err) != model.ClassRateLimit {
		t.Fatalf("error %#v", err)
	}
	// A refused connection is a transport failure.
	srv.Close()
	_, err = p.Complete(context.Background(), model.Request{Model: "m", Messages: []schema.Message{{Role: "user", Content: "hi"}}}, func(model.Delta) {})
	if !errors.As(err, &pe) || !pe.Transport {
		t.Fatalf("refused connection: %#v", err)
	}
}
