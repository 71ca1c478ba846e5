// Which zmem process serves a call: one per (workspace, scope), kept for the gateway's lifetime.
// Resolves an agent's workspace (plugin config overrides, else OpenClaw's own workspace for the agent),
// makes a workspace that is not a git repository yet one with `zmem init` on first use (it keeps every
// file and installs zmem's hooks) and says so once: in the gateway log and in the next tool result.
import { execFile } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ZmemError, ZmemProcess, commandArgv, spawnFailure } from "./zmem-process.mjs";

export const DEFAULTS = Object.freeze({
  command: "zmem",
  maxResults: 6,
  minScore: 0,
  mode: "auto",
  scope: "auto",
  autoRecall: false,
  autoRecallMaxResults: 3,
  context: true,
  contextBudget: 6000,
  timeoutMs: 10000,
  startTimeoutMs: 30000,
  maxReadChars: 12000,
  defaultReadLines: 120,
  initWorkspace: true,
  commitWrites: true,
  prewarm: true,
});

/** Where `pipx` / `pip install --user` / Homebrew put zmem: a gateway started as a service often has a
 *  shorter PATH than the shell zmem was installed from. */
const USUAL_PLACES = [".local/bin/zmem", "/usr/local/bin/zmem", "/opt/homebrew/bin/zmem"];
const announced = new Set();

function onPath(name, envPath) {
  for (const dir of String(envPath ?? "").split(path.delimiter)) {
    if (!dir) continue;
    try {
      if (statSync(path.join(dir, name)).isFile()) return true;
    } catch { /* not here */ }
  }
  return false;
}

/** The zmem command: as configured; the default "zmem" when it is not on PATH, from where installers put it. */
export function resolveCommand(command, { env = process.env, logger } = {}) {
  const argv = commandArgv(command);
  if (command !== undefined && command !== DEFAULTS.command) return argv;
  if (onPath(argv[0], env.PATH)) return argv;
  for (const place of USUAL_PLACES) {
    const abs = path.isAbsolute(place) ? place : path.join(os.homedir(), place);
    if (existsSync(abs)) {
      if (!announced.has(abs)) announced.add(abs) && logger?.info?.(`zmem: "zmem" is not on the gateway's PATH; using ${abs} (set plugins.entries.zmem.config.command to choose)`);
      return [abs];
    }
  }
  return argv; // spawning it fails with the message and hint
}

export function expandHome(p) {
  if (typeof p !== "string" || !p.trim()) return undefined;
  const s = p.trim();
  if (s === "~") return os.homedir();
  if (s.startsWith("~/")) return path.join(os.homedir(), s.slice(2));
  return path.resolve(s);
}

/** The plugin's config for one agent: defaults < top-level keys < agents.<id> overrides. */
export function agentSettings(pluginConfig, agentId) {
  const top = pluginConfig && typeof pluginConfig === "object" ? pluginConfig : {};
  const { agents, ...rest } = top;
  const own = (agents && typeof agents === "object" && agentId && agents[agentId]) || {};
  return { ...DEFAULTS, ...rest, ...own };
}

/**
 * "private" only for the owner's main session, "group" for every other session.
 *
 * OpenClaw loads MEMORY.md only in the main, private session: sub-agent (`agent:<id>:subagent:…`),
 * cron (`agent:<id>:cron:…`), group and channel sessions omit it. The main session's key is
 * `agent:<id>:main` (fixed; session.mainKey is ignored), `main` for the agent's own, or `global`
 * when session.scope is global; a call without a session key is the gateway's own (CLI, status).
 * Everything else — another person's DM under session.dmScope per-peer (`…:direct:<peer>`), a thread,
 * a dashboard or hook session — cannot be told to be the owner's, so it gets the group scope,
 * which never returns MEMORY.md or zmem.toml's `[scopes] private` paths.
 */
export function chatScope(sessionKey) {
  if (typeof sessionKey !== "string" || !sessionKey.trim()) return "private";
  const key = sessionKey.trim().toLowerCase();
  if (key === "main" || key === "global") return "private";
  const parts = key.split(":");
  return parts.length === 3 && parts[0] === "agent" && parts[1] && parts[2] === "main" ? "private" : "group";
}

export function scopeFor(settings, sessionKey) {
  if (settings.scope === "private" || settings.scope === "group") return settings.scope;
  return chatScope(sessionKey);
}

/** OpenClaw's default agent: agents.entries/agents.list with `default: true`, else the first, else "main". */
export function defaultAgentId(cfg) {
  const agents = cfg?.agents ?? {};
  let list = [];
  if (Array.isArray(agents.list)) list = agents.list.filter((a) => a && typeof a.id === "string");
  else if (agents.entries && typeof agents.entries === "object") {
    list = Object.entries(agents.entries).map(([id, a]) => ({ ...(a && typeof a === "object" ? a : {}), id }));
  }
  const chosen = list.find((a) => a.default === true) ?? list[0];
  return String(chosen?.id || "main").trim().toLowerCase() || "main";
}

export class Pool {
  constructor({ api, logger }) {
    this.api = api;
    this.logger = logger;
    this.procs = new Map(); // `${scope}\0${workspace}` -> ZmemProcess
    this.inits = new Map(); // workspace -> Promise (zmem init in flight or done)
    this.notices = new Map(); // workspace -> notice not yet shown in a tool result
  }

  pluginConfig() {
    let live;
    try {
      live = this.api.runtime?.config?.current?.(); // the live config: edits apply without a restart
    } catch { /* outside a gateway: the config register() got */ }
    const fromLive = live?.plugins?.entries?.[this.api.id ?? "zmem"]?.config;
    return fromLive ?? this.api.pluginConfig ?? {};
  }

  settings(agentId) {
    return agentSettings(this.pluginConfig(), agentId);
  }

  /** The workspace directory of an agent: plugin override, else OpenClaw's workspace for it. */
  workspaceFor({ cfg, agentId, workspaceDir } = {}) {
    const s = this.settings(agentId);
    const configured = expandHome(s.workspace);
    if (configured) return configured;
    const config = cfg ?? this.api.runtime?.config?.current?.() ?? this.api.config;
    let resolved;
    try {
      resolved = this.api.runtime?.agent?.resolveAgentWorkspaceDir?.(config, agentId ?? "main");
    } catch { /* fall through */ }
    resolved = resolved ?? workspaceDir ?? config?.agents?.defaults?.workspace;
    const ws = expandHome(resolved);
    if (!ws) {
      throw new ZmemError(`no workspace for agent ${agentId ?? "main"}`,
        "set agents.defaults.workspace in OpenClaw's config, or plugins.entries.zmem.config.workspace");
    }
    return ws;
  }

  /** The process for (agent, session) — workspace made a git repository first if it is not one. */
  async processFor({ cfg, agentId, sessionKey, workspaceDir, scope } = {}) {
    const s = this.settings(agentId);
    const ws = this.workspaceFor({ cfg, agentId, workspaceDir });
    const sc = scope ?? scopeFor(s, sessionKey);
    await this.ensureRepository(ws, s);
    const argv = resolveCommand(s.command, { logger: this.logger });
    const key = `${sc}\0${ws}\0${argv.join("\0")}`; // agents that share a workspace and a command share its process
    let proc = this.procs.get(key);
    if (!proc) {
      proc = new ZmemProcess({ argv, workspace: ws, scope: sc, logger: this.logger,
        startTimeoutMs: s.startTimeoutMs });
      this.procs.set(key, proc);
    }
    await proc.start();
    return { proc, settings: s, workspace: ws, scope: sc };
  }

  /** `zmem init` for a workspace directory that is not a git repository yet (once per workspace). */
  ensureRepository(ws, s) {
    let st; // checked on every call: a workspace removed or moved since is named as such, not as a spawn failure
    try {
      st = statSync(ws);
    } catch {
      return Promise.reject(new ZmemError(`workspace directory does not exist: ${ws}`,
        "create it, or point agents.defaults.workspace (or plugins.entries.zmem.config.workspace) at your memory"));
    }
    if (!st.isDirectory()) {
      return Promise.reject(new ZmemError(`workspace is not a directory: ${ws}`,
        "point agents.defaults.workspace (or plugins.entries.zmem.config.workspace) at a directory"));
    }
    if (this.inits.has(ws)) return this.inits.get(ws);
    if (existsSync(path.join(ws, ".git"))) {
      const done = Promise.resolve(false);
      this.inits.set(ws, done);
      return done;
    }
    if (s.initWorkspace === false) {
      // refused before any zmem runs there: `zmem -C <dir>` would leave .zmem/ in a folder we may not touch
      return Promise.reject(new ZmemError(`${ws} is not a zmem workspace (not a git repository) and initWorkspace is false`,
        `run \`zmem init ${ws}\` yourself, or set plugins.entries.zmem.config.initWorkspace to true`,
        { code: "ZMEM_NOT_A_WORKSPACE" }));
    }
    const argv = resolveCommand(s.command);
    const [exe, ...pre] = argv;
    const running = new Promise((resolve, reject) => {
      execFile(exe, [...pre, "init", ws], { cwd: ws, timeout: 120000, maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
        if (err) {
          if (typeof err.code === "string" && /^(ENOENT|EACCES|EPERM|ENOTDIR)$/.test(err.code)) {
            reject(spawnFailure(argv, err));
            return;
          }
          const { message, hint } = lastError(stderr, err);
          reject(new ZmemError(`zmem init ${ws} failed: ${message}`, hint ?? "run it yourself to see why"));
          return;
        }
        const notice = `${ws} was not a git repository: the zmem plugin ran \`zmem init\` there once: git init; `
          + "zmem's layout (zmem.toml, bank/, .gitignore, .gitattributes, and MEMORY.md and memory/ where missing) "
          + "added; it and the memory files that were there (MEMORY.md, memory/, bank/) committed, so their history "
          + "starts now (memory_blame, memory_recall_as_of); other files kept as they are, not committed; zmem's "
          + "hooks installed; the index built. memory_append commits what it writes from now on.";
        this.logger?.info?.(`zmem: ${notice}`);
        this.notices.set(ws, notice);
        resolve(true);
      });
    });
    const guarded = running.catch((err) => {
      this.inits.delete(ws); // try again next time
      throw err;
    });
    this.inits.set(ws, guarded);
    return guarded;
  }

  /** The once-only notice for a workspace (zmem init ran), taken by the first tool result that shows it. */
  takeNotice(ws) {
    const n = this.notices.get(ws);
    if (n) this.notices.delete(ws);
    return n;
  }

  list() {
    return [...this.procs.values()];
  }

  async stopAll() {
    const procs = this.list();
    this.procs.clear();
    await Promise.allSettled(procs.map((p) => p.stop()));
  }

  async stopWorkspace(ws) {
    const hits = [...this.procs.entries()].filter(([, p]) => p.workspace === ws);
    for (const [k] of hits) this.procs.delete(k);
    await Promise.allSettled(hits.map(([, p]) => p.stop()));
  }
}

function lastError(stderr, err) {
  const lines = String(stderr ?? "").split("\n").map((l) => l.trim()).filter(Boolean);
  const hintLine = lines.find((l) => l.startsWith("hint: "));
  const msg = lines.filter((l) => !l.startsWith("hint: ")).at(-1) ?? err?.message ?? "failed";
  return { message: msg.replace(/^(zmem|error|Error): /, ""), hint: hintLine?.slice(6) };
}
