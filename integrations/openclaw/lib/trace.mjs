// ZMEM_TRACE=<file>: where the time of each tool call goes, one JSON line per call, beside the lines
// zmem mcp writes to the same file for each request (bench/bench_openclaw.py reads both). Off unless
// the variable is set in the gateway's environment; then each call costs one append.
import { AsyncLocalStorage } from "node:async_hooks";
import { appendFileSync } from "node:fs";

const FILE = process.env.ZMEM_TRACE;
// one store for every instance of this module in the gateway (the pool is shared across them: index.mjs),
// so a call another instance's zmem process makes is noted in the tool call that asked for it
const current = FILE ? (globalThis[Symbol.for("zmem.openclaw.trace")] ??= new AsyncLocalStorage()) : null;
// CLOCK_MONOTONIC in milliseconds: the clock zmem mcp (Python's time.monotonic) and the benchmark read too
const now = () => Number(process.hrtime.bigint()) / 1e6;

/** Run one tool call (run: an async function), noting when it entered and left the plugin. */
export function traced(tool, run) {
  if (!current) return run();
  const record = { src: "plugin", tool, enter: now(), calls: [] };
  return current.run(record, async () => {
    try {
      return await run();
    } finally {
      record.exit = now();
      try { appendFileSync(FILE, JSON.stringify(record) + "\n"); } catch { /* a diagnostic only */ }
    }
  });
}

/** A request to zmem mcp inside a traced tool call: returns done(), to call when its answer is parsed. */
export function tracedRequest(id, pid, method) {
  const record = current?.getStore();
  if (!record) return null;
  const call = { id, pid, method, sent: now() };
  record.calls.push(call);
  return () => { call.answered = now(); };
}
