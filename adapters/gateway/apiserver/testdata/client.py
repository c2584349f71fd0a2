# Drives the Hermes API server with the official Python openai package and
# prints what it saw as JSON (TestPythonOpenAIClient reads it).
import json
import os

import openai

client = openai.OpenAI(base_url=os.environ["HERMES_API_BASE"], api_key=os.environ["HERMES_API_KEY"], max_retries=0, timeout=60)
out = {}

raw = client.chat.completions.with_raw_response.create(
    model="hermes-agent", messages=[{"role": "user", "content": "weather?"}])
out["session"] = raw.headers.get("x-hermes-session-id", "")
out["completion"] = raw.parse().choices[0].message.content

text = []
for chunk in client.chat.completions.create(
        model="hermes-agent", stream=True, messages=[{"role": "user", "content": "weather again?"}]):
    if chunk.choices and chunk.choices[0].delta.content:
        text.append(chunk.choices[0].delta.content)
out["stream"] = "".join(text)

# Open WebUI's shape: the whole conversation resent, about 900 KB of it,
# under a model name the server does not route.
para = "The quick brown fox jumps over the lazy dog. " * 20
msgs = [{"role": "system", "content": "You are a helpful assistant."}]
i = 0
while sum(len(m["content"]) for m in msgs) < 900_000:
    msgs.append({"role": "user", "content": "question %d: %s" % (i, para)})
    msgs.append({"role": "assistant", "content": "answer %d: %s" % (i, para)})
    i += 1
msgs.append({"role": "user", "content": "And the last question?"})
out["long"] = client.chat.completions.create(model="llama3:latest", messages=msgs).choices[0].message.content

out["routed"] = client.chat.completions.create(
    model="fast", messages=[{"role": "user", "content": "quick"}]).choices[0].message.content
out["models"] = [m.id for m in client.models.list().data]
print(json.dumps(out))
