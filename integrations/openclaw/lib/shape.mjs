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

export const CUT = "…";

/**
 * zmem get's lines (zmem mcp memory_get: {path, from, lines, end_line, total_lines, text, citation}) as
 * OpenClaw's MemoryReadResult, never more than maxChars characters. The text is exactly zmem's lines,
 * cut at a line boundary when it is longer than maxChars; truncated/nextFrom say where the rest starts.
 * A first line longer than maxChars on its own is cut inside, as zmem cuts a snippet: its first
 * maxChars - 1 characters and "…"; nextFrom is that line again and nextOffset the character where the
 * rest of it starts (pass both back as from and offset). offset: the characters of the first line
 * already read (the excerpt then starts with "…").
 */
export function presentRead(got, { maxChars = 12000, offset = 0 } = {}) {
  const lines = String(got.text ?? "").split("\n");
  const from = got.from ?? 1;
  const lead = offset > 0 ? CUT : "";
  if (offset > 0) lines[0] = lines[0].slice(offset);
  if (lead.length + lines[0].length > maxChars) { // one line longer than the whole budget: cut inside it
    const piece = lines[0].slice(0, Math.max(1, maxChars - lead.length - CUT.length));
    return {
      status: "ok",
      text: lead + piece + CUT,
      path: got.path,
      from,
      lines: 1,
      citation: `${got.path}#L${from}-L${from}`,
      totalLines: got.total_lines,
      truncated: true,
      nextFrom: from,
      nextOffset: offset + piece.length,
    };
  }
  lines[0] = lead + lines[0];
  let n = 0;
  let chars = 0;
  for (const line of lines) {
    const next = chars + line.length + (n > 0 ? 1 : 0);
    if (n > 0 && next > maxChars) break;
    n += 1;
    chars = next;
  }
  const cutByChars = n < lines.length;
  const lastLine = cutByChars ? from + n - 1 : (got.end_line ?? from + lines.length - 1);
  const moreInFile = (got.total_lines ?? lastLine) > lastLine;
  const out = {
    status: "ok",
    text: lines.slice(0, n).join("\n"),
    path: got.path,
    from,
    lines: cutByChars ? n : (got.lines ?? lines.length),
    citation: cutByChars || offset > 0 ? `${got.path}#L${from}-L${lastLine}` : got.citation,
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
    code: /not a memory file|not a Markdown memory file|escapes the workspace|is outside the workspace|symlink|not a text file|ignored by git|private and this is a group scope/.test(msg)
      ? "MEMORY_PATH_NOT_ALLOWED" : (err?.code ?? "MEMORY_READ_FAILED"),
    error: err?.message ?? msg,
  };
}
