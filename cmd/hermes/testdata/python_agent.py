"""Drive the Python Hermes Agent's own code on $HERMES_HOME, for the
adoption tests (cmd/hermes/adopt_python_test.go). Run with the Python of
the venv where hermes-agent is installed ($HERMES_AGENT_VENV/bin/python).

  memory-add TARGET TEXT      its memory tool's add
  memory-replace TARGET OLD NEW
  memory-read                 its memory tool's reader: {"memory": [...], "user": [...]}
  skill-create NAME CATEGORY  its skill writer (body from stdin)
  config-load                 its config loader and checker: the loaded config
                              and the problems validate_config_structure finds
  session ID TEXT             its SessionDB: a session in $HERMES_HOME/state.db

Each prints one JSON document and exits 1 if the Python code refused.
"""
import json
import sys


def main(argv):
    cmd = argv[0]
    if cmd.startswith("memory-"):
        from tools.memory_tool import MemoryStore

        store = MemoryStore()
        store.load_from_disk()
        if cmd == "memory-add":
            res = store.add(argv[1], argv[2])
        elif cmd == "memory-replace":
            res = store.replace(argv[1], argv[2], argv[3])
        else:
            res = {"success": True, "memory": store.memory_entries, "user": store.user_entries}
    elif cmd == "skill-create":
        from tools.skill_manager_tool import _create_skill

        res = _create_skill(argv[1], sys.stdin.read(), category=argv[2] or None)
    elif cmd == "config-load":
        from hermes_cli.config import load_config, validate_config_structure

        conf = load_config()
        issues = [i.message for i in validate_config_structure(conf) if i.severity == "error"]
        res = {"success": not issues, "config": conf, "errors": issues}
    elif cmd == "session":
        from hermes_constants import get_hermes_home
        from hermes_state import SessionDB

        db = SessionDB(get_hermes_home() / "state.db")
        db.create_session(argv[1], "cli", model="gpt-4o-mini")
        db.append_message(argv[1], "user", argv[2])
        db.append_message(argv[1], "assistant", "Done.", finish_reason="stop")
        db.end_session(argv[1], "user_exit")
        db.close()
        res = {"success": True}
    else:
        raise SystemExit("unknown command " + cmd)
    print(json.dumps(res, default=str))
    return 0 if res.get("success") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
