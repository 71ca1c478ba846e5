// Register integrations/openclaw/ with a recording stand-in for OpenClaw's plugin API (only what
// register() calls), then run what OpenClaw calls outside a tool: promptBuilder, the prompt preparation
// (session-start context, from the real zmem), flushPlanResolver and authorizeSearchHits.
// usage: node openclaw_register.mjs <plugin dir> <workspace> <zmem command>   -> one JSON line
import path from "node:path";
import { pathToFileURL } from "node:url";

const [pluginDir, workspace, command] = process.argv.slice(2);
const { default: plugin } = await import(pathToFileURL(path.join(pluginDir, "index.mjs")).href);
const got = { tools: [], capability: null, preparations: [], services: [], logs: [] };
const cfg = { agents: { defaults: { workspace } }, memory: { citations: "auto" } };
const api = {
  id: "zmem", registrationMode: "full", config: cfg, pluginConfig: { command },
  logger: { info: (m) => got.logs.push(m), warn: (m) => got.logs.push(m), error: (m) => got.logs.push(m), debug: () => {} },
  runtime: { agent: { resolveAgentWorkspaceDir: () => workspace } },
  registerTool: (t, opts) => got.tools.push({ names: opts?.names, contextVersion: t.contextVersion ?? 1 }),
  registerMemoryCapability: (c) => { got.capability = c; },
  registerMemoryPromptPreparation: (p) => got.preparations.push(p),
  registerService: (s) => got.services.push(s),
  on: () => {},
};
plugin.register(api);
const c = got.capability;
const tools = new Set(["memory_search", "memory_get", "memory_append"]);
const out = { tools: got.tools };
out.prompt = c.promptBuilder({ availableTools: tools, citationsMode: "auto", agentId: "main", agentSessionKey: "agent:main:main" });
out.promptWithoutTools = c.promptBuilder({ availableTools: new Set(["read"]), agentId: "main" });
out.context = await got.preparations[0]?.({ availableTools: tools, agentId: "main", agentSessionKey: "agent:main:main" });
out.groupContext = await got.preparations[0]?.({ availableTools: tools, agentId: "main", agentSessionKey: "agent:main:telegram:group:7" });
out.flush = c.flushPlanResolver({ cfg, nowMs: Date.parse("2026-11-28T12:00:00Z"), contextWindowTokens: 200000 });
out.flushOff = c.flushPlanResolver({ cfg: { agents: { defaults: { compaction: { memoryFlush: { enabled: false } } } } } });
out.backend = c.runtime.resolveMemoryBackendConfig({ cfg, agentId: "main" });
const hits = [{ path: "s.jsonl", startLine: 1, endLine: 1, score: 1, snippet: "x", source: "sessions" },
  { path: "memory/x.md", startLine: 1, endLine: 1, score: 1, snippet: "y", source: "memory" }];
out.authorizedPrivate = await c.runtime.authorizeSearchHits({ cfg, agentId: "main", requesterSessionKey: "agent:main:main", sandboxed: false, hits });
out.authorizedGroup = await c.runtime.authorizeSearchHits({ cfg, agentId: "main", requesterSessionKey: "agent:main:telegram:group:7", sandboxed: false, hits });
out.authorizedOther = await c.runtime.authorizeSearchHits({ cfg, agentId: "main", requesterSessionKey: "agent:work:main", sandboxed: false, hits });
out.logs = got.logs;
await c.runtime.closeAllMemorySearchManagers();
console.log(JSON.stringify(out));
process.exit(0);
