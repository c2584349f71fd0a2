// Package mcpserver exposes a Hermes to other agents and editors as an
// MCP server: its sessions (list, show, search, costs) as tools and
// resources, and send_message, which runs a turn in a session and answers
// with the agent's reply. What it serves comes from a Hermes (the port
// cmd/hermes implements over its store, projections and session actors);
// the transports are the official SDK's: stdio, and streamable HTTP
// behind a bearer key.
package mcpserver

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/search"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// Hermes is what the server serves.
type Hermes interface {
	// Sessions lists sessions, most recently active first.
	Sessions(ctx context.Context, limit int) ([]sessions.Summary, error)
	// Session resolves an id or unique prefix and returns the session's
	// history as the next model call starts from it.
	Session(ctx context.Context, id string) (sessions.Summary, []schema.Message, error)
	Search(ctx context.Context, q search.Query) (search.Results, error)
	// Send runs one turn with text in session id (a new session when id
	// is empty) and returns the answer.
	Send(ctx context.Context, id, text string) (Reply, error)
	Costs(ctx context.Context, by, since string) ([]costs.Row, error)
}

// Reply is the outcome of send_message.
type Reply struct {
	SessionID string `json:"session_id"`
	Answer    string `json:"answer"`
}

// Instructions tell a client's model what this server is for.
const Instructions = `This server is a Hermes agent: its sessions (conversations with tools, each a log of events) and the agent itself.
Use sessions_list, session_show and search to find what was said and done before; send_message to ask the agent to do something (it runs a full turn with its own tools and answers); costs for token and dollar totals.`

// New returns the MCP server of h.
func New(h Hermes, version string) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "hermes", Title: "Hermes agent", Version: version},
		&sdk.ServerOptions{Instructions: Instructions})

	type listIn struct {
		Limit int `json:"limit,omitempty" jsonschema:"how many sessions, most recently active first (default 20, at most 200)"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "sessions_list", Title: "List sessions",
		Description: "List Hermes sessions, most recently active first: id, title, source, model, status, messages, tokens and cost.",
		Annotations: readOnly()},
		func(ctx context.Context, _ *sdk.CallToolRequest, in listIn) (*sdk.CallToolResult, any, error) {
			list, err := h.Sessions(ctx, limit(in.Limit, 20, 200))
			if err != nil {
				return nil, nil, err
			}
			if list == nil {
				list = []sessions.Summary{}
			}
			return result(map[string]any{"sessions": list})
		})

	type showIn struct {
		ID string `json:"id" jsonschema:"the session's id, or a unique prefix of at least 4 characters"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "session_show", Title: "Show a session",
		Description: "Show a Hermes session: its summary and its messages (user, assistant with tool calls, tool results) as the next model call starts from them.",
		Annotations: readOnly()},
		func(ctx context.Context, _ *sdk.CallToolRequest, in showIn) (*sdk.CallToolResult, any, error) {
			sum, msgs, err := h.Session(ctx, in.ID)
			if err != nil {
				return nil, nil, err
			}
			if msgs == nil {
				msgs = []schema.Message{}
			}
			return result(map[string]any{"session": sum, "messages": msgs})
		})

	type searchIn struct {
		Query  string `json:"query" jsonschema:"words (all must match), OR, \"phrases\", prefix*, fuzzy~, -not, and filters source:telegram role:user model: tool: day: month:"`
		Limit  int    `json:"limit,omitempty" jsonschema:"sessions to return (default 10)"`
		Source string `json:"source,omitempty" jsonschema:"only this source (cli, telegram, ...)"`
		Role   string `json:"role,omitempty" jsonschema:"only user, assistant or tool messages"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "search", Title: "Search sessions",
		Description: "Full-text search of every message of every Hermes session, grouped by session, with highlighted snippets (<mark>).",
		Annotations: readOnly()},
		func(ctx context.Context, _ *sdk.CallToolRequest, in searchIn) (*sdk.CallToolResult, any, error) {
			if strings.TrimSpace(in.Query) == "" {
				return nil, nil, errors.New("give a query")
			}
			res, err := h.Search(ctx, search.Query{Text: in.Query, Limit: limit(in.Limit, 10, 100), Source: in.Source, Role: in.Role, CountSessions: true})
			if err != nil {
				return nil, nil, err
			}
			marks := strings.NewReplacer(search.HighlightOn, "<mark>", search.HighlightOff, "</mark>")
			for i := range res.Hits {
				res.Hits[i].Snippet = marks.Replace(res.Hits[i].Snippet)
			}
			if res.Hits == nil {
				res.Hits = []search.Hit{}
			}
			return result(res)
		})

	type sendIn struct {
		Text      string `json:"text" jsonschema:"what to ask or tell the agent"`
		SessionID string `json:"session_id,omitempty" jsonschema:"continue this session (id or unique prefix); empty starts a new one"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "send_message", Title: "Send a message to the agent",
		Description: "Run one turn of the Hermes agent: it reads the message, uses its tools as it sees fit, and answers. Give session_id to continue a conversation; the answer says which session it is in.",
		Annotations: &sdk.ToolAnnotations{OpenWorldHint: ptr(true)}},
		func(ctx context.Context, _ *sdk.CallToolRequest, in sendIn) (*sdk.CallToolResult, any, error) {
			if strings.TrimSpace(in.Text) == "" {
				return nil, nil, errors.New("give the text of the message")
			}
			r, err := h.Send(ctx, in.SessionID, in.Text)
			if err != nil {
				return nil, nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: r.Answer}, &sdk.TextContent{Text: "session: " + r.SessionID}}}, r, nil
		})

	type costsIn struct {
		By    string `json:"by,omitempty" jsonschema:"group by session (default), lineage, model, provider, source or day"`
		Since string `json:"since,omitempty" jsonschema:"only days on or after YYYY-MM-DD (UTC)"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "costs", Title: "Token and cost totals",
		Description: "Token and US-dollar totals of the Hermes sessions, grouped by session, lineage, model, provider, source or day.",
		Annotations: readOnly()},
		func(ctx context.Context, _ *sdk.CallToolRequest, in costsIn) (*sdk.CallToolResult, any, error) {
			by := in.By
			if by == "" {
				by = "session"
			}
			switch by {
			case "session", "lineage", "model", "provider", "source", "day":
			default:
				return nil, nil, fmt.Errorf("by %q: use session, lineage, model, provider, source or day", by)
			}
			if in.Since != "" {
				if _, err := time.Parse("2006-01-02", in.Since); err != nil {
					return nil, nil, fmt.Errorf("since %q: use YYYY-MM-DD", in.Since)
				}
			}
			rows, err := h.Costs(ctx, by, in.Since)
			if err != nil {
				return nil, nil, err
			}
			if rows == nil {
				rows = []costs.Row{}
			}
			return result(map[string]any{"by": by, "rows": rows})
		})

	s.AddResource(&sdk.Resource{URI: "hermes://sessions", Name: "sessions", Title: "Recent sessions", MIMEType: "application/json",
		Description: "The 50 most recently active sessions."},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			list, err := h.Sessions(ctx, 50)
			if err != nil {
				return nil, err
			}
			if list == nil {
				list = []sessions.Summary{}
			}
			b, _ := json.MarshalIndent(list, "", "  ")
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
		})
	s.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "hermes://sessions/{id}", Name: "session", Title: "A session's transcript",
		MIMEType: "text/markdown", Description: "A session's messages as a transcript."},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			id := strings.TrimPrefix(req.Params.URI, "hermes://sessions/")
			sum, msgs, err := h.Session(ctx, id)
			if err != nil {
				return nil, sdk.ResourceNotFoundError(req.Params.URI)
			}
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: Transcript(sum, msgs)}}}, nil
		})
	return s
}

// Transcript renders a session for reading.
func Transcript(s sessions.Summary, msgs []schema.Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\nsession %s · %s · %s · %d messages · $%.4f\n", firstOf(s.Title, "(untitled)"), s.ID, s.Source, s.Model, s.Messages, s.CostUSD)
	for _, m := range msgs {
		fmt.Fprintf(&b, "\n## %s", m.Role)
		if m.Name != "" {
			fmt.Fprintf(&b, " (%s)", m.Name)
		}
		b.WriteString("\n\n")
		if m.Content != "" {
			b.WriteString(m.Content)
			b.WriteByte('\n')
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "→ %s(%s)\n", c.Function.Name, c.Function.Arguments)
		}
	}
	return b.String()
}

// Handler serves s over streamable HTTP to holders of key (sent as
// Authorization: Bearer KEY).
func Handler(s *sdk.Server, key string) http.Handler {
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if key == "" || subtle.ConstantTimeCompare([]byte(token), []byte(key)) != 1 {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "hermes-key"}, nil
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}

// result is v as structured content and as JSON text, left readable
// (<mark> stays <mark>, not \u003cmark\u003e).
func result(v any) (*sdk.CallToolResult, any, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, nil, err
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.TrimSpace(b.String())}}}, v, nil
}

func readOnly() *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
}

func ptr[T any](v T) *T { return &v }

func limit(n, def, max int) int {
	if n <= 0 {
		return def
	}
	return min(n, max)
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
