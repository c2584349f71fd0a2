"""Builds a state.db with the Python Hermes Agent's own SessionDB class
(hermes_state.py from the hermes-agent package), the way its CLI and
gateway write one. Usage: make_state.py PATH"""
import pathlib
import sys

import hermes_state

db = hermes_state.SessionDB(pathlib.Path(sys.argv[1]))
db.create_session("20260301_090000_aaaaaa", "telegram", model="anthropic/claude-sonnet-4",
                  system_prompt="You are Hermes.", cwd="/home/ada")
db.append_message("20260301_090000_aaaaaa", "user", "How full is my disk?", timestamp=1772355601.25)
db.append_message("20260301_090000_aaaaaa", "assistant", "", finish_reason="tool_calls", reasoning="Check df.",
                  tool_calls=[{"id": "call_1", "type": "function",
                               "function": {"name": "terminal", "arguments": "{\"command\": \"df -h\"}"}}],
                  timestamp=1772355602)
db.append_message("20260301_090000_aaaaaa", "tool", "/dev/sda1 80% used", tool_name="terminal",
                  tool_call_id="call_1", timestamp=1772355603)
db.append_message("20260301_090000_aaaaaa", "assistant", "Your disk is 80% full.", finish_reason="stop",
                  timestamp=1772355604)
db.update_token_counts("20260301_090000_aaaaaa", input_tokens=5000, output_tokens=300, cache_read_tokens=2000,
                       estimated_cost_usd=0.0123)
db.set_session_title("20260301_090000_aaaaaa", "Disk usage")
db.end_session("20260301_090000_aaaaaa", "user_exit")
db.create_session("20260301_100000_bbbbbb", "cli", model="gpt-4o", parent_session_id="20260301_090000_aaaaaa")
db.append_message("20260301_100000_bbbbbb", "user", "Which folders are the biggest?", timestamp=1772359201)
db.close()
