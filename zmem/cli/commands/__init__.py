"""The commands, a module per command group (as pre-commit keeps one per command); zmem.cli.app registers
them on the root group, which holds the error handler."""
