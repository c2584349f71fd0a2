package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxToolName is the longest tool name OpenAI and Anthropic both accept.
const maxToolName = 64

// safeName replaces every character outside [A-Za-z0-9_] with _ (as
// Hermes does: "my-server" becomes "my_server") and cuts it to max bytes.
func safeName(s string, max int) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return trim(b.String(), max)
}

// ToolName is the name a server's tool is registered under:
// mcp_<server>_<tool>, each part made safe. A name longer than providers
// accept keeps its start and ends with a hash of the whole, so that two
// long names stay apart.
func ToolName(server, tool string) string {
	name := "mcp_" + safeName(server, 1<<10) + "_" + safeName(tool, 1<<10)
	if len(name) <= maxToolName {
		return name
	}
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	return name[:maxToolName-9] + "_" + hex.EncodeToString(sum[:4])
}

// Toolset is the toolset of a server's tools: mcp-<server>, so that
// tools.toolsets: ["mcp-*"] selects every MCP server and
// disabled_toolsets: ["mcp-github"] one of them.
func Toolset(server string) string { return "mcp-" + server }
