"""The command line: click commands (parse -> Memory -> render), rendering, completion scripts."""
