// Prism's own response validator, applied to each event of a stream.
//
// Prism's proxy validates a response body as a whole: a text/event-stream
// is one string to it, so it cannot check streamed chunks. This script
// loads the same OpenAPI document with Prism's loader and runs Prism's
// validateOutput on every event's JSON, as the text/event-stream response
// of its operation. Run by TestResponsesMatchOpenAISpec.
//
// node sse_check.mjs SPEC < {"events": [{"path": "/chat/completions", "data": {...}}, ...]}
// stdout: {"checked": N, "violations": [{"index": I, "path": P, "type": T, "errors": [...]}]}
import { createRequire } from 'node:module';
import { join } from 'node:path';

const require = createRequire(join(process.env.HERMES_NODE_MODULES, 'noop.js'));
const { getHttpOperationsFromSpec } = require('@stoplight/prism-http');
const { validateOutput } = require('@stoplight/prism-http/dist/validator');

// The document loads first (it takes a while): the caller writes the
// events meanwhile.
const operations = await getHttpOperationsFromSpec(process.argv[2]);
let input = '';
for await (const chunk of process.stdin) input += chunk;
const { events } = JSON.parse(input);

const violations = [];
events.forEach((ev, index) => {
  const op = operations.find(o => o.method === 'post' && o.path === ev.path);
  if (!op) {
    violations.push({ index, path: ev.path, errors: [`no POST ${ev.path} in the spec`] });
    return;
  }
  const res = validateOutput({
    resource: op,
    element: { statusCode: 200, headers: { 'content-type': 'text/event-stream' }, body: ev.data },
  });
  if (res._tag === 'Left') {
    violations.push({
      index,
      path: ev.path,
      type: ev.data && ev.data.type,
      // For a union (the Responses events), the other members' type
      // mismatches say nothing: left out.
      errors: [...new Set(res.left
        .map(d => `${(d.path || []).join('.')} ${d.message}`)
        .filter(m => !/type must be equal to one of the allowed values/.test(m)))],
    });
  }
});
console.log(JSON.stringify({ checked: events.length, violations }));
