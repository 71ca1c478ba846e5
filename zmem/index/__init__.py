"""Keeping the derived index equal to the memory files: catch-up, history rows, embedding, writes, watch, sync."""
