// Package adapters groups everything that touches the outside world: LLM
// providers (llm/), tools (tools/, mcp/ for MCP servers' tools, hooks/ for
// shell hooks), speech to text and text to speech (voice/), secret
// handling for child processes and tool output (secrets/), the gateway's
// platforms (gateway/: the API server, webhooks, Telegram), the watermill
// bus between them and the router (bus/), Hermes as an MCP server
// (mcpserver/), the terminal chat screen (tui/) and the importer of the
// Python Hermes Agent's state.db (importer/).
package adapters
