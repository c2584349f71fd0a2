"""A second real ACP client for the tests of `hermes acp`: the Python SDK
(PyPI agent-client-protocol, installed by .ci/run into .ci/acp-python, which
is on PYTHONPATH). It spawns the agent, initializes, runs the steps given as
JSON in argv and prints one JSON line per message it gets.

    python3 acp_client.py CMD ARGS_JSON STEPS_JSON

Steps: {"new": CWD}; {"prompt": TEXT}, with "cancel_on": KIND to send
session/cancel once an update of that kind (tool_call, ...) arrived;
{"load": ID, "cwd": CWD}. Permission requests are answered with their
first allow_once option.
"""

import asyncio
import json
import os
import sys

import acp
from acp.schema import AllowedOutcome, RequestPermissionResponse


def out(obj):
    print(json.dumps(obj), flush=True)


class Editor:
    def __init__(self):
        self.arrived = {}

    async def session_update(self, session_id, update, **kwargs):
        d = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        out({"update": d, "session": session_id})
        ev = self.arrived.get(d.get("sessionUpdate"))
        if ev is not None:
            ev.set()

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        out({"permission": {"toolCallId": tool_call.tool_call_id, "options": [o.kind for o in options]}})
        pick = next(o.option_id for o in options if o.kind == "allow_once")
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=pick))

    async def write_text_file(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("fs/write_text_file")

    async def read_text_file(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("fs/read_text_file")

    async def create_terminal(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("terminal/create")

    async def terminal_output(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("terminal/output")

    async def release_terminal(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("terminal/release")

    async def wait_for_terminal_exit(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("terminal/wait_for_exit")

    async def kill_terminal(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("terminal/kill")

    async def ext_method(self, method, params):
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method, params):
        return None


async def main():
    command, args, steps = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    editor = Editor()
    # The SDK passes the agent only a few variables unless told: the
    # agent needs the model's address and key; its stderr is ours.
    async with acp.spawn_agent_process(editor, command, *args, env=dict(os.environ), transport_kwargs={"stderr": None}) as (conn, proc):
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        out({"initialize": init.model_dump(mode="json", by_alias=True, exclude_none=True)})
        session = ""
        for step in steps:
            try:
                if "new" in step:
                    res = await conn.new_session(cwd=step["new"], mcp_servers=[])
                    session = res.session_id
                    out({"new": {"sessionId": session}})
                elif "load" in step:
                    await conn.load_session(cwd=step["cwd"], session_id=step["load"], mcp_servers=[])
                    session = step["load"]
                    out({"loaded": session})
                elif "prompt" in step:
                    canceller = None
                    if "cancel_on" in step:
                        ev = asyncio.Event()
                        editor.arrived[step["cancel_on"]] = ev

                        async def cancel_when(ev=ev, sid=session):
                            await ev.wait()
                            await conn.cancel(session_id=sid)

                        canceller = asyncio.create_task(cancel_when())
                    res = await conn.prompt(session_id=step.get("session", session), prompt=[acp.text_block(step["prompt"])])
                    editor.arrived.clear()
                    if canceller is not None:
                        canceller.cancel()
                    out({"stop": res.stop_reason})
            except acp.RequestError as e:
                out({"error": {"code": e.code, "message": str(e)}})
        proc.stdin.close()


asyncio.run(main())
