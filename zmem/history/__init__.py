"""Git history as memory: as-of views, blame, timelines and belief diffs."""
