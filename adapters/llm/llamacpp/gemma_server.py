"""Serve a Gemma GGUF through llama-cpp-python's OpenAI-compatible server
with a chat format that keeps the system prompt and the tools.

llama-cpp-python's own "gemma" chat format drops system messages (Gemma's
turns have no system role) and tool messages, so an agent's instructions and
its tools never reach the model. This format, "gemma-hermes", puts the
system prompt and a short list of the tools at the start of the first user
turn, and tool calls and their results into the conversation as text.

Usage: python3 gemma_server.py --model MODEL.gguf [llama_cpp.server options]
(--chat_format gemma-hermes is added unless another is given.)
"""

import json
import sys

from llama_cpp import llama_chat_format as formats


def _text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _tool_lines(tools):
    lines = []
    for t in tools or []:
        fn = t.get("function", t)
        name = fn.get("name", "")
        desc = (fn.get("description") or "").strip().split("\n")[0][:160]
        params = ", ".join(sorted((fn.get("parameters") or {}).get("properties", {}).keys()))
        lines.append(f"- {name}({params}): {desc}")
    return lines


@formats.register_chat_format("gemma-hermes")
def format_gemma_hermes(messages, tools=None, **kwargs):
    system = "\n\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    tool_lines = _tool_lines(tools)
    if tool_lines:
        system += "\n\nTools you can use:\n" + "\n".join(tool_lines)
    turns = []  # [role, text]

    def add(role, text):
        if turns and turns[-1][0] == role:
            turns[-1][1] += "\n\n" + text
        else:
            turns.append([role, text])

    for m in messages:
        role = m.get("role")
        if role == "user":
            add("user", _text(m.get("content")))
        elif role == "assistant":
            text = _text(m.get("content"))
            for c in m.get("tool_calls") or []:
                fn = c.get("function", {})
                text += f"\n[called {fn.get('name')}({fn.get('arguments', '')})]"
            add("model", text.strip())
        elif role == "tool":
            add("user", f"[result of {m.get('name') or m.get('tool_call_id', 'a tool')}]\n{_text(m.get('content'))}")
    if system.strip():
        if turns and turns[0][0] == "user":
            turns[0][1] = system.strip() + "\n\n" + turns[0][1]
        else:
            turns.insert(0, ["user", system.strip()])
    prompt = "".join(f"<start_of_turn>{r}\n{t}<end_of_turn>\n" for r, t in turns) + "<start_of_turn>model\n"
    return formats.ChatFormatterResponse(prompt=prompt, stop="<end_of_turn>")


if __name__ == "__main__":
    if "--chat_format" not in sys.argv:
        sys.argv += ["--chat_format", "gemma-hermes"]
    from llama_cpp.server.__main__ import main

    main()
