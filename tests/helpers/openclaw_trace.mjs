// Register integrations/openclaw/ with a stand-in for OpenClaw's plugin API (what register() calls)
// and run its memory_search and memory_get tools as OpenClaw's tools.invoke does (factory, then
// execute), against a real zmem; with ZMEM_TRACE set, both write their trace lines.
// usage: node openclaw_trace.mjs <plugin dir> <workspace> <zmem command>   -> one JSON line
import path from "node:path";
import { pathToFileURL } from "node:url";

const [pluginDir, workspace, command] = process.argv.slice(2);
const { default: plugin } = await import(pathToFileURL(path.join(pluginDir, "index.mjs")).href);
const factories = new Map();
let capability;
const cfg = { agents: { defaults: { workspace } } };
plugin.register({
  id: "zmem", registrationMode: "full", config: cfg, pluginConfig: { command },
  logger: { info() {}, warn() {}, error() {}, debug() {} },
  runtime: { agent: { resolveAgentWorkspaceDir: () => workspace } },
  registerTool: (factory, opts) => factories.set(opts.names[0], factory),
  registerMemoryCapability: (c) => { capability = c; },
  registerMemoryPromptPreparation() {},
  registerService() {},
  on() {},
});
const ctx = { agentId: "main", sessionKey: "agent:main:main", config: cfg };
const run = (name, params) => factories.get(name)(ctx).execute(`trace-${name}`, params);
const search = await run("memory_search", { query: "gateway" });
const hit = search.details.results[0];
const got = await run("memory_get", { path: hit.path, from: hit.startLine, lines: 1 });
await capability.runtime.closeAllMemorySearchManagers();
console.log(JSON.stringify({ hit, get: got.details }));
process.exit(0);
