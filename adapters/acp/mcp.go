package acp

import (
	"context"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"
)

// MCPServer is an MCP server the editor passes with a session (ACP's
// mcpServers): a command on stdio, or a URL over streamable HTTP or SSE.
type MCPServer struct {
	Name string
	// Command, Args and Env start a stdio server.
	Command string
	Args    []string
	Env     map[string]string
	// URL and Headers reach an HTTP one; Transport is "http" or "sse".
	URL       string
	Headers   map[string]string
	Transport string
}

// mcpServers maps the servers of a session request; a server without a
// name or a way to reach it is invalid params.
func mcpServers(in []sdk.McpServer) ([]MCPServer, error) {
	var out []MCPServer
	for i, s := range in {
		var m MCPServer
		switch {
		case s.Stdio != nil:
			m = MCPServer{Name: s.Stdio.Name, Command: s.Stdio.Command, Args: s.Stdio.Args}
			if len(s.Stdio.Env) > 0 {
				m.Env = map[string]string{}
				for _, e := range s.Stdio.Env {
					m.Env[e.Name] = e.Value
				}
			}
			if m.Command == "" {
				return nil, fmt.Errorf("mcpServers[%d] (%s): no command", i, m.Name)
			}
		case s.Http != nil:
			m = MCPServer{Name: s.Http.Name, URL: s.Http.Url, Transport: "http", Headers: headers(s.Http.Headers)}
		case s.Sse != nil:
			m = MCPServer{Name: s.Sse.Name, URL: s.Sse.Url, Transport: "sse", Headers: headers(s.Sse.Headers)}
		default:
			return nil, fmt.Errorf("mcpServers[%d]: a transport Hermes does not offer (stdio, http and sse are)", i)
		}
		if m.Name == "" {
			return nil, fmt.Errorf("mcpServers[%d]: no name", i)
		}
		if m.Command == "" && m.URL == "" {
			return nil, fmt.Errorf("mcpServers[%d] (%s): no url", i, m.Name)
		}
		out = append(out, m)
	}
	return out, nil
}

func headers(hs []sdk.HttpHeader) map[string]string {
	if len(hs) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, h := range hs {
		m[h.Name] = h.Value
	}
	return m
}

// addMCP hands the servers of a session request to a.MCP (when set): a
// malformed entry is invalid params, and nothing of the request is
// started then.
func (a *Agent) addMCP(ctx context.Context, in []sdk.McpServer) error {
	if a.MCP == nil || len(in) == 0 {
		if len(in) > 0 {
			a.Log.Warn().Int("servers", len(in)).Msg("acp: the editor's MCP servers are not offered here")
		}
		return nil
	}
	servers, err := mcpServers(in)
	if err != nil {
		return sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	if err := a.MCP(ctx, servers); err != nil {
		return sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	return nil
}
