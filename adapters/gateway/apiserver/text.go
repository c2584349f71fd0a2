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
// text and image parts (image_url, input_image), whose URLs it returns.
// Other parts (audio, files) are refused.
func contentText(raw json.RawMessage) (string, []string, error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", nil, badInput("content: %v", err)
		}
		return s, nil, nil
	}
	var parts []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
		// ImageURL is {"url": …} in chat completions, a string in
		// Responses' input_image.
		ImageURL json.RawMessage `json:"image_url"`
		FileID   string          `json:"file_id"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, badInput("content must be a string or an array of text and image parts: %v", err)
	}
	var texts, images []string
	for _, p := range parts {
		switch p.Type {
		case "text", "input_text", "output_text":
			texts = append(texts, p.Text)
		case "refusal":
			texts = append(texts, p.Refusal)
		case "image_url", "input_image":
			u, err := imageURL(p.ImageURL)
			if err != nil {
				return "", nil, err
			}
			if u == "" && p.FileID != "" {
				return "", nil, badInput("%s with a file_id is not supported: send the image inline as a data: URL", p.Type)
			}
			if u == "" {
				return "", nil, badInput("%s part without an image_url", p.Type)
			}
			images = append(images, u)
		default:
			return "", nil, badInput("content part type %q is not supported: the agent reads text and images", p.Type)
		}
	}
	return strings.Join(texts, "\n"), images, nil
}

// imageURL reads an image_url: a string or an object with url.
func imageURL(raw json.RawMessage) (string, error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", badInput("image_url: %v", err)
		}
		return s, nil
	}
	var o struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return "", badInput("image_url must be a string or an object with url: %v", err)
	}
	return o.URL, nil
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
// agent and the URLs of the images in it (the user's, oldest first).
// continuing drops the earlier messages (the session has them).
func chatText(msgs []chatMessage, continuing bool) (string, []string, error) {
	if len(msgs) == 0 {
		return "", nil, badInput("messages is empty: send at least one user message")
	}
	last := msgs[len(msgs)-1]
	if last.Role != "user" {
		return "", nil, badInput("the last message is a %q message: it must be the user's (the agent runs its own tools; tool results are not taken from clients)", last.Role)
	}
	text, lastImages, err := contentText(last.Content)
	if err != nil {
		return "", nil, badInput("messages[%d].%s", len(msgs)-1, err)
	}
	if continuing {
		return text, lastImages, nil
	}
	var system []string
	var earlier []prior
	var images []string
	for i, m := range msgs[:len(msgs)-1] {
		t, imgs, err := contentText(m.Content)
		if err != nil {
			return "", nil, badInput("messages[%d].%s", i, err)
		}
		if len(imgs) > 0 && m.Role != "user" {
			return "", nil, badInput("messages[%d]: only user messages may carry images", i)
		}
		images = append(images, imgs...)
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
			return "", nil, badInput("messages[%d].role %q: use system, developer, user, assistant or tool", i, m.Role)
		}
	}
	return compose(strings.Join(system, "\n\n"), earlier, text), append(images, lastImages...), nil
}

// inputItem is an item of a Responses request's input array.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// responsesText turns a Responses request's input (a string or an array
// of message items) and instructions into the text for the agent.
func responsesText(input json.RawMessage, instructions string, continuing bool) (string, []string, error) {
	input = json.RawMessage(strings.TrimSpace(string(input)))
	if len(input) == 0 || string(input) == "null" {
		return "", nil, badInput("input is required")
	}
	if input[0] == '"' {
		var s string
		if err := json.Unmarshal(input, &s); err != nil {
			return "", nil, badInput("input: %v", err)
		}
		return compose(instructions, nil, s), nil, nil
	}
	var items []inputItem
	if err := json.Unmarshal(input, &items); err != nil {
		return "", nil, badInput("input must be a string or an array of message items: %v", err)
	}
	if len(items) == 0 {
		return "", nil, badInput("input is empty")
	}
	msgs := make([]prior, 0, len(items))
	var images, lastImages []string
	for i, it := range items {
		if it.Type != "" && it.Type != "message" {
			return "", nil, badInput("input[%d].type %q is not supported: the agent runs its own tools, send message items", i, it.Type)
		}
		t, imgs, err := contentText(it.Content)
		if err != nil {
			return "", nil, badInput("input[%d].%s", i, err)
		}
		switch it.Role {
		case "user", "assistant", "system", "developer":
		default:
			return "", nil, badInput("input[%d].role %q: use user, assistant, system or developer", i, it.Role)
		}
		if len(imgs) > 0 && it.Role != "user" {
			return "", nil, badInput("input[%d]: only user messages may carry images", i)
		}
		if i == len(items)-1 {
			lastImages = imgs
		} else {
			images = append(images, imgs...)
		}
		msgs = append(msgs, prior{role: it.Role, text: t})
	}
	last := msgs[len(msgs)-1]
	if last.role != "user" {
		return "", nil, badInput("the last input item is a %q message: it must be the user's", last.role)
	}
	if continuing {
		return compose(instructions, nil, last.text), lastImages, nil
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
	return compose(instructions, earlier, last.text), append(images, lastImages...), nil
}

// asBadInput tells a client error from others.
func asBadInput(err error) (string, bool) {
	var b *errBadInput
	if errors.As(err, &b) {
		return b.msg, true
	}
	return "", false
}
