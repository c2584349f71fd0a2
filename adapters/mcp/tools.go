package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
)

// refresh lists the peer's tools and rebuilds the server's toolset.
func (s *Server) refresh(ctx context.Context, cs *sdk.ClientSession) error {
	var caps *sdk.ServerCapabilities
	if ir := cs.InitializeResult(); ir != nil {
		caps = ir.Capabilities
	}
	var list []*sdk.Tool
	if caps == nil || caps.Tools != nil {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			list = append(list, t)
		}
	}
	built := s.build(list, caps)
	s.mu.Lock()
	s.tools = built
	s.mu.Unlock()
	s.gen.Add(1)
	s.log.Debug().Int("tools", len(built)).Msg("MCP server tools listed")
	return nil
}

// build turns the peer's tools into Hermes tools: named
// mcp_<server>_<tool>, filtered by tools.include/exclude, with schemas
// sanitised for the dialects, and the resource and prompt tools of a
// server that has resources or prompts.
func (s *Server) build(list []*sdk.Tool, caps *sdk.ServerCapabilities) []tool.Tool {
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	dialects := s.opts.Dialects
	if len(dialects) == 0 {
		dialects = []Dialect{OpenAI, Anthropic}
	}
	taken := map[string]bool{}
	var out []tool.Tool
	add := func(t tool.Tool) {
		if s.opts.Wrap != nil {
			t = s.opts.Wrap(t)
		}
		out = append(out, t)
	}
	for _, mt := range list {
		if mt == nil || !s.cfg.Tools.wanted(mt.Name) {
			continue
		}
		name := ToolName(s.name, mt.Name)
		for i := 2; taken[name]; i++ { // two names that read the same once made safe
			name = ToolName(s.name, fmt.Sprintf("%s_%d", mt.Name, i))
		}
		taken[name] = true
		desc := strings.TrimSpace(mt.Description)
		if desc == "" {
			desc = first(mt.Title, mt.Name)
			if mt.Annotations != nil {
				desc = first(mt.Title, mt.Annotations.Title, mt.Name)
			}
			desc = fmt.Sprintf("%s (a tool of MCP server %s)", desc, s.name)
		}
		san := Sanitize(mt.InputSchema, dialects...)
		add(&serverTool{s: s, raw: mt.Name, renames: san.Renames,
			readOnly: mt.Annotations != nil && mt.Annotations.ReadOnlyHint,
			spec:     model.ToolSpec{Name: name, Description: desc, Parameters: san.Params}})
	}
	if caps == nil {
		return out
	}
	on := func(b *bool) bool { return b == nil || *b }
	var kinds []string
	if caps.Resources != nil && on(s.cfg.Tools.Resources) {
		kinds = append(kinds, "list_resources", "read_resource")
	}
	if caps.Prompts != nil && on(s.cfg.Tools.Prompts) {
		kinds = append(kinds, "list_prompts", "get_prompt")
	}
	for _, k := range kinds {
		u := utilityTool(s, k)
		if taken[u.spec.Name] { // the server has a tool of that name
			continue
		}
		taken[u.spec.Name] = true
		add(u)
	}
	return out
}

// serverTool is one tool of an MCP server.
type serverTool struct {
	s        *Server
	raw      string // the server's name for it
	spec     model.ToolSpec
	renames  map[string]string
	readOnly bool
}

func (t *serverTool) Spec() model.ToolSpec { return t.spec }

// Flags: a tool the server marks read-only is one; every call names the
// server it went to.
func (t *serverTool) Flags() tool.Flags {
	return tool.Flags{ReadOnly: t.readOnly, Server: t.s.name}
}

// Run calls the tool on the server. A result the server marks isError
// is returned as an error, so the loop records it as one.
func (t *serverTool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	in, err := object(args)
	if err != nil {
		return "", err
	}
	for now, orig := range t.renames {
		if v, ok := in[now]; ok {
			delete(in, now)
			in[orig] = v
		}
	}
	if t.s.cfg.Approval {
		if err := t.s.approve(ctx, t.spec.Name, args); err != nil {
			return "", err
		}
	}
	var res *sdk.CallToolResult
	err = t.s.call(ctx, "tool "+t.raw, func(ctx context.Context, cs *sdk.ClientSession) error {
		var err error
		res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: t.raw, Arguments: in})
		return err
	})
	if err != nil {
		return "", err
	}
	text := t.s.render(res.Content, res.StructuredContent)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error without saying what"
		}
		return "", errors.New(text)
	}
	return text, nil
}

// object decodes a call's arguments (nothing is {}).
func object(args json.RawMessage) (map[string]any, error) {
	in := map[string]any{}
	if b := bytes.TrimSpace(args); len(b) > 0 && !bytes.Equal(b, []byte("null")) {
		if err := json.Unmarshal(b, &in); err != nil {
			return nil, fmt.Errorf("the arguments must be a JSON object: %v", err)
		}
	}
	return in, nil
}

// utility is a resource or prompt tool of a server.
type utility struct {
	s    *Server
	kind string
	spec model.ToolSpec
}

func utilityTool(s *Server, kind string) *utility {
	obj := func(props map[string]any, required ...string) map[string]any {
		p := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			var r []any
			for _, x := range required {
				r = append(r, x)
			}
			p["required"] = r
		}
		return p
	}
	u := &utility{s: s, kind: kind}
	name := ToolName(s.name, kind)
	switch kind {
	case "list_resources":
		u.spec = model.ToolSpec{Name: name, Parameters: obj(map[string]any{}),
			Description: fmt.Sprintf("List the resources (and resource templates) that MCP server %s offers.", s.name)}
	case "read_resource":
		u.spec = model.ToolSpec{Name: name, Description: fmt.Sprintf("Read a resource of MCP server %s by its URI.", s.name),
			Parameters: obj(map[string]any{"uri": map[string]any{"type": "string", "description": "URI of the resource to read"}}, "uri")}
	case "list_prompts":
		u.spec = model.ToolSpec{Name: name, Parameters: obj(map[string]any{}),
			Description: fmt.Sprintf("List the prompts that MCP server %s offers, with their arguments.", s.name)}
	case "get_prompt":
		u.spec = model.ToolSpec{Name: name, Description: fmt.Sprintf("Get a prompt of MCP server %s by name, filled in with arguments.", s.name),
			Parameters: obj(map[string]any{
				"name":      map[string]any{"type": "string", "description": "Name of the prompt"},
				"arguments": map[string]any{"type": "object", "description": "The prompt's arguments, as strings", "properties": map[string]any{}, "additionalProperties": map[string]any{"type": "string"}},
			}, "name")}
	}
	return u
}

func (u *utility) Spec() model.ToolSpec { return u.spec }

func (u *utility) Flags() tool.Flags { return tool.Flags{ReadOnly: true, Server: u.s.name} }

func (u *utility) Run(ctx context.Context, args json.RawMessage) (string, error) {
	in, err := object(args)
	if err != nil {
		return "", err
	}
	str := func(k string) string { v, _ := in[k].(string); return v }
	switch {
	case u.kind == "read_resource" && str("uri") == "":
		return "", errors.New("give the uri of the resource to read (list them with " + ToolName(u.s.name, "list_resources") + ")")
	case u.kind == "get_prompt" && str("name") == "":
		return "", errors.New("give the name of the prompt (list them with " + ToolName(u.s.name, "list_prompts") + ")")
	}
	var out string
	err = u.s.call(ctx, u.kind, func(ctx context.Context, cs *sdk.ClientSession) error {
		switch u.kind {
		case "list_resources":
			out, err = u.listResources(ctx, cs)
		case "read_resource":
			var res *sdk.ReadResourceResult
			if res, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: str("uri")}); err == nil {
				var parts []string
				for _, c := range res.Contents {
					parts = append(parts, u.s.renderResource(c))
				}
				out = strings.Join(parts, "\n")
			}
		case "list_prompts":
			out, err = u.listPrompts(ctx, cs)
		case "get_prompt":
			pargs := map[string]string{}
			if m, ok := in["arguments"].(map[string]any); ok {
				for k, v := range m {
					if s, ok := v.(string); ok {
						pargs[k] = s
					} else {
						b, _ := json.Marshal(v)
						pargs[k] = string(b)
					}
				}
			}
			var res *sdk.GetPromptResult
			if res, err = cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: str("name"), Arguments: pargs}); err == nil {
				var b strings.Builder
				if res.Description != "" {
					fmt.Fprintf(&b, "%s\n\n", res.Description)
				}
				for _, m := range res.Messages {
					fmt.Fprintf(&b, "[%s]\n%s\n\n", m.Role, u.s.render([]sdk.Content{m.Content}, nil))
				}
				out = strings.TrimSpace(b.String())
			}
		}
		return err
	})
	return out, err
}

func (u *utility) listResources(ctx context.Context, cs *sdk.ClientSession) (string, error) {
	var b strings.Builder
	n := 0
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			return "", err
		}
		n++
		fmt.Fprintf(&b, "- %s", r.URI)
		if r.Name != "" {
			fmt.Fprintf(&b, " — %s", first(r.Title, r.Name))
		}
		if r.MIMEType != "" {
			fmt.Fprintf(&b, " (%s)", r.MIMEType)
		}
		if r.Description != "" {
			fmt.Fprintf(&b, ": %s", oneLine(r.Description))
		}
		b.WriteByte('\n')
	}
	tpl := 0
	for r, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			break // templates are optional: a server without them may refuse the method
		}
		if tpl == 0 {
			b.WriteString("\nResource templates (fill in the {placeholders} and read the URI):\n")
		}
		tpl++
		fmt.Fprintf(&b, "- %s — %s", r.URITemplate, first(r.Title, r.Name))
		if r.Description != "" {
			fmt.Fprintf(&b, ": %s", oneLine(r.Description))
		}
		b.WriteByte('\n')
	}
	if n == 0 && tpl == 0 {
		return fmt.Sprintf("MCP server %s lists no resources.", u.s.name), nil
	}
	return fmt.Sprintf("%d resources of MCP server %s (read one with %s):\n%s", n, u.s.name, ToolName(u.s.name, "read_resource"), strings.TrimRight(b.String(), "\n")), nil
}

func (u *utility) listPrompts(ctx context.Context, cs *sdk.ClientSession) (string, error) {
	var b strings.Builder
	n := 0
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			return "", err
		}
		n++
		fmt.Fprintf(&b, "- %s", p.Name)
		if p.Description != "" {
			fmt.Fprintf(&b, ": %s", oneLine(p.Description))
		}
		for _, a := range p.Arguments {
			req := ""
			if a.Required {
				req = ", required"
			}
			fmt.Fprintf(&b, "\n    %s (string%s)", a.Name, req)
			if a.Description != "" {
				fmt.Fprintf(&b, ": %s", oneLine(a.Description))
			}
		}
		b.WriteByte('\n')
	}
	if n == 0 {
		return fmt.Sprintf("MCP server %s lists no prompts.", u.s.name), nil
	}
	return fmt.Sprintf("%d prompts of MCP server %s (get one with %s):\n%s", n, u.s.name, ToolName(u.s.name, "get_prompt"), strings.TrimRight(b.String(), "\n")), nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
