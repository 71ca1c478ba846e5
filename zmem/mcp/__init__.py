"""`zmem mcp`: the Model Context Protocol server."""
