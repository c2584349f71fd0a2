// A real ACP client for the tests of `hermes acp`: the official TypeScript
// SDK (@agentclientprotocol/sdk, installed by .ci/run into .ci/node; its
// node_modules directory is $HERMES_NODE_MODULES), as an editor uses it. It
// spawns the agent, initializes, runs the steps given as JSON in argv, and
// prints one JSON line per message it gets.
//
//   node acp_client.mjs CMD ARGS_JSON STEPS_JSON
//
// Steps: {"new": CWD} opens a session (the later steps use it; with
// "mcpServers": [...] passed along),
// {"load": ID, "cwd": CWD} loads one, {"prompt": TEXT} runs a turn (its line
// has the stop reason and ms_to_first_update, the time from sending the
// prompt to the first session/update, and from spawning the agent to it),
// {"prompt": TEXT, "session": ID} to
// another session. {"allow": OPTION_ID} sets the option picked on
// permission requests (default: the first allow_once).
import path from "node:path";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const acp = await import(pathToFileURL(path.join(process.env.HERMES_NODE_MODULES, "@agentclientprotocol/sdk/dist/v1/stable/acp.js")).href);

const [command, args, stepsJSON] = process.argv.slice(2);
const steps = JSON.parse(stepsJSON);
const spawned = performance.now();
const agent = spawn(command, JSON.parse(args), { stdio: ["pipe", "pipe", "inherit"], env: process.env });
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

const out = (o) => console.log(JSON.stringify(o));
let sent = 0;
let first = 0;
let allow = "";

// With HERMES_ACP_TEST_TERMINAL=1 the client offers terminals and runs
// what it is asked to as a real process, as an editor does; each
// terminal's output and exit code are printed when it is released.
const offerTerminal = process.env.HERMES_ACP_TEST_TERMINAL === "1";
const terminals = new Map();
let nextTerminal = 0;

let app = acp
  .client({ name: "hermes-test-client" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    if (sent && !first) first = performance.now();
    out({ update: params.update, session: params.sessionId });
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    out({ permission: params });
    const pick = allow || params.options.find((o) => o.kind === "allow_once")?.optionId;
    return { outcome: { outcome: "selected", optionId: pick } };
  });

if (offerTerminal) {
  app = app
  .onRequest(acp.methods.client.terminal.create, ({ params }) => {
    const id = `t${++nextTerminal}`;
    const env = { ...process.env };
    for (const v of params.env ?? []) env[v.name] = v.value;
    const child = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? undefined, env, stdio: ["ignore", "pipe", "pipe"] });
    const t = { child, output: "", exited: null };
    t.done = new Promise((resolve) => child.on("exit", (code, signal) => { t.exited = { exitCode: code, signal }; resolve(); }));
    child.stdout.on("data", (d) => { t.output += d; });
    child.stderr.on("data", (d) => { t.output += d; });
    terminals.set(id, t);
    out({ terminal_create: { id, command: params.command, args: params.args, cwd: params.cwd, env: (params.env ?? []).map((v) => v.name) } });
    return { terminalId: id };
  })
  .onRequest(acp.methods.client.terminal.output, ({ params }) => {
    const t = terminals.get(params.terminalId);
    return { output: t.output, truncated: false, exitStatus: t.exited };
  })
  .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
    const t = terminals.get(params.terminalId);
    await t.done;
    return t.exited;
  })
  .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
    terminals.get(params.terminalId).child.kill();
    return {};
  })
  .onRequest(acp.methods.client.terminal.release, async ({ params }) => {
    const t = terminals.get(params.terminalId);
    await Promise.race([t.done, new Promise((r) => setTimeout(r, 5000))]);
    t.child.kill();
    out({ terminal_released: { id: params.terminalId, output: t.output, exit: t.exited } });
    return {};
  });
}

try {
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: offerTerminal },
    });
    out({ initialize: init });
    let session = "";
    for (const step of steps) {
      try {
        if (step.new !== undefined) {
          const res = await ctx.request(acp.methods.agent.session.new, { cwd: step.new, mcpServers: step.mcpServers ?? [] });
          session = res.sessionId;
          out({ new: res });
        } else if (step.load !== undefined) {
          await ctx.request(acp.methods.agent.session.load, { sessionId: step.load, cwd: step.cwd, mcpServers: [] });
          session = step.load;
          out({ loaded: step.load });
        } else if (step.allow !== undefined) {
          allow = step.allow;
        } else if (step.prompt !== undefined) {
          first = 0;
          sent = performance.now();
          const res = await ctx.request(acp.methods.agent.session.prompt, {
            sessionId: step.session ?? session,
            prompt: [{ type: "text", text: step.prompt }],
          });
          out({
            stop: res.stopReason,
            ms_to_first_update: first ? first - sent : null,
            ms_spawn_to_first_update: first ? first - spawned : null,
            ms_total: performance.now() - sent,
          });
          sent = 0;
        }
      } catch (e) {
        out({ error: { code: e.code, message: String(e.message ?? e), data: e.data } });
      }
    }
  });
} finally {
  agent.stdin.end();
  agent.kill();
}
