// zmem as OpenClaw's memory: a memory-slot plugin (plain ESM, no build step, no dependencies).
//
// The tools and the memory capability are served by one long-lived `zmem mcp` process per workspace
// (and per scope: group chats get their own `--scope group` process, which never returns MEMORY.md or
// other private files), spoken to over MCP's stdio JSON-RPC. The plugin never reads or writes memory
// files itself: what zmem answers is what the agent sees, and what zmem writes is all that is written.
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ZmemError, isZmemError } from "./lib/zmem-process.mjs";
import { Pool, agentSettings, chatScope, defaultAgentId, scopeFor } from "./lib/pool.mjs";
import { citationsMode, includeCitations, jsonResult, presentHit, presentRead, readFailure } from "./lib/shape.mjs";
import { traced } from "./lib/trace.mjs";

export const TOOL_NAMES = ["memory_search", "memory_get", "memory_append", "memory_blame", "memory_recall_as_of"];
const SILENT = "NO_REPLY";
const DEFAULT_FLUSH_SOFT_TOKENS = 4000;
const DEFAULT_FLUSH_FORCE_TRANSCRIPT_BYTES = 2 * 1024 * 1024;
const DEFAULT_RESERVE_TOKENS_FLOOR = 20000;
const CONTEXT_CACHE_MAX = 200;
// OpenClaw's file tools whose path argument names the one file they change
const FILE_WRITE_TOOLS = new Set(["write", "edit"]);

const SEARCH_DESCRIPTION = "Mandatory recall step: search the user's long-term memory (zmem: MEMORY.md, daily logs "
  + "memory/YYYY-MM-DD.md, bank/ pages, in a git repository) before answering anything about prior work, decisions, "
  + "dates, people, preferences or todos. Returns results best first, each with path, startLine, endLine, score, "
  + "snippet (lines startLine..endLine; a line longer than a snippet is cut around the match, \u2026 marking "
  + "the cut) and, when citations are on, citation path#Lx-Ly; read the exact lines with memory_get. since (7d, 2w, YYYY-MM-DD) keeps daily logs from that day on; path keeps files matching a glob; "
  + "kind (world, experience, opinion, observation) or entity searches typed Retain facts. An empty results list "
  + "means nothing matched: say so rather than guess. warnings explain any degradation (e.g. keyword-only).";
const GET_DESCRIPTION = "Safe exact excerpt read of a memory file (MEMORY.md, memory/**.md, bank/**.md): the lines "
  + "zmem get prints. Pass path (a citation path#Lx-Ly works too), optional from (1-based) and lines. Never more "
  + "than a bounded excerpt (whole lines; a single line longer than the bound is cut, \u2026 marking the cut); "
  + "truncated/nextFrom (and nextOffset, to pass back as offset, inside a cut line) say where to continue. status=ok means the excerpt was read; "
  + "status=not_found means the file does not exist; status=error means the read was refused or failed (error "
  + "says why). Session transcript paths cannot be read.";
const APPEND_DESCRIPTION = "Store a durable memory: appends one self-contained statement to today's daily log "
  + "(memory/YYYY-MM-DD.md) and commits it to git, so it is recalled at once and its history is kept. Use it for "
  + "decisions, preferences, facts about people and projects, commitments and todos. retain makes it a typed fact "
  + "under ## Retain: W world fact, B experience (something the user or you did), O opinion (give confidence 0..1), "
  + "S observation/summary, R relation (\"@Subject predicate @Object\"). entities names whom or what it is about "
  + "(e.g. [\"Peter\"]). Returns the citation of what was written.";
const BLAME_DESCRIPTION = "Where a memory came from: who wrote each cited line, when, and in which commit (and, for "
  + "lines zmem reflect generated, the daily-log evidence behind them). target: a citation path#Lx-Ly, a fact id, "
  + "or a query in plain words.";
const AS_OF_DESCRIPTION = "Search memory as it stood at a past point: as_of is a date (YYYY-MM-DD, or 7d, 2w) or a "
  + "git revision. Use it for \"what did we know or believe back then\" questions. Same results as memory_search; "
  + "citations read path@<commit>#Lx-Ly, which memory_get reads back from that commit.";

const SEARCH_PARAMS = {
  type: "object",
  properties: {
    query: { type: "string", description: "What to look for, in natural language or keywords." },
    maxResults: { type: "integer", minimum: 1, maximum: 100 },
    minScore: { type: "number", minimum: 0 },
    corpus: { type: "string", enum: ["memory", "sessions", "all"] },
    since: { type: "string", description: "Only daily logs from this day on: 7d, 2w, 3m, 1y or YYYY-MM-DD." },
    path: { type: "string", description: "Only files matching this glob or under this directory (bank/**)." },
    kind: { type: "string", description: "Search Retain facts of this kind: world, experience, opinion, observation, relation." },
    entity: { type: "string", description: "Search Retain facts about this entity (e.g. Peter)." },
  },
  required: ["query"],
  additionalProperties: false,
};
const GET_PARAMS = {
  type: "object",
  properties: {
    path: { type: "string", description: "Workspace-relative memory file, optionally with a citation: memory/2026-11-27.md#L5-L6." },
    from: { type: "integer", minimum: 1 },
    lines: { type: "integer", minimum: 1 },
    offset: { type: "integer", minimum: 0, description: "Characters of line from already read: a cut line's nextOffset." },
    corpus: { type: "string", enum: ["memory", "all"] },
  },
  required: ["path"],
  additionalProperties: false,
};
const APPEND_PARAMS = {
  type: "object",
  properties: {
    text: { type: "string", description: "What to remember: one self-contained statement, with names and dates." },
    retain: { type: "string", enum: ["W", "B", "O", "S", "R", "w", "b", "o", "s", "r"],
      description: "Make it a typed Retain fact: W world, B experience, O opinion, S observation, R relation." },
    entities: { type: "array", items: { type: "string" }, description: "Whom or what it is about, e.g. [\"Peter\"]." },
    confidence: { type: "number", minimum: 0, maximum: 1, description: "Confidence of an opinion (retain O)." },
  },
  required: ["text"],
  additionalProperties: false,
};
const BLAME_PARAMS = {
  type: "object",
  properties: { target: { type: "string", description: "A citation (path#Lx-Ly), a fact id, or a query." } },
  required: ["target"],
  additionalProperties: false,
};
const AS_OF_PARAMS = {
  type: "object",
  properties: {
    query: { type: "string" },
    as_of: { type: "string", description: "A date (YYYY-MM-DD, 7d, 2w) or a git revision." },
    maxResults: { type: "integer", minimum: 1, maximum: 100 },
  },
  required: ["query", "as_of"],
  additionalProperties: false,
};

function str(v) {
  return typeof v === "string" && v.trim() ? v.trim() : undefined;
}

function posInt(v) {
  const n = typeof v === "string" && v.trim() ? Number(v) : v;
  return Number.isInteger(n) && n >= 1 ? n : undefined;
}

function num(v) {
  const n = typeof v === "string" && v.trim() ? Number(v) : v;
  return typeof n === "number" && Number.isFinite(n) ? n : undefined;
}

/** An error in the caller's arguments: OpenClaw passes it to the caller as it is (tools.invoke: HTTP 400
 *  with the message and hint; an agent turn: the tool result), instead of "tool execution failed". */
function asInputError(err) {
  err.name = "ToolInputError";
  err.status = 400;
  return err;
}

function inputError(tool, message, hint) {
  return asInputError(new ZmemError(`${tool}: ${message}`, hint, { userError: true }));
}

function required(params, key, tool) {
  const v = str(params?.[key]);
  if (v === undefined) throw inputError(tool, `${key} is required`, `pass ${key} as a non-empty string`);
  return v;
}

function describe(spec) {
  if (spec.enum) return `one of ${spec.enum.join(", ")}`;
  const kind = spec.type === "integer" ? "a whole number" : spec.type === "number" ? "a number"
    : spec.type === "array" ? "a list of strings" : `a ${spec.type}`;
  if (spec.minimum !== undefined && spec.maximum !== undefined) return `${kind} from ${spec.minimum} to ${spec.maximum}`;
  if (spec.minimum !== undefined) return `${kind} \u2265 ${spec.minimum}`;
  return kind;
}

/**
 * The arguments checked against the tool's declared schema, as OpenClaw checks a model's tool call: a
 * tools.invoke caller's arguments reach execute() unchecked, and a wrong value must be refused, not
 * answered as another question (from 10.5 read as line 1, maxResults 0 as 6).
 */
function validate(tool, schema, params) {
  if (params === null || typeof params !== "object" || Array.isArray(params)) {
    throw inputError(tool, "arguments must be an object", `pass ${Object.keys(schema.properties).join(", ")}`);
  }
  for (const [key, value] of Object.entries(params)) {
    const spec = schema.properties[key];
    if (!spec) {
      throw inputError(tool, `unknown argument ${JSON.stringify(key)}`,
        `${tool} takes ${Object.keys(schema.properties).join(", ")}`);
    }
    if (value === undefined) continue;
    const t = spec.type;
    const ok = t === "integer" ? Number.isInteger(value)
      : t === "number" ? typeof value === "number" && Number.isFinite(value)
        : t === "string" ? typeof value === "string"
          : t === "array" ? Array.isArray(value) && value.every((x) => typeof x === "string") : true;
    const inRange = ok && (spec.minimum === undefined || value >= spec.minimum)
      && (spec.maximum === undefined || value <= spec.maximum) && (!spec.enum || spec.enum.includes(value));
    if (!inRange) {
      const shown = typeof value === "string" && value.length > 40 ? `${JSON.stringify(value.slice(0, 40))}\u2026` : JSON.stringify(value);
      throw inputError(tool, `${key} must be ${describe(spec)}, not ${shown}`, `pass ${key} as ${describe(spec)}, or leave it out`);
    }
  }
  return params;
}

/** Session hits are transcripts: only the agent's own private sessions may see them. */
function authorizeHits(hits, { agentId, sessionKey, sandboxed }) {
  const own = typeof sessionKey !== "string" || !agentId || sessionKey.startsWith(`agent:${agentId}:`) || !sessionKey.startsWith("agent:");
  const mayReadSessions = !sandboxed && own && chatScope(sessionKey) === "private";
  return hits.filter((h) => (h.source ?? "memory") !== "sessions" || mayReadSessions);
}

// One pool per gateway process: OpenClaw may call register() more than once (discovery, tool discovery,
// reloads), and it evaluates this module more than once: its agent runtime loads an instance of its own
// in the same process, whose module-level state would start a second, cold `zmem mcp` per workspace for
// agent turns. So the pool lives on globalThis under a registry key: every registration of every
// instance shares the same zmem processes and takes the newest API for config.
const SHARED = Symbol.for("zmem.openclaw.shared");
const shared = (globalThis[SHARED] ??= { pool: null, exitHooked: false, shadowWarned: false });

function poolFor(api) {
  if (!shared.pool) shared.pool = new Pool({ api, logger: api.logger });
  else if (!api.registrationMode || api.registrationMode === "full") {
    shared.pool.api = api;
    shared.pool.logger = api.logger;
  }
  if (!shared.exitHooked) {
    shared.exitHooked = true;
    process.once?.("exit", () => {
      for (const p of shared.pool?.list() ?? []) {
        try { p.child?.kill("SIGTERM"); } catch { /* gone */ }
      }
    });
  }
  return shared.pool;
}

// OpenClaw keeps its bundled memory-core loaded beside another memory slot as the "dreaming sidecar"
// unless it is disabled. The sidecar registers memory_search/memory_get too, and the first registration
// of a name wins: installed plugins (~/.openclaw/extensions) load after bundled ones, so an agent's
// memory_search would go to the builtin index, and dreaming would write to the workspace outside zmem.
export function memoryCoreShadows(cfg) {
  const plugins = cfg?.plugins ?? {};
  if (plugins.enabled === false || plugins.slots?.memory !== "zmem") return false;
  const deny = Array.isArray(plugins.deny) ? plugins.deny : [];
  return plugins.entries?.["memory-core"]?.enabled !== false && !deny.includes("memory-core");
}

export default {
  id: "zmem",
  name: "zmem memory",
  description: "zmem as OpenClaw's memory: Markdown notes in git, cited recall, typed facts, history.",
  kind: "memory",
  register(api) {
    const logger = api.logger;
    const pool = poolFor(api);
    const contextCache = new Map(); // sessionKey -> lines of the session's start context
    const onceLogged = new Set();
    const logOnce = (key, level, msg) => {
      if (onceLogged.has(key)) return;
      onceLogged.add(key);
      logger?.[level]?.(msg);
    };
    let liveCfg;
    try {
      liveCfg = api.runtime?.config?.current?.() ?? api.config;
    } catch { /* outside a gateway */ }
    if (!shared.shadowWarned && memoryCoreShadows(liveCfg)) {
      shared.shadowWarned = true;
      logger?.warn?.("zmem: OpenClaw's bundled memory-core is still enabled beside the zmem memory slot: its "
        + "memory_search/memory_get can answer in zmem's place and its dreaming writes to the workspace outside zmem. "
        + "hint: openclaw plugins disable memory-core (then restart the gateway)");
    }

    const toolCtx = (ctx) => ({
      cfg: ctx.getRuntimeConfig?.() ?? ctx.runtimeConfig ?? ctx.config ?? api.runtime?.config?.current?.() ?? api.config,
      agentId: ctx.agentId ?? "main",
      sessionKey: ctx.sessionKey,
      workspaceDir: ctx.workspaceDir,
      sandboxed: ctx.sandboxed === true,
    });

    const withNotice = (payload, workspace) => {
      const notice = pool.takeNotice(workspace);
      if (notice) payload.notice = notice;
      return payload;
    };

    async function runSearch(c, params, signal, { asOf } = {}) {
      const query = required(params, "query", asOf !== undefined ? "memory_recall_as_of" : "memory_search");
      const t0 = performance.now();
      const { proc, settings, workspace, scope } = await pool.processFor(c);
      const tReady = performance.now();
      const maxResults = params.maxResults ?? posInt(settings.maxResults) ?? 6;
      const minScore = params.minScore ?? num(settings.minScore) ?? 0;
      const corpus = str(params.corpus);
      let out;
      if (asOf !== undefined) {
        out = await proc.callTool("memory_recall_as_of", { query, as_of: asOf, max_results: maxResults },
          { timeoutMs: settings.timeoutMs, signal });
      } else {
        const args = { query, max_results: maxResults, min_score: minScore };
        for (const k of ["since", "path", "kind", "entity"]) if (str(params[k])) args[k] = str(params[k]);
        if (["hybrid", "bm25", "vector"].includes(settings.mode)) {
          if (proc.acceptsArgument("memory_search", "mode")) args.mode = settings.mode;
          else logOnce("mode", "warn", `zmem: this zmem's memory_search takes no mode; mode=${settings.mode} is ignored (recall.mode in zmem.toml decides)`);
        }
        out = await proc.callTool("memory_search", args, { timeoutMs: settings.timeoutMs, signal });
      }
      const tDone = performance.now();
      let hits = authorizeHits(out.results ?? [], c);
      const warnings = [...(out.warnings ?? [])];
      if (corpus === "memory") hits = hits.filter((h) => (h.source ?? "memory") === "memory");
      if (corpus === "sessions") {
        hits = hits.filter((h) => h.source === "sessions");
        if (!(out.results ?? []).some((h) => h.source === "sessions")) {
          warnings.push("zmem searched no session transcripts: enable [sessions] in zmem.toml to index them");
        }
      }
      const mode = citationsMode(c.cfg);
      const include = includeCitations(mode, scope);
      const payload = {
        results: hits.map((h) => presentHit(h, include)),
        provider: out.provider ?? "zmem",
        model: out.model ?? null,
        citations: mode,
        mode: out.mode,
        backend: "zmem",
        scope,
        // where the time went: waiting for the zmem process (a start), then the call over its stdio
        debug: { processMs: Math.round(tReady - t0), zmemMs: Math.round(tDone - tReady), pid: proc.pid },
      };
      if (out.as_of) payload.as_of = out.as_of;
      if (out.rerank) payload.rerank = out.rerank;
      if (warnings.length) {
        payload.warnings = warnings;
        payload.warning = warnings.join(" ");
      }
      return withNotice(payload, workspace);
    }

    async function runGet(c, params, signal) {
      const relPath = required(params, "path", "memory_get");
      const { proc, settings, workspace } = await pool.processFor(c);
      const args = { path: relPath };
      const from = params.from;
      let lines = params.lines;
      const offset = params.offset ?? 0;
      if (offset > 0 && from === undefined) {
        throw inputError("memory_get", "offset needs from (the line it is an offset in)",
          "pass the nextFrom and nextOffset of the previous memory_get as from and offset");
      }
      if (lines === undefined && !/#L\d+/i.test(relPath)) lines = posInt(settings.defaultReadLines) ?? 120;
      if (from !== undefined) args.from = from;
      if (lines !== undefined) args.lines = lines;
      let got;
      try {
        got = await proc.callTool("memory_get", args, { timeoutMs: settings.timeoutMs, signal });
      } catch (err) {
        if (isZmemError(err) && err.userError) return withNotice(readFailure(relPath, err), workspace);
        throw err;
      }
      if (offset > 0 && offset >= String(got.text ?? "").split("\n")[0].length) {
        throw inputError("memory_get", `offset ${offset} is past the end of line ${from} of ${relPath}`,
          "pass the nextFrom and nextOffset of the previous memory_get as from and offset");
      }
      return withNotice(presentRead(got, { maxChars: posInt(settings.maxReadChars) ?? 12000, offset }), workspace);
    }

    async function runAppend(c, params, signal) {
      const text = required(params, "text", "memory_append");
      const { proc, settings, workspace } = await pool.processFor(c);
      const args = { text, commit: true };
      if (str(params.retain)) args.retain = str(params.retain);
      if (Array.isArray(params.entities) && params.entities.length) args.entities = params.entities.map(String);
      if (num(params.confidence) !== undefined) args.confidence = num(params.confidence);
      // never asked twice: a zmem that died under it may have written and committed already
      const out = await proc.callTool("memory_append", args, { timeoutMs: Math.max(settings.timeoutMs, 15000), signal, retryOnExit: false });
      for (const key of [...contextCache.keys()]) if (contextCache.get(key)?.workspace === workspace) contextCache.delete(key);
      return withNotice(out, workspace);
    }

    async function runBlame(c, params, signal) {
      const target = required(params, "target", "memory_blame");
      const { proc, settings, workspace } = await pool.processFor(c);
      const out = await proc.callTool("memory_blame", { target }, { timeoutMs: Math.max(settings.timeoutMs, 15000), signal });
      return withNotice(out, workspace);
    }

    // direct: OpenClaw's Tool Search (on by default) would otherwise hide the schema behind tool_search/tool_call,
    // and the prompt tells the model to run memory_search before answering
    const tool = (name, label, description, parameters, run, { direct = false } = {}) => (ctx) => {
      const c = toolCtx(ctx);
      return {
        name,
        label,
        description,
        parameters,
        ...(direct ? { catalogMode: "direct-only" } : {}),
        async execute(_toolCallId, params, signal) {
          return traced(name, async () => {
            const args = validate(name, parameters, params ?? {});
            try {
              return jsonResult(await run(c, args, signal));
            } catch (err) {
              // zmem refused the request itself (a bad date, a refused target): the caller's to fix, and to see
              if (isZmemError(err) && err.userError) throw asInputError(err);
              throw err;
            }
          });
        },
      };
    };

    api.registerTool(tool("memory_search", "Memory Search", SEARCH_DESCRIPTION, SEARCH_PARAMS,
      (c, p, s) => runSearch(c, p, s), { direct: true }), { names: ["memory_search"] });
    api.registerTool(tool("memory_get", "Memory Get", GET_DESCRIPTION, GET_PARAMS, runGet, { direct: true }),
      { names: ["memory_get"] });
    // Tools that write take the version 2 factory form (host invocation authority), as OpenClaw requires.
    api.registerTool({ contextVersion: 2, create: tool("memory_append", "Memory Append", APPEND_DESCRIPTION, APPEND_PARAMS, runAppend) },
      { names: ["memory_append"] });
    api.registerTool(tool("memory_blame", "Memory Blame", BLAME_DESCRIPTION, BLAME_PARAMS, runBlame), { names: ["memory_blame"] });
    api.registerTool(tool("memory_recall_as_of", "Memory Recall As Of", AS_OF_DESCRIPTION, AS_OF_PARAMS,
      (c, p, s) => runSearch(c, p, s, { asOf: required(p, "as_of", "memory_recall_as_of") })),
    { names: ["memory_recall_as_of"] });

    // --- the memory capability: search manager (status, probes), prompt section, flush plan
    function createManager({ cfg, agentId, purpose, proc: first, workspace, lastError, counts }) {
      let last = { provider: "zmem", model: null, mode: null, warnings: [] };
      const ctxFor = (sessionKey) => ({ cfg, agentId, sessionKey, sandboxed: false });
      const probe = async () => {
        const { proc, settings } = await pool.processFor(ctxFor(undefined));
        const out = await proc.callTool("memory_search", { query: "zmem embedding probe", max_results: 1 },
          { timeoutMs: settings.timeoutMs });
        last = { provider: out.provider, model: out.model, mode: out.mode, warnings: out.warnings ?? [] };
        return out;
      };
      return {
        async search(query, opts = {}) {
          const c = ctxFor(opts.sessionKey);
          const { proc, settings, scope } = await pool.processFor(c);
          const args = {
            query,
            max_results: posInt(opts.maxResults) ?? posInt(settings.maxResults) ?? 6,
            min_score: num(opts.minScore) ?? num(settings.minScore) ?? 0,
          };
          if (opts.lexicalOnly && proc.acceptsArgument("memory_search", "mode")) args.mode = "bm25";
          const out = await proc.callTool("memory_search", args, { timeoutMs: settings.timeoutMs, signal: opts.signal });
          last = { provider: out.provider, model: out.model, mode: out.mode, warnings: out.warnings ?? [] };
          opts.onDebug?.({ backend: "builtin", configuredMode: settings.mode, effectiveMode: out.mode });
          let hits = out.results ?? [];
          if (Array.isArray(opts.sources) && opts.sources.length) hits = hits.filter((h) => opts.sources.includes(h.source ?? "memory"));
          void scope;
          return hits.map((h) => ({ ...presentHit(h, false), citation: h.citation }));
        },
        async readFile({ relPath, from, lines }) {
          const c = ctxFor(undefined);
          const { proc, settings } = await pool.processFor(c);
          const args = { path: relPath };
          if (posInt(from)) args.from = posInt(from);
          args.lines = posInt(lines) ?? (/#L\d+/i.test(relPath) ? undefined : posInt(settings.defaultReadLines) ?? 120);
          if (args.lines === undefined) delete args.lines;
          try {
            return presentRead(await proc.callTool("memory_get", args, { timeoutMs: settings.timeoutMs }),
              { maxChars: posInt(settings.maxReadChars) ?? 12000 });
          } catch (err) {
            if (isZmemError(err) && err.userError) {
              const r = readFailure(relPath, err);
              if (r.status === "not_found") return r;
            }
            throw err;
          }
        },
        status() {
          const procs = pool.list().filter((p) => p.workspace === workspace);
          const info = (first ?? procs[0])?.info();
          const zs = counts?.status; // zmem status --json, asked as the manager was made (purpose "status")
          const emb = zs?.embeddings ?? {};
          const vectors = emb.vectors ?? 0;
          const semantic = last.mode ? last.mode === "hybrid" || last.mode === "vector" : Boolean(emb.provider && emb.provider !== "none");
          return {
            backend: "builtin",
            provider: last.provider ?? (emb.provider && emb.provider !== "none" ? emb.provider : "zmem"),
            model: last.model ?? emb.model ?? undefined,
            requestedProvider: "zmem",
            workspaceDir: workspace,
            ...(zs ? {
              files: zs.files,
              chunks: zs.chunks,
              dirty: zs.stale || zs.dirty.length > 0,
              dbPath: path.join(workspace, ".zmem", "index.sqlite"),
            } : {}),
            sources: zs?.sessions?.enabled ? ["memory", "sessions"] : ["memory"],
            fts: { enabled: true, available: true },
            vector: { enabled: semantic || vectors > 0, semanticAvailable: semantic, ...(zs ? { storeAvailable: zs.sqlite_vec, available: vectors > 0 } : {}) },
            ...(lastError || counts?.error ? { lastSyncError: lastError ?? counts.error } : {}),
            custom: { zmem: {
              ...info, processes: procs.map((p) => p.info()), mode: last.mode, warnings: last.warnings, purpose,
              ...(zs ? { head: zs.head, indexedCommit: zs.indexed_commit, stale: zs.stale, dirtyFiles: zs.dirty, vectors,
                vectorsBy: emb.vectors_by ?? null, pendingVectors: emb.pending ?? 0, vectorStore: zs.vector_store,
                readOnly: zs.read_only, watcher: zs.watcher } : {}),
            } },
          };
        },
        getCachedEmbeddingAvailability() {
          return last.mode ? { ok: last.mode !== "bm25", cached: true, ...(last.mode === "bm25" ? { error: last.warnings.join(" ") || "keyword recall only" } : {}) } : null;
        },
        async probeEmbeddingAvailability() {
          try {
            const out = await probe();
            return out.mode === "bm25"
              ? { ok: false, checked: true, error: (out.warnings ?? []).join(" ") || "zmem has no embedding provider: keyword (BM25) recall only" }
              : { ok: true, checked: true };
          } catch (err) {
            return { ok: false, checked: true, error: err.message };
          }
        },
        async probeVectorStoreAvailability() {
          return this.probeVectorAvailability();
        },
        async probeVectorAvailability() {
          try {
            const out = await probe();
            return out.mode === "hybrid" || out.mode === "vector";
          } catch {
            return false;
          }
        },
        async sync() { /* zmem catches up by itself before every answer (git hooks, watcher, freshness check) */ },
        async close() {
          if (purpose === "cli") await pool.stopWorkspace(workspace);
        },
      };
    }

    /** zmem status --json from the workspace's process (an unlisted tool of zmem mcp): {status} or {error}. */
    async function zmemStatus(proc, settings) {
      try {
        return { status: await proc.callTool("memory_status", {}, { timeoutMs: Math.max(settings.timeoutMs, 15000) }) };
      } catch (err) {
        logOnce(`status:${err.message}`, "warn", `zmem: status without counts: ${err.message.replace(/\n/g, " ")}`);
        return { error: err.message };
      }
    }

    const runtime = {
      async getMemorySearchManager({ cfg, agentId, purpose }) {
        const t0 = Date.now();
        let workspace;
        try {
          workspace = pool.workspaceFor({ cfg, agentId });
          const { proc, settings } = await pool.processFor({ cfg, agentId, scope: "private" });
          const counts = purpose === "status" ? await zmemStatus(proc, settings) : undefined;
          return { manager: createManager({ cfg, agentId, purpose, proc, workspace, counts }), debug: { backend: "builtin", purpose: purpose ?? "default", managerMs: Date.now() - t0 } };
        } catch (err) {
          if (purpose === "status" && workspace) return { manager: createManager({ cfg, agentId, purpose, workspace, lastError: err.message }) };
          return { manager: null, error: err.message };
        }
      },
      resolveMemoryBackendConfig() {
        return { backend: "builtin" };
      },
      async authorizeSearchHits({ agentId, requesterSessionKey, sandboxed, hits }) {
        return authorizeHits(hits ?? [], { agentId, sessionKey: requesterSessionKey, sandboxed });
      },
      async closeAllMemorySearchManagers() {
        await pool.stopAll();
      },
      async closeMemorySearchManager() {},
    };

    async function sessionContext({ agentId, agentSessionKey }) {
      const key = agentSessionKey ?? `agent:${agentId ?? "main"}`;
      if (contextCache.has(key)) return contextCache.get(key).lines;
      const settings = agentSettings(pool.pluginConfig(), agentId);
      if (settings.context === false) return [];
      // the session's own scope, for the process too: a group-scope zmem never returns private files, whatever it is asked
      const scope = scopeFor(settings, agentSessionKey);
      const { proc, workspace } = await pool.processFor({ agentId, sessionKey: agentSessionKey, scope });
      if (!proc.hasTool("memory_context")) {
        logOnce("no-context", "warn", "zmem: this zmem has no memory_context tool (zmem context); sessions start without memory context. Upgrade zmem.");
        return [];
      }
      const out = await proc.callTool("memory_context", { scope, budget: posInt(settings.contextBudget) ?? 6000 },
        { timeoutMs: settings.timeoutMs });
      const text = String(out?.text ?? "").trim();
      const lines = text ? ["## Memory context (zmem, as this session started)", ...text.split("\n"), ""] : [];
      if (contextCache.size >= CONTEXT_CACHE_MAX) contextCache.delete(contextCache.keys().next().value);
      contextCache.set(key, { lines, workspace });
      return lines;
    }

    const guidance = ({ availableTools, citationsMode: cm }) => {
      if (!availableTools?.has?.("memory_search") && !availableTools?.has?.("memory_get")) return [];
      const lines = ["## Memory (zmem)"];
      if (availableTools.has("memory_search")) {
        lines.push("Before answering anything about prior work, decisions, dates, people, preferences, or todos: run memory_search"
          + (availableTools.has("memory_get") ? "; use memory_get to read exactly the cited lines or the lines around them." : "."));
        lines.push("If memory_search fails, tell the user memory is unavailable and why (its error says); an empty result means nothing matched.");
      }
      if (availableTools.has("memory_append")) {
        lines.push("When something should outlive this conversation (a decision, a preference, a fact about a person or project, a commitment), "
          + "store it with memory_append: one self-contained statement, retain W/B/O/S for a typed fact, entities for whom it is about. It is committed to git.");
      }
      lines.push(cm === "off"
        ? "Citations are disabled: do not mention file paths or line numbers in replies unless the user explicitly asks."
        : "Citations: include Source: <path#line> when it helps the user verify memory snippets.");
      lines.push("");
      return lines;
    };

    const canPrepare = typeof api.registerMemoryPromptPreparation === "function";
    api.registerMemoryCapability({
      deterministicRecallToolName: "memory_search",
      promptBuilder(params) {
        const lines = guidance(params);
        if (!lines.length || canPrepare) return lines;
        // no async preparation in this OpenClaw: the context fetched for this session, once it is there
        const cached = contextCache.get(params.agentSessionKey ?? `agent:${params.agentId ?? "main"}`);
        if (!cached) sessionContext(params).catch((err) => logOnce(`ctx:${err.message}`, "warn", `zmem: memory context: ${err.message}`));
        return cached ? [...lines, ...cached.lines] : lines;
      },
      flushPlanResolver({ cfg, nowMs, contextWindowTokens } = {}) {
        const defaults = cfg?.agents?.defaults?.compaction?.memoryFlush;
        if (defaults?.enabled === false) return null;
        let softThresholdTokens = Number.isInteger(defaults?.softThresholdTokens) && defaults.softThresholdTokens >= 0
          ? defaults.softThresholdTokens : DEFAULT_FLUSH_SOFT_TOKENS;
        const reserveTokensFloor = DEFAULT_RESERVE_TOKENS_FLOOR;
        if (Number.isInteger(contextWindowTokens) && contextWindowTokens > reserveTokensFloor) {
          softThresholdTokens = Math.min(softThresholdTokens, Math.floor((contextWindowTokens - reserveTokensFloor) / 2));
        }
        const now = new Date(nowMs ?? Date.now());
        const tz = cfg?.agents?.defaults?.userTimezone;
        let day;
        try {
          day = new Intl.DateTimeFormat("en-CA", { timeZone: tz || undefined, year: "numeric", month: "2-digit", day: "2-digit" }).format(now);
        } catch {
          day = now.toISOString().slice(0, 10);
        }
        const relativePath = `memory/${day}.md`;
        const how = [
          "Store each durable memory with the memory_append tool, one self-contained statement per call: decisions, preferences,",
          "facts about people and projects, commitments, todos. Give retain its kind (W world fact, B something the user or you did,",
          "O opinion with confidence 0..1, S observation or summary) and entities naming whom or what it is about (@Name).",
          `memory_append writes ${relativePath} under ## Retain and commits it to git (zmem); do not edit memory files yourself,`,
          "and never rewrite MEMORY.md, SOUL.md or AGENTS.md.",
          `If memory_append is not available in this run (OpenClaw's flush run offers only read and write), append the same facts to`,
          `${relativePath} with the write tool (it appends), as typed Retain bullets under a \`## Retain\` heading, one per line,`,
          "e.g. `- W @Peter: Moved to Lisbon in March 2026.`; zmem commits the file when the write lands and indexes them as facts.",
        ].join(" ");
        return {
          softThresholdTokens,
          forceFlushTranscriptBytes: DEFAULT_FLUSH_FORCE_TRANSCRIPT_BYTES,
          reserveTokensFloor,
          model: typeof defaults?.model === "string" && defaults.model.trim() ? defaults.model.trim() : undefined,
          prompt: `Pre-compaction memory flush. ${how} If nothing is worth storing, reply with ${SILENT}.\nCurrent time: ${now.toISOString()}`,
          systemPrompt: "Pre-compaction memory flush turn. The session is near auto-compaction; capture durable memories now "
            + `through zmem's memory_append (typed Retain facts, entity-tagged, committed). ${how} `
            + `You may reply, but usually ${SILENT} is correct.`,
          relativePath,
        };
      },
      runtime,
    });

    if (canPrepare) {
      // Session-start context (zmem context: MEMORY.md in private sessions only, today's and yesterday's logs,
      // recent Retain facts, within a budget), fetched once per session so the system prompt stays stable.
      api.registerMemoryPromptPreparation(async (params) => {
        if (!params.availableTools?.has?.("memory_search") && !params.availableTools?.has?.("memory_get")) return [];
        try {
          return await sessionContext(params);
        } catch (err) {
          logOnce(`ctx:${err.message}`, "warn", `zmem: memory context: ${err.message}`);
          return [`(zmem could not load this session's memory context: ${err.message.replace(/\n/g, " ")})`, ""];
        }
      });
    }

    // Optional auto-recall: the best few memories for the user's message, before the turn. OpenClaw runs this
    // hook for a non-bundled plugin only with plugins.entries.zmem.hooks.allowConversationAccess = true.
    const startConfig = api.pluginConfig ?? {};
    const wantsAutoRecall = startConfig.autoRecall === true
      || Object.values(startConfig.agents ?? {}).some((a) => a && a.autoRecall === true);
    if (wantsAutoRecall) api.on?.("before_prompt_build", async (event, ctx) => {
      if (ctx?.trigger && ctx.trigger !== "user") return;
      const settings = agentSettings(pool.pluginConfig(), ctx?.agentId);
      if (!settings.autoRecall) return;
      const prompt = str(event?.currentUserMessage ?? event?.prompt);
      if (!prompt) return;
      try {
        const out = await runSearch({ cfg: api.runtime?.config?.current?.() ?? api.config, agentId: ctx?.agentId ?? "main",
          sessionKey: ctx?.sessionKey, sandboxed: false }, { query: prompt.slice(0, 500), maxResults: posInt(settings.autoRecallMaxResults) ?? 3 });
        if (!out.results.length) return;
        const lines = ["Relevant memories (zmem recall for this message; verify with memory_get before relying on details):"];
        for (const r of out.results) lines.push(`- ${r.snippet.replace(/\n\nSource: .*$/s, "").replace(/\s+/g, " ").slice(0, 400)} (Source: ${r.citation ?? `${r.path}#L${r.startLine}-L${r.endLine}`})`);
        return { prependContext: lines.join("\n") };
      } catch (err) {
        return { prependContext: `(zmem auto-recall failed: ${err.message.replace(/\n/g, " ")})` };
      }
    });

    // What an agent writes to a memory file with OpenClaw's own file tools is committed by zmem when the write lands.
    // This is how the pre-compaction flush's notes get committed: OpenClaw 2026.9 gives the flush run only `read`
    // and an append-only `write` of today's log (never a plugin's tool such as memory_append). Not a conversation
    // hook: no extra permission needed.
    api.on?.("after_tool_call", async (event, ctx) => {
      if (!FILE_WRITE_TOOLS.has(event?.toolName) || event.error) return;
      const file = str(event.params?.path) ?? str(event.params?.file_path);
      if (!file || !file.toLowerCase().endsWith(".md")) return;
      const agentId = ctx?.agentId ?? "main";
      if (agentSettings(pool.pluginConfig(), agentId).commitWrites === false) return;
      let rel;
      try {
        const ws = pool.workspaceFor({ agentId });
        rel = path.relative(ws, path.resolve(ws, file.replace(/^~(?=\/)/, os.homedir())));
        if (!rel || rel.startsWith("..") || path.isAbsolute(rel)) return; // not in the memory workspace
        if (!existsSync(path.join(ws, ".git"))) return; // not a zmem workspace yet: a write does not make it one
        const { proc, settings } = await pool.processFor({ agentId, scope: "private" });
        const out = await proc.callTool("memory_commit", { paths: [rel], by: `OpenClaw's ${event.toolName} tool (agent ${agentId})` },
          { timeoutMs: Math.max(settings.timeoutMs, 15000), retryOnExit: false });
        for (const key of [...contextCache.keys()]) if (contextCache.get(key)?.workspace === ws) contextCache.delete(key);
        if (out.committed) logger?.info?.(`zmem: committed ${out.paths.join(", ")} (${String(out.commit).slice(0, 12)}) after ${event.toolName}`);
      } catch (err) {
        // not a memory file (AGENTS.md, notes/*.md): not zmem's to commit
        if (isZmemError(err) && err.userError && /^not a (markdown )?memory file/i.test(err.message)) return;
        logOnce(`commit:${err.message}`, "warn", `zmem: could not commit ${rel ?? file} after ${event.toolName}: ${err.message.replace(/\n/g, " ")}`);
      }
    });

    // Start the default agent's zmem early (a live registration may start long-lived work), so the first call
    // after the gateway is ready finds it running. Only a workspace that
    // already is a git repository: `zmem init` waits for a real first use.
    // The default agent's (unless its prewarm is false) and every agent's whose own prewarm is true.
    const prewarm = (cfg) => {
      const config = cfg ?? api.runtime?.config?.current?.() ?? api.config;
      const plugin = pool.pluginConfig();
      const ids = new Set([defaultAgentId(config)]);
      for (const [id, own] of Object.entries(plugin?.agents ?? {})) if (own?.prewarm === true) ids.add(id);
      for (const agentId of ids) {
        let ws;
        try {
          if (agentSettings(plugin, agentId).prewarm === false) continue;
          ws = pool.workspaceFor({ cfg: config, agentId });
        } catch {
          continue;
        }
        if (!existsSync(path.join(ws, ".git"))) continue;
        // no warm-up query: zmem mcp warms its index and models in the background itself, and a query of ours
        // would only queue the agent's first call behind it (calls run one at a time)
        pool.processFor({ cfg: config, agentId, scope: "private" })
          .catch((err) => logOnce(`prewarm:${err.message}`, "warn", `zmem: could not start zmem for agent ${agentId}: ${err.message.replace(/\n/g, " ")}`));
      }
    };
    const args = process.argv.slice(2);
    const inGateway = args.includes("gateway") && (args.includes("run") || args.includes("start"));
    if (api.registrationMode === "full" && inGateway) setImmediate(() => prewarm(api.config)); // else: the service's start

    // The gateway service stops them all with the gateway.
    api.registerService?.({
      id: "zmem",
      async start(ctx) {
        prewarm(ctx?.config ?? api.config);
      },
      async stop() {
        await pool.stopAll();
      },
    });
  },
};
