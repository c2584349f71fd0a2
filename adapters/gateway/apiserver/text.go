package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// prior is one message a client sent before its last one.
type prior struct {
	role string
	text string
}

// errBadInput is a request the client must change; its text says how.
type errBadInput struct{ msg string }

func (e *errBadInput) Error() string { return e.msg }

func badInput(format string, args ...any) error { return &errBadInput{fmt.Sprintf(format, args...)} }

// contentText reads a message's content: a string, null, or an array of
// text parts. Other parts (images, audio, files) are refused: the agent
// reads text.
func contentText(raw json.RawMessage) (string, error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", badInput("content: %v", err)
		}
		return s, nil
	}
	var parts []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badInput("content must be a string or an array of text parts: %v", err)
	}
	var texts []string
	for _, p := range parts {
		switch p.Type {
		case "text", "input_text", "output_text":
			texts = append(texts, p.Text)
		case "refusal":
			texts = append(texts, p.Refusal)
		default:
			return "", badInput("content part type %q is not supported: the agent reads text only", p.Type)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// compose is the text the agent receives: the client's instructions and
// earlier messages (for a new session), clearly set apart, then the last
// user message. A continued session has its own history: earlier
// messages are not sent again.
func compose(instructions string, earlier []prior, last string) string {
	if strings.TrimSpace(instructions) == "" && len(earlier) == 0 {
		return last
	}
	var b strings.Builder
	if strings.TrimSpace(instructions) != "" {
		b.WriteString("<client_instructions>\n")
		b.WriteString(strings.TrimSpace(instructions))
		b.WriteString("\n</client_instructions>\n\n")
	}
	if len(earlier) > 0 {
		b.WriteString("<conversation_so_far note=\"earlier messages the API client sent with this request, oldest first\">\n")
		for _, p := range earlier {
			fmt.Fprintf(&b, "<%s>\n%s\n</%s>\n", p.role, strings.TrimSpace(p.text), p.role)
		}
		b.WriteString("</conversation_so_far>\n\n")
	}
	b.WriteString(last)
	return b.String()
}

// chatMessage is a message of a chat.completions request.
type chatMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
}

// chatText turns a chat.completions message list into the text for the
// agent. continuing drops the earlier messages (the session has them).
func chatText(msgs []chatMessage, continuing bool) (string, error) {
	if len(msgs) == 0 {
		return "", badInput("messages is empty: send at least one user message")
	}
	last := msgs[len(msgs)-1]
	if last.Role != "user" {
		return "", badInput("the last message is a %q message: it must be the user's (the agent runs its own tools; tool results are not taken from clients)", last.Role)
	}
	text, err := contentText(last.Content)
	if err != nil {
		return "", badInput("messages[%d].%s", len(msgs)-1, err)
	}
	if continuing {
		return text, nil
	}
	var system []string
	var earlier []prior
	for i, m := range msgs[:len(msgs)-1] {
		t, err := contentText(m.Content)
		if err != nil {
			return "", badInput("messages[%d].%s", i, err)
		}
		switch m.Role {
		case "system", "developer":
			system = append(system, t)
		case "user", "assistant":
			for _, tc := range m.ToolCalls {
				t += fmt.Sprintf("\n(called tool %s with %s)", tc.Function.Name, tc.Function.Arguments)
			}
			earlier = append(earlier, prior{role: m.Role, text: t})
		case "tool", "function":
			earlier = append(earlier, prior{role: "tool_result", text: t})
		default:
			return "", badInput("messages[%d].role %q: use system, developer, user, assistant or tool", i, m.Role)
		}
	}
	return compose(strings.Join(system, "\n\n"), earlier, text), nil
}

// inputItem is an item of a Responses request's input array.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// responsesText turns a Responses request's input (a string or an array
// of message items) and instructions into the text for the agent.
func responsesText(input json.RawMessage, instructions string, continuing bool) (string, error) {
	input = json.RawMessage(strings.TrimSpace(string(input)))
	if len(input) == 0 || string(input) == "null" {
		return "", badInput("input is required")
	}
	if input[0] == '"' {
		var s string
		if err := json.Unmarshal(input, &s); err != nil {
			return "", badInput("input: %v", err)
		}
		return compose(instructions, nil, s), nil
	}
	var items []inputItem
	if err := json.Unmarshal(input, &items); err != nil {
		return "", badInput("input must be a string or an array of message items: %v", err)
	}
	if len(items) == 0 {
		return "", badInput("input is empty")
	}
	msgs := make([]prior, 0, len(items))
	for i, it := range items {
		if it.Type != "" && it.Type != "message" {
			return "", badInput("input[%d].type %q is not supported: the agent runs its own tools, send message items", i, it.Type)
		}
		t, err := contentText(it.Content)
		if err != nil {
			return "", badInput("input[%d].%s", i, err)
		}
		switch it.Role {
		case "user", "assistant", "system", "developer":
		default:
			return "", badInput("input[%d].role %q: use user, assistant, system or developer", i, it.Role)
		}
		msgs = append(msgs, prior{role: it.Role, text: t})
	}
	last := msgs[len(msgs)-1]
	if last.role != "user" {
		return "", badInput("the last input item is a %q message: it must be the user's", last.role)
	}
	if continuing {
		return compose(instructions, nil, last.text), nil
	}
	var earlier []prior
	for _, m := range msgs[:len(msgs)-1] {
		if m.role == "system" || m.role == "developer" {
			if instructions != "" {
				instructions += "\n\n"
			}
			instructions += m.text
			continue
		}
		earlier = append(earlier, m)
	}
	return compose(instructions, earlier, last.text), nil
}

// asBadInput tells a client error from others.
func asBadInput(err error) (string, bool) {
	var b *errBadInput
	if errors.As(err, &b) {
		return b.msg, true
	}
	return "", false
}
