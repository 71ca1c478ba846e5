// zmem's answers in OpenClaw's shapes: memory_search results with the `Source: path#Lx-Ly` footer as
// memory.citations says, memory_get's ok | not_found | error contract with a bounded excerpt and
// nextFrom. Pure functions.

/** memory.citations: "on" | "off" | "auto" (default auto: citations in direct chats only). */
export function citationsMode(cfg) {
  const mode = cfg?.memory?.citations;
  return mode === "on" || mode === "off" || mode === "auto" ? mode : "auto";
}

export function includeCitations(mode, chatScope) {
  if (mode === "on") return true;
  if (mode === "off") return false;
  return chatScope !== "group";
}

/** One zmem hit (zmem mcp's memory_search shape) as an OpenClaw MemorySearchResult. */
export function presentHit(hit, include) {
  const out = {
    path: hit.path,
    startLine: hit.startLine,
    endLine: hit.endLine,
    score: hit.score,
    snippet: hit.snippet,
    source: hit.source ?? "memory",
    corpus: hit.source ?? "memory",
  };
  for (const k of ["day", "heading", "fact"]) if (hit[k] !== undefined) out[k] = hit[k];
  if (include) {
    out.citation = hit.citation ?? `${hit.path}#L${hit.startLine}-L${hit.endLine}`;
    out.snippet = `${String(hit.snippet ?? "").trimEnd()}\n\nSource: ${out.citation}`;
  }
  return out;
}

/** The tool result OpenClaw's agent loop expects: text for the model, details for programs. */
export function jsonResult(payload) {
  return { content: [{ type: "text", text: JSON.stringify(payload, null, 2) }], details: payload };
}

/**
 * zmem get's lines (zmem mcp memory_get: {path, from, lines, end_line, total_lines, text, citation}) as
 * OpenClaw's MemoryReadResult. The text is exactly zmem's lines, cut at a line boundary when it is
 * longer than maxChars; truncated/nextFrom say where the rest starts.
 */
export function presentRead(got, { maxChars = 12000 } = {}) {
  const lines = String(got.text ?? "").split("\n");
  let n = 0;
  let chars = 0;
  for (const line of lines) {
    const next = chars + line.length + (n > 0 ? 1 : 0);
    if (n > 0 && next > maxChars) break;
    n += 1;
    chars = next;
  }
  const from = got.from ?? 1;
  const cutByChars = n < lines.length;
  const lastLine = cutByChars ? from + n - 1 : (got.end_line ?? from + lines.length - 1);
  const moreInFile = (got.total_lines ?? lastLine) > lastLine;
  const out = {
    status: "ok",
    text: cutByChars ? lines.slice(0, n).join("\n") : String(got.text ?? ""),
    path: got.path,
    from,
    lines: cutByChars ? n : (got.lines ?? lines.length),
    citation: cutByChars ? `${got.path}#L${from}-L${lastLine}` : got.citation,
    totalLines: got.total_lines,
  };
  if (cutByChars || moreInFile) {
    out.truncated = true;
    out.nextFrom = lastLine + 1;
  }
  return out;
}

/** A zmem refusal of a read as OpenClaw's not_found or error status (never an exception). */
export function readFailure(relPath, err) {
  const msg = err?.zmemMessage ?? err?.message ?? String(err);
  if (/^no such memory file\b|does not exist at [0-9a-f]+/.test(msg)) return { status: "not_found", text: "", path: relPath };
  return {
    status: "error",
    text: "",
    path: relPath,
    code: /not a memory file|not a Markdown memory file|escapes the workspace|symlink|not a text file|ignored by git|private and this is a group scope/.test(msg)
      ? "MEMORY_PATH_NOT_ALLOWED" : (err?.code ?? "MEMORY_READ_FAILED"),
    error: err?.message ?? msg,
  };
}
