// Drive the selected memory slot's capability the way OpenClaw's own code does, in-process, through
// openclaw's package exports: load the config and plugins, get the memory search manager
// (getActiveMemorySearchManager), call its search, readFile, status and probes.
// usage: node openclaw_capability.mjs <openclaw package dir> <query> [purpose]   (OPENCLAW_STATE_DIR points at the
// config; purpose "status" is what OpenClaw's status scan asks for, default "default")
// Prints one JSON object on its last stdout line.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const [ocDir, query, purpose = "default"] = process.argv.slice(2);
const req = createRequire(ocDir + "/package.json");
const load = (sub) => import(pathToFileURL(req.resolve(`openclaw/plugin-sdk/${sub}`)).href);
const { getRuntimeConfig } = await load("config-runtime");
const { getActiveMemorySearchManager, closeActiveMemorySearchManagers } = await load("memory-host-search");

const cfg = getRuntimeConfig();
const out = {};
const t0 = performance.now();
const { manager, error } = await getActiveMemorySearchManager({ cfg, agentId: "main", purpose });
out.managerMs = Math.round(performance.now() - t0);
if (!manager) {
  console.log(JSON.stringify({ ok: false, error: error ?? "no manager" }));
  process.exit(3);
}
out.search = await manager.search(query, { maxResults: 3, sessionKey: "agent:main:main" });
const hit = out.search[0];
if (hit) out.readFile = await manager.readFile({ relPath: hit.path, from: hit.startLine, lines: hit.endLine - hit.startLine + 1 });
out.readMissing = await manager.readFile({ relPath: "memory/1999-01-01.md" });
try {
  await manager.readFile({ relPath: "zmem.toml" });
  out.readForeign = "read";
} catch (err) {
  out.readForeign = String(err.message);
}
out.status = manager.status();
out.embedding = await manager.probeEmbeddingAvailability();
out.vector = await manager.probeVectorAvailability();
await closeActiveMemorySearchManagers(cfg);
console.log(JSON.stringify(out));
process.exit(0);
