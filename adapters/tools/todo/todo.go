// Package todo is the session's task list. Its state is the last
// TodoUpdated event of the session's stream; the tool keeps a copy for the
// session and writes every change as an event.
package todo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Tool is the todo tool.
type Tool struct{ Store events.Store }

func (Tool) Spec() model.ToolSpec {
	item := map[string]any{"type": "object", "required": []string{"id", "content", "status"}, "properties": map[string]any{
		"id": map[string]any{"type": "string"}, "content": map[string]any{"type": "string"},
		"status": map[string]any{"type": "string", "enum": []string{"pending", "in_progress", "completed", "cancelled"}}}}
	return model.ToolSpec{Name: "todo", Description: "Keep a task list for multi-step work. Call with no arguments to read it; pass todos to replace it, or todos with merge=true to update items by id.",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{
			"todos": map[string]any{"type": "array", "items": item},
			"merge": map[string]any{"type": "boolean"},
		}}}
}
func (Tool) Flags() tool.Flags { return tool.Flags{} }

type state struct {
	mu     sync.Mutex
	loaded bool
	todos  []schema.Todo
}

var statuses = map[string]bool{"pending": true, "in_progress": true, "completed": true, "cancelled": true}

// load reads the last TodoUpdated of the session's stream.
func (t Tool) load(ctx context.Context, sid string) ([]schema.Todo, error) {
	if t.Store == nil || sid == "" {
		return nil, nil
	}
	stream := events.SessionStream(sid)
	from := events.End
	for {
		rs, err := t.Store.ReadStream(ctx, stream, events.Backward, from, 256)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if r.Type == schema.TypeTodoUpdated {
				p, err := schema.Decode(r.Envelope)
				if err != nil {
					return nil, err
				}
				return p.(schema.TodoUpdated).Todos, nil
			}
		}
		if len(rs) < 256 || rs[len(rs)-1].Revision == 0 {
			return nil, nil
		}
		from = rs[len(rs)-1].Revision - 1
	}
}

func (t Tool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Todos *[]schema.Todo `json:"todos"`
		Merge bool           `json:"merge"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("invalid arguments: %v", err)
	}
	env := tool.EnvFrom(ctx)
	st := env.Values.Get("todo", func() any { return &state{} }).(*state)
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.loaded {
		todos, err := t.load(ctx, env.SessionID)
		if err != nil {
			return "", fmt.Errorf("load the task list: %w", err)
		}
		st.todos, st.loaded = todos, true
	}
	if a.Todos == nil {
		return render(st.todos), nil
	}
	for _, it := range *a.Todos {
		if it.ID == "" || (!a.Merge && it.Content == "") {
			return "", fmt.Errorf("every item needs an id and content")
		}
		if it.Status != "" && !statuses[it.Status] {
			return "", fmt.Errorf("item %s: status must be pending, in_progress, completed or cancelled, not %q", it.ID, it.Status)
		}
	}
	next := *a.Todos
	if a.Merge {
		next = append([]schema.Todo(nil), st.todos...)
		for _, it := range *a.Todos {
			found := false
			for i := range next {
				if next[i].ID == it.ID {
					if it.Content != "" {
						next[i].Content = it.Content
					}
					if it.Status != "" {
						next[i].Status = it.Status
					}
					found = true
				}
			}
			if !found {
				if it.Content == "" {
					return "", fmt.Errorf("item %s is new and needs content", it.ID)
				}
				next = append(next, it)
			}
		}
	}
	for i := range next {
		if next[i].Status == "" {
			next[i].Status = "pending"
		}
	}
	if env.Record != nil {
		if err := env.Record(ctx, schema.TodoUpdated{Todos: next}); err != nil {
			return "", err
		}
	}
	st.todos = next
	return render(next), nil
}

func render(todos []schema.Todo) string {
	if len(todos) == 0 {
		return "the task list is empty"
	}
	marks := map[string]string{"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}
	var b strings.Builder
	done := 0
	for _, t := range todos {
		fmt.Fprintf(&b, "%s %s. %s\n", marks[t.Status], t.ID, t.Content)
		if t.Status == "completed" {
			done++
		}
	}
	fmt.Fprintf(&b, "(%d of %d done)", done, len(todos))
	return b.String()
}
