"""Pure functions over note text: Markdown blocks, chunks, Retain facts, dates, opinion sections."""
