"""The Python Hermes Agent's own session store (hermes_state.SessionDB from
hermes-agent) on the corpus BenchmarkSearchVsHermesPython writes: every
message appended through append_message, as Hermes records a conversation,
then search_messages timed for each query.

Usage: hermes_search_bench.py DIR  (reads DIR/corpus.jsonl and
DIR/queries.json, writes DIR/result.json)"""
import json
import pathlib
import sys
import time

import hermes_state

d = pathlib.Path(sys.argv[1])
db = hermes_state.SessionDB(d / "state.db")
seen = set()
n = 0
start = time.perf_counter()
with open(d / "corpus.jsonl") as f:
    for line in f:
        m = json.loads(line)
        if m["session"] not in seen:
            seen.add(m["session"])
            db.create_session(m["session"], m["source"], model="gpt-4o-mini")
        if m["role"] == "tool":
            db.append_message(m["session"], "tool", m["text"], tool_name="terminal", tool_call_id="c", timestamp=m["ts"])
        else:
            db.append_message(m["session"], m["role"], m["text"], timestamp=m["ts"])
        n += 1
ingest = n / (time.perf_counter() - start)

lat = {}
hits = {}
for q in json.loads((d / "queries.json").read_text()):
    t0 = time.perf_counter()
    res = db.search_messages(q["query"], source_filter=[q["source"]] if q.get("source") else None, limit=10)
    lat.setdefault(q["kind"], []).append((time.perf_counter() - t0) * 1000)
    hits.setdefault(q["kind"], []).append(len(res))
db.close()
(d / "result.json").write_text(json.dumps({"ingest_msgs_per_s": ingest, "latency_ms": lat, "hits": hits}))
