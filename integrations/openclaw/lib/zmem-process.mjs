// One long-lived `zmem -C <workspace> mcp [--scope group]` child per workspace and scope, spoken to over
// MCP's stdio transport (newline-delimited JSON-RPC 2.0). Started on first use (or by the gateway
// service at start-up), restarted on the next call after it dies, stopped with the gateway.
//
// Every failure becomes a ZmemError whose message is one line from zmem (or about starting it) and
// whose hint says what to do: a missing executable, a child that exits during start-up (its last
// stderr line is the reason), a call that outlives its deadline, a tool result with isError (zmem's
// own "message\nhint: ..." text). Nothing here returns an empty result instead of an error.
import { spawn } from "node:child_process";
import path from "node:path";
import { tracedRequest } from "./trace.mjs";

export const PROTOCOL_VERSION = "2025-06-18";
const STDERR_KEEP = 40; // lines of the child's stderr kept for error messages

// OpenClaw evaluates the plugin's modules more than once in one gateway process (the agent runtime loads
// its own instance) and the instances share one pool (index.mjs poolFor): an error thrown by another
// instance's ZmemError class is recognised by this brand, not by `instanceof`.
const BRAND = Symbol.for("zmem.openclaw.ZmemError");

/** A failure with zmem's message and a hint, as the tools report it. */
export class ZmemError extends Error {
  constructor(message, hint, { code = "ZMEM_ERROR", userError = false } = {}) {
    super(hint ? `${message}\nhint: ${hint}` : message);
    this[BRAND] = true;
    this.name = "ZmemError";
    this.zmemMessage = message;
    this.hint = hint;
    this.code = code;
    this.userError = userError; // zmem answered: the request itself was refused (a bad path, ...)
  }
}

/** Whether err is a ZmemError, of this module instance or another one's. */
export function isZmemError(err) {
  return Boolean(err && err[BRAND]);
}

/** Split zmem's tool error text ("message\nhint: ...") into its two parts. */
export function splitHint(text) {
  const s = String(text ?? "").trim();
  const at = s.search(/\n\s*hint: /);
  if (at < 0) return { message: s, hint: undefined };
  return { message: s.slice(0, at).trim(), hint: s.slice(at).replace(/^\s*hint: /, "").trim() };
}

/** argv of the command: a string (an executable, no shell) or an array [exe, ...args]. */
export function commandArgv(command) {
  if (Array.isArray(command) && command.length > 0 && command.every((s) => typeof s === "string" && s)) return [...command];
  if (typeof command === "string" && command.trim()) return [command.trim()];
  return ["zmem"];
}

const COMMAND_KEY = "plugins.entries.zmem.config.command";

/** Why the zmem command could not be started (spawn's ENOENT, EACCES, …), in one line and a hint. */
export function spawnFailure(argv, err) {
  const exe = argv[0];
  const words = exe.trim().split(/\s+/);
  const asArray = words.length > 1 ? JSON.stringify(words) : null;
  if (err?.code === "ENOENT") {
    if (asArray) {
      return new ZmemError(`cannot run zmem: ${COMMAND_KEY} "${exe}" is taken as one executable's name, and none has it`,
        `give an executable with arguments as an array: ${asArray}`, { code: "ZMEM_NOT_FOUND" });
    }
    if (path.isAbsolute(exe) || exe.includes("/")) {
      return new ZmemError(`cannot run zmem: ${exe} does not exist (${COMMAND_KEY})`,
        `point ${COMMAND_KEY} at zmem's executable (\`command -v zmem\` where it is installed), or install zmem with its mcp extra`,
        { code: "ZMEM_NOT_FOUND" });
    }
    return new ZmemError(`zmem is not installed where the gateway can run it: "${exe}" is not on the gateway's PATH`,
      `install zmem with its mcp extra (docs/openclaw.md in zmem's checkout) or set ${COMMAND_KEY} to its absolute path (e.g. ~/.local/bin/zmem)`,
      { code: "ZMEM_NOT_FOUND" });
  }
  if (err?.code === "EACCES" || err?.code === "EPERM") {
    return new ZmemError(`cannot run ${exe}: permission denied (not an executable file)`,
      `make it executable (chmod +x ${exe}), or point ${COMMAND_KEY} at zmem's executable`, { code: "ZMEM_NOT_FOUND" });
  }
  if (err?.code === "ENOTDIR") {
    return new ZmemError(`cannot run ${exe}: a part of the path is not a directory`, `point ${COMMAND_KEY} at zmem's executable`,
      { code: "ZMEM_NOT_FOUND" });
  }
  return new ZmemError(`cannot start ${exe}: ${String(err?.message ?? err).split("\n")[0]}`, `check ${COMMAND_KEY}`);
}

export class ZmemProcess {
  /**
   * @param {object} o
   * @param {string[]} o.argv       the zmem command (argv prefix)
   * @param {string} o.workspace    absolute workspace directory
   * @param {"private"|"group"} o.scope
   * @param {object} [o.logger]     api.logger
   * @param {number} [o.startTimeoutMs]
   * @param {object} [o.env]
   */
  constructor({ argv, workspace, scope = "private", logger, startTimeoutMs = 30000, env }) {
    this.argv = argv;
    this.workspace = workspace;
    this.scope = scope;
    this.logger = logger;
    this.startTimeoutMs = startTimeoutMs;
    this.env = env ?? process.env;
    this.child = null;
    this.ready = null; // Promise of the handshake
    this.pending = new Map();
    this.nextId = 1;
    this.stderr = [];
    this.buffer = "";
    this.serverInfo = null;
    this.tools = null; // name -> inputSchema
    this.starts = 0;
    this.startedAt = null;
    this.lastExit = null;
    this.stopping = false;
  }

  get label() {
    return `zmem ${this.scope === "group" ? "(group scope) " : ""}for ${this.workspace}`;
  }

  get pid() {
    return this.child?.pid;
  }

  get alive() {
    return Boolean(this.child && this.child.exitCode === null && this.child.signalCode === null);
  }

  /** Start the child if it is not running, and finish the MCP handshake. Idempotent. */
  start() {
    if (this.ready && this.alive) return this.ready;
    if (this.ready && this.child && !this.alive) this.ready = null;
    if (!this.ready) this.ready = this._start().catch((err) => {
      this.ready = null;
      throw err;
    });
    return this.ready;
  }

  async _start() {
    this.stopping = false;
    this.stderr = [];
    this.buffer = "";
    const [exe, ...pre] = this.argv;
    const args = [...pre, "-C", this.workspace, "mcp", ...(this.scope === "group" ? ["--scope", "group"] : [])];
    const t0 = Date.now();
    let child;
    try {
      child = spawn(exe, args, { cwd: this.workspace, env: this.env, stdio: ["pipe", "pipe", "pipe"], windowsHide: true });
    } catch (err) {
      throw this._spawnError(err);
    }
    this.child = child;
    this.starts += 1;
    const spawned = new Promise((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (err) => reject(this._spawnError(err)));
    });
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => this._onData(chunk));
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      for (const line of String(chunk).split("\n")) {
        if (!line.trim()) continue;
        this.stderr.push(line);
        if (this.stderr.length > STDERR_KEEP) this.stderr.shift();
        this.logger?.debug?.(`zmem[${child.pid}]: ${line}`);
      }
    });
    child.stdin.on("error", () => {}); // EPIPE after the child died: reported by the exit handler
    child.once("exit", (code, signal) => this._onExit(child, code, signal));
    this._hold(true);
    await spawned;
    const init = await this._request("initialize", {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: "openclaw-zmem", version: "0.1.0" },
    }, { timeoutMs: this.startTimeoutMs, what: "start-up" });
    this.serverInfo = init?.serverInfo ?? null;
    this._notify("notifications/initialized", {});
    const listed = await this._request("tools/list", {}, { timeoutMs: this.startTimeoutMs, what: "start-up" });
    this.tools = new Map((listed?.tools ?? []).map((t) => [t.name, t.inputSchema ?? {}]));
    this.startedAt = Date.now();
    this.logger?.debug?.(`zmem: started ${this.label} (pid ${child.pid}, ${Date.now() - t0} ms)`);
    return this;
  }

  _spawnError(err) {
    return spawnFailure(this.argv, err);
  }

  _onData(chunk) {
    this.buffer += chunk;
    let nl;
    while ((nl = this.buffer.indexOf("\n")) >= 0) {
      const line = this.buffer.slice(0, nl).trim();
      this.buffer = this.buffer.slice(nl + 1);
      if (!line) continue;
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        this.logger?.warn?.(`zmem: ignored a line that is not JSON-RPC on stdout: ${line.slice(0, 200)}`);
        continue;
      }
      if (msg.id !== undefined && msg.method) { // a request from the server: answer what MCP requires
        this._send(msg.method === "ping" ? { jsonrpc: "2.0", id: msg.id, result: {} }
          : { jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: `not supported by this client: ${msg.method}` } });
        continue;
      }
      this._heard = (this._heard ?? 0) + 1;
      if (msg.id === undefined) continue; // notifications (log messages, progress)
      const waiter = this.pending.get(msg.id);
      if (!waiter) continue;
      this.pending.delete(msg.id);
      waiter.settle(msg);
    }
  }

  _onExit(child, code, signal) {
    if (child !== this.child) return;
    this.lastExit = { code, signal, at: Date.now() };
    const why = this._exitReason(code, signal);
    if (!this.stopping) this.logger?.warn?.(`zmem: ${this.label} exited (${code ?? signal}); the next call restarts it. ${why.message.replace(/\n/g, " ")}`);
    for (const [, waiter] of this.pending) waiter.fail(why);
    this.pending.clear();
    this.child = null;
    this.ready = null;
  }

  _exitReason(code, signal) {
    const last = this.stderr.filter((l) => !/^\s*(Traceback|File "|\s)/.test(l));
    const tail = (last.at(-1) ?? this.stderr.at(-1) ?? "").replace(/^(zmem|error|Error): /, "");
    const hintLine = this.stderr.find((l) => /^\s*hint: /.test(l));
    if (this.stopping) return new ZmemError(`${this.label} was stopped`, "call the tool again", { code: "ZMEM_STOPPED" });
    const how = signal ? `was killed (${signal})` : `exited with status ${code}`;
    const message = tail ? `${this.label} ${how}: ${tail.replace(/^\s*hint: .*/, "").trim() || tail}` : `${this.label} ${how}`;
    const hint = hintLine ? hintLine.replace(/^\s*hint: /, "") :
      /No module named 'mcp'|needs the optional `?mcp`? package|pip install 'zmem\[mcp\]'/.test(this.stderr.join("\n"))
        ? "install zmem's mcp extra into the Python that runs it: <that python> -m pip install -e '<zmem checkout>[mcp]'"
        : `run \`${this.argv.join(" ")} -C ${this.workspace} doctor\` to see what is wrong; the gateway log has zmem's stderr`;
    return new ZmemError(message, hint, { code: "ZMEM_EXITED" });
  }

  /** Keep the node process alive while a call waits for zmem; an idle child does not (so a CLI command
   *  that used the plugin can exit, and zmem exits when its stdin closes). */
  _hold(on) {
    const c = this.child;
    if (!c) return;
    for (const h of [c, c.stdout, c.stderr, c.stdin]) {
      try { on ? h?.ref?.() : h?.unref?.(); } catch { /* not a handle */ }
    }
  }

  _send(obj) {
    if (!this.child?.stdin?.writable) return false;
    this.child.stdin.write(JSON.stringify(obj) + "\n");
    return true;
  }

  _notify(method, params) {
    this._send({ jsonrpc: "2.0", method, params });
  }

  _request(method, params, { timeoutMs = 10000, signal, what } = {}) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      let timer;
      let answered = null; // ZMEM_TRACE
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener?.("abort", onAbort);
        if (this.pending.size === 0) this._hold(false);
      };
      const onAbort = () => {
        this.pending.delete(id);
        done();
        this._notify("notifications/cancelled", { requestId: id, reason: "aborted by OpenClaw" });
        const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason ?? "aborted");
        reject(new ZmemError(`${what ?? method} was cancelled by OpenClaw before zmem answered (${reason})`,
          "retry; if zmem is slow on this machine, raise plugins.entries.zmem.config.timeoutMs and OpenClaw's tool time limit",
          { code: "ZMEM_ABORTED" }));
      };
      this._hold(true);
      const deadline = performance.now() + timeoutMs;
      this.pending.set(id, {
        settle: (msg) => {
          answered?.();
          // an answer read after the deadline is late even when the timer has not run yet (a busy
          // event loop reads the pipe before its timers): the limit holds either way
          if (performance.now() > deadline) return expire(true);
          done();
          if (msg.error) reject(new ZmemError(`zmem ${method} failed: ${msg.error.message ?? JSON.stringify(msg.error)}`,
            "this is a bug in zmem or the plugin; the gateway log has zmem's stderr"));
          else resolve(msg.result);
        },
        fail: (err) => {
          done();
          reject(err);
        },
      });
      if (signal?.aborted) return onAbort();
      signal?.addEventListener?.("abort", onAbort, { once: true });
      const expire = (answeredLate = false) => {
        this.pending.delete(id);
        done();
        if (!answeredLate) {  // zmem is still at it: cancel it, and watch for a hang
          this._notify("notifications/cancelled", { requestId: id, reason: "timed out" });
          this._overdue(timeoutMs);
        }
        const limit = timeoutMs < 1000 ? `${timeoutMs} ms` : `${(timeoutMs / 1000).toFixed(1)} s`;
        reject(new ZmemError(`zmem did not answer ${what ?? method} within ${limit} (${this.label})`,
          "try again in a moment; if it keeps happening, raise plugins.entries.zmem.config.timeoutMs or run `zmem doctor` in the workspace"
          + " (a first call may build the index or load an embedding model)",
          { code: "ZMEM_TIMEOUT" }));
      };
      timer = setTimeout(() => expire(), timeoutMs);
      timer.unref?.();
      answered = tracedRequest(id, this.pid, method); // (its time taken before the write: zmem may read it at once)
      if (!this._send({ jsonrpc: "2.0", id, method, params })) {
        this.pending.delete(id);
        done();
        reject(this._exitReason(this.lastExit?.code ?? null, this.lastExit?.signal ?? null));
      }
    });
  }

  /** A call outlived its deadline. Calls run one at a time in zmem, so a stuck one holds up the rest:
   *  if the child says nothing at all (no answer, late or not) for hangMs more, restart it. A slow call
   *  (a first index build, a cold model) answers late and is left alone. */
  _overdue(timeoutMs) {
    if (this._hangTimer) return;
    const child = this.child;
    const heard = this._heard = 0;
    const hangMs = Math.max(60000, 4 * timeoutMs);
    this._hangTimer = setTimeout(() => {
      this._hangTimer = null;
      if (this._heard === heard && child && child === this.child) {
        this.logger?.warn?.(`zmem: ${this.label} has answered nothing for ${Math.round(hangMs / 1000)} s; restarting it`);
        this.stop("SIGKILL");
      }
    }, hangMs);
    this._hangTimer.unref?.();
  }

  /**
   * Call an MCP tool; resolves to the parsed JSON payload. A tool error (isError) rejects with a
   * ZmemError(userError=true) carrying zmem's message and hint.
   */
  async callTool(name, args, { timeoutMs = 10000, signal, retryOnExit = true } = {}) {
    await this.start();
    let result;
    try {
      result = await this._request("tools/call", { name, arguments: args }, { timeoutMs, signal, what: name });
    } catch (err) {
      // the child died under the call (killed, crashed): a read is asked again of a new one, once
      if (!(retryOnExit && isZmemError(err) && err.code === "ZMEM_EXITED")) throw err;
      this.logger?.warn?.(`zmem: ${name} lost its zmem process (${err.zmemMessage}); asking a new one`);
      await this.start();
      result = await this._request("tools/call", { name, arguments: args }, { timeoutMs, signal, what: name });
    }
    const text = (result?.content ?? []).filter((c) => c?.type === "text").map((c) => c.text).join("\n");
    if (result?.isError) {
      const { message, hint } = splitHint(text);
      throw new ZmemError(message || `${name} failed`, hint, { code: "ZMEM_TOOL_ERROR", userError: true });
    }
    if (result?.structuredContent && typeof result.structuredContent === "object") return result.structuredContent;
    try {
      return JSON.parse(text);
    } catch {
      throw new ZmemError(`zmem's ${name} answered something that is not JSON: ${text.slice(0, 200)}`,
        "this is a bug in zmem or the plugin");
    }
  }

  hasTool(name) {
    return this.tools?.has(name) ?? false;
  }

  acceptsArgument(tool, arg) {
    return Boolean(this.tools?.get(tool)?.properties?.[arg]);
  }

  /** Stop the child: close stdin (zmem mcp exits on EOF), then signal it if it lingers. */
  stop(signal = "SIGTERM") {
    const child = this.child;
    if (!child) return Promise.resolve();
    this.stopping = true;
    this._hold(true); // wait for its exit
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        try { child.kill("SIGKILL"); } catch { /* gone */ }
        resolve();
      }, 3000);
      t.unref?.();
      child.once("exit", () => {
        clearTimeout(t);
        resolve();
      });
      if (signal === "SIGKILL") {
        try { child.kill("SIGKILL"); } catch { /* gone */ }
        return;
      }
      try { child.stdin.end(); } catch { /* gone */ }
      const term = setTimeout(() => { try { child.kill(signal); } catch { /* gone */ } }, 1000);
      term.unref?.();
    });
  }

  info() {
    return {
      pid: this.pid ?? null,
      alive: this.alive,
      scope: this.scope,
      workspace: this.workspace,
      version: this.serverInfo?.version ?? null,
      starts: this.starts,
      startedAt: this.startedAt,
      lastExit: this.lastExit,
    };
  }
}
