// A memory-slot plugin whose tools do nothing (a test fixture, not shipped): what the gateway itself
// costs for a tool call through POST /tools/invoke, registered the way integrations/openclaw/ registers
// zmem's tools (a factory per tool, the same result shape). bench/bench_openclaw.py runs it as the
// memory slot of a second gateway beside zmem's: memory_search and memory_get take the path of
// OpenClaw's core tool names, noop_probe the path of any other plugin tool.
const jsonResult = (payload) => ({ content: [{ type: "text", text: JSON.stringify(payload, null, 2) }], details: payload });
const PARAMS = { type: "object", properties: {}, additionalProperties: true };

function tool(name) {
  return () => ({
    name,
    label: name,
    description: `No-op ${name} (benchmark fixture).`,
    parameters: PARAMS,
    async execute() {
      return jsonResult(name === "memory_get" ? { status: "ok", text: "", path: "MEMORY.md", from: 1, lines: 0 }
        : { results: [], provider: "noop", model: null, citations: "auto", mode: "none" });
    },
  });
}

export default {
  id: "noop-memory",
  name: "No-op memory (zmem's benchmark fixture)",
  description: "A memory slot whose tools do nothing.",
  kind: "memory",
  register(api) {
    for (const name of ["memory_search", "memory_get", "noop_probe"]) api.registerTool(tool(name), { names: [name] });
    api.registerMemoryCapability({
      runtime: {
        async getMemorySearchManager() {
          return { manager: null, error: "the no-op memory has no search manager" };
        },
        resolveMemoryBackendConfig: () => ({ backend: "builtin" }),
      },
    });
  },
};
