"""shout: a Hermes plugin written in Python, the one the end-to-end tests
install from a git repository. An MCP server on stdio (the official MCP
Python SDK): a tool for the model (shout), a transform_tool_result hook
that tags every tool result it sees (tag), and a CLI command (echo)."""

import json

from mcp.server.mcpserver import MCPServer

app = MCPServer("shout")


@app.tool()
def shout(text: str) -> str:
    """Say the text loudly."""
    return text.upper() + "!"


@app.tool()
def tag(payload: dict) -> str:
    """transform_tool_result hook: the result the model reads, tagged."""
    extra = payload.get("extra") or {}
    if payload.get("tool_name") != "word_count":
        return ""
    return json.dumps({"result": "[checked by shout] " + str(extra.get("result", ""))})


@app.tool()
def echo(args: list[str]) -> str:
    """CLI command: the arguments back, loudly."""
    return " ".join(args).upper()


if __name__ == "__main__":
    app.run()
