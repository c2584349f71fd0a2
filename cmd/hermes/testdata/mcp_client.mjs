// A real MCP client for the tests of `hermes mcp serve`: the official
// TypeScript SDK's Client (installed by .ci/run into .ci/node; its
// node_modules directory is $HERMES_NODE_MODULES). It connects over stdio
// (a command) or streamable HTTP (a URL and a bearer key), runs the steps
// given as JSON in argv, and prints one JSON line per step.
//
//   node mcp_client.mjs stdio CMD ARGS_JSON STEPS_JSON
//   node mcp_client.mjs http URL KEY STEPS_JSON
//
// A step is {"tool": NAME, "args": {...}}, {"read": URI}, {"list": "tools"|"resources"|"templates"}.
import path from "node:path";
import { pathToFileURL } from "node:url";

const sdk = (p) => import(pathToFileURL(path.join(process.env.HERMES_NODE_MODULES, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");

const [mode, ...rest] = process.argv.slice(2);
let transport, steps;
if (mode === "stdio") {
  const { StdioClientTransport } = await sdk("client/stdio.js");
  const [command, args, s] = rest;
  transport = new StdioClientTransport({ command, args: JSON.parse(args), env: process.env, stderr: "inherit" });
  steps = JSON.parse(s);
} else {
  const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
  const [url, key, s] = rest;
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
  steps = JSON.parse(s);
}

const client = new Client({ name: "hermes-test-client", version: "1.0.0" });
try {
  await client.connect(transport);
} catch (e) {
  console.log(JSON.stringify({ connect_error: String(e) }));
  process.exit(0);
}
console.log(JSON.stringify({ server: client.getServerVersion(), instructions: client.getInstructions() }));
for (const step of steps) {
  try {
    if (step.tool) {
      const r = await client.callTool({ name: step.tool, arguments: step.args ?? {} }, undefined, { timeout: 120000 });
      console.log(JSON.stringify({ tool: step.tool, isError: r.isError ?? false, text: r.content.map((c) => c.text).join("\n"), structured: r.structuredContent ?? null }));
    } else if (step.read) {
      const r = await client.readResource({ uri: step.read });
      console.log(JSON.stringify({ read: step.read, text: r.contents.map((c) => c.text).join("\n") }));
    } else if (step.list === "tools") {
      const r = await client.listTools();
      console.log(JSON.stringify({ list: "tools", names: r.tools.map((t) => t.name).sort() }));
    } else if (step.list === "resources") {
      const r = await client.listResources();
      console.log(JSON.stringify({ list: "resources", uris: r.resources.map((x) => x.uri) }));
    } else if (step.list === "templates") {
      const r = await client.listResourceTemplates();
      console.log(JSON.stringify({ list: "templates", uris: r.resourceTemplates.map((x) => x.uriTemplate) }));
    }
  } catch (e) {
    console.log(JSON.stringify({ step, error: String(e) }));
  }
}
await client.close();
