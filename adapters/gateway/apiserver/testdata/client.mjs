// The official `openai` npm client (v6) talking to the Hermes API server:
// a chat completion, a streamed one with usage, and a Responses call
// streamed and continued with previous_response_id. Run by
// TestNodeOpenAIClient; prints one JSON object with what it saw.
//
//   HERMES_NODE_MODULES=.../node_modules HERMES_API_BASE=http://127.0.0.1:PORT/v1 HERMES_API_KEY=KEY node client.mjs
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.env.HERMES_NODE_MODULES;
const { default: OpenAI } = await import(pathToFileURL(join(modules, 'openai', 'index.mjs')).href);

const client = new OpenAI({ baseURL: process.env.HERMES_API_BASE, apiKey: process.env.HERMES_API_KEY, maxRetries: 0, timeout: 60_000 });
const out = {};

// Non-streamed, reading the session header from the raw response.
const { data: completion, response } = await client.chat.completions
  .create({ model: 'hermes-agent', messages: [{ role: 'user', content: "What's the weather in Paris?" }] })
  .withResponse();
out.completion = {
  content: completion.choices[0].message.content,
  finish: completion.choices[0].finish_reason,
  object: completion.object,
  total_tokens: completion.usage.total_tokens,
  session: response.headers.get('x-hermes-session-id'),
};

// Streamed, continuing that session.
const stream = await client.chat.completions.create(
  {
    model: 'hermes-agent',
    messages: [{ role: 'user', content: 'And tomorrow?' }],
    stream: true,
    stream_options: { include_usage: true },
  },
  { headers: { 'X-Hermes-Session-Id': out.completion.session } },
);
let text = '';
let chunks = 0;
let usage = null;
let finish = null;
for await (const chunk of stream) {
  chunks++;
  if (chunk.usage) usage = chunk.usage;
  const choice = chunk.choices[0];
  if (choice) {
    text += choice.delta.content ?? '';
    if (choice.finish_reason) finish = choice.finish_reason;
  }
}
out.stream = { text, chunks, finish, total_tokens: usage?.total_tokens ?? null };

// Responses: streamed, then continued.
const rs = await client.responses.create({ model: 'hermes-agent', input: 'Name a French cheese.', stream: true });
const types = [];
let completed = null;
let deltas = '';
for await (const ev of rs) {
  if (types[types.length - 1] !== ev.type) types.push(ev.type);
  if (ev.type === 'response.output_text.delta') deltas += ev.delta;
  if (ev.type === 'response.completed') completed = ev.response;
}
out.responses_stream = { types, deltas, id: completed?.id, status: completed?.status, text: completed?.output_text ?? completed?.output?.[0]?.content?.[0]?.text };

const next = await client.responses.create({ model: 'hermes-agent', input: 'Another one?', previous_response_id: completed.id });
out.responses = { text: next.output_text, status: next.status, previous: next.previous_response_id, input_tokens: next.usage.input_tokens };

// A wrong key is an AuthenticationError.
try {
  await new OpenAI({ baseURL: process.env.HERMES_API_BASE, apiKey: 'wrong', maxRetries: 0 }).models.list();
  out.wrong_key = 'accepted';
} catch (e) {
  out.wrong_key = `${e.constructor.name} ${e.status}`;
}

console.log(JSON.stringify(out));
