"""The SQLite index: the driver, the schema's migration steps, FTS5 columns, vectors."""
