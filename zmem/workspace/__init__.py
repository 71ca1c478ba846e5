"""The workspace: finding it, its memory sources and paths, its settings and trust, file signatures."""
