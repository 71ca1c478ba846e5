"""Reading the index: recall, facts and entities, cited lines, session transcripts."""
