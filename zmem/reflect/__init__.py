"""`zmem reflect`: facts -> entity pages, opinions and proposals, as one commit."""
