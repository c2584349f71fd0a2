package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/adapters/llm/openai"
)

// ProviderPrefix starts the provider name of a plugin's model provider in
// config.yaml: provider: plugin:NAME.
const ProviderPrefix = "plugin:"

// maxCompletion bounds the body a plugin's provider answers.
const maxCompletion = 16 << 20

// Provider is the model provider name (a plugin's ProviderDecl) serves,
// speaking chat.completions: each call is one call of the declared MCP
// tool, in the plugin's sandbox, within the plugin's timeout. It fails
// with a clear error when no enabled plugin declares name.
func (h *Host) Provider(name string) (model.Provider, error) {
	for _, r := range h.Plugins() {
		for _, d := range r.Manifest.Providers {
			if d.Name != name {
				continue
			}
			if r.Server == nil {
				return nil, fmt.Errorf("provider plugin:%s: plugin %s is not running: %s", name, r.Name, r.Problem)
			}
			rt := &toolTransport{r: r, tool: d.Tool}
			return openai.NewChat(openai.Options{Provider: ProviderPrefix + name, BaseURL: "http://plugin.invalid/v1", APIKey: "plugin",
				HTTPClient: &http.Client{Transport: rt}, FirstByteTimeout: -1, StallTimeout: -1}), nil
		}
	}
	var have []string
	for _, r := range h.Plugins() {
		for _, d := range r.Manifest.Providers {
			have = append(have, ProviderPrefix+d.Name)
		}
	}
	return nil, fmt.Errorf("provider plugin:%s: no enabled plugin declares it (declared: %s); hermes plugins list shows them", name, first(strings.Join(have, ", "), "none"))
}

// toolTransport answers the OpenAI client's HTTP requests with a plugin's
// MCP tool: the request body goes in as {"request": ...}, the tool's text
// comes back as the response body.
type toolTransport struct {
	r    *Running
	tool string
}

func (t *toolTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxCompletion))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	if !json.Valid(body) {
		return reply(req, http.StatusBadRequest, "application/json", errorBody("the request to the plugin is not JSON")), nil
	}
	tl, err := t.r.tool(t.tool)
	if err != nil {
		return reply(req, http.StatusBadGateway, "application/json", errorBody(err.Error())), nil
	}
	args, _ := json.Marshal(map[string]json.RawMessage{"request": body})
	out, err := tl.Run(req.Context(), args)
	if err != nil {
		if ctxErr := req.Context().Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return reply(req, http.StatusBadGateway, "application/json", errorBody(fmt.Sprintf("plugin %s: %v", t.r.Name, err))), nil
	}
	text := strings.TrimSpace(out)
	if strings.HasPrefix(text, "data:") {
		return reply(req, http.StatusOK, "text/event-stream", []byte(text+"\n\n")), nil
	}
	sse, err := chunkOf([]byte(text))
	if err != nil {
		return reply(req, http.StatusBadGateway, "application/json", errorBody(fmt.Sprintf("plugin %s answered what is not a chat completion: %v", t.r.Name, err))), nil
	}
	return reply(req, http.StatusOK, "text/event-stream", sse), nil
}

// chunkOf turns a chat.completion object into the one-chunk stream the
// client reads: each choice's message becomes its delta.
func chunkOf(completion []byte) ([]byte, error) {
	var c map[string]any
	if err := json.Unmarshal(completion, &c); err != nil {
		return nil, err
	}
	if e, ok := c["error"]; ok {
		return nil, fmt.Errorf("it answered an error: %v", e)
	}
	choices, ok := c["choices"].([]any)
	if !ok || len(choices) == 0 {
		return nil, errors.New("no choices")
	}
	for i, ch := range choices {
		m, ok := ch.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("choices[%d] is not an object", i)
		}
		msg, ok := m["message"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("choices[%d] has no message", i)
		}
		if calls, ok := msg["tool_calls"].([]any); ok {
			for j, tc := range calls {
				if tm, ok := tc.(map[string]any); ok {
					tm["index"] = j
				}
			}
		}
		delete(m, "message")
		m["delta"] = msg
		if _, ok := m["index"]; !ok {
			m["index"] = i
		}
	}
	c["object"] = "chat.completion.chunk"
	for _, k := range []string{"id", "model"} {
		if _, ok := c[k]; !ok {
			c[k] = "plugin"
		}
	}
	if _, ok := c["created"]; !ok {
		c["created"] = 0
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteString("data: ")
	out.Write(b)
	out.WriteString("\n\ndata: [DONE]\n\n")
	return out.Bytes(), nil
}

func errorBody(msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "plugin_error"}})
	return b
}

func reply(req *http.Request, code int, ctype string, body []byte) *http.Response {
	return &http.Response{StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {ctype}}, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req}
}

// LateProvider is a plugin's model provider named before the plugins
// start (the provider ladder is built first): it finds the provider in the
// host host returns at its first call.
type LateProvider struct {
	name string
	host func() *Host

	mu sync.Mutex
	p  model.Provider
}

// Late returns the provider plugin:name of the host that host returns
// when the first call is made.
func Late(name string, host func() *Host) *LateProvider {
	return &LateProvider{name: name, host: host}
}

// Name implements model.Provider.
func (l *LateProvider) Name() string { return ProviderPrefix + l.name }

// APIMode implements model.Provider: chat.completions.
func (l *LateProvider) APIMode() string { return model.ModeChatCompletions }

// Complete implements model.Provider.
func (l *LateProvider) Complete(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Response, error) {
	l.mu.Lock()
	p := l.p
	if p == nil {
		h := l.host()
		if h == nil {
			l.mu.Unlock()
			return model.Response{}, fmt.Errorf("provider plugin:%s: the plugins are not started in this process", l.name)
		}
		var err error
		if p, err = h.Provider(l.name); err != nil {
			l.mu.Unlock()
			return model.Response{}, err
		}
		l.p = p
	}
	l.mu.Unlock()
	return p.Complete(ctx, req, onDelta)
}
