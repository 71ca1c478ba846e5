"""Errors a user can cause, with a hint and an exit code (no click in here)."""
from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    ERROR = 1        # expected error: message + hint
    USAGE = 2        # bad command line (click's own code)
    BUG = 3          # unexpected exception inside zmem
    INTERRUPTED = 130


class ZmemError(Exception):
    """An error the user can act on. The CLI prints `zmem: <message>` and `hint: <hint>`."""

    exit_code = ExitCode.ERROR

    def __init__(self, message: str, hint: str = "", exit_code: int | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code


class WorkspaceError(ZmemError):
    """No workspace, bare repository, path outside the memory sources."""


class IndexError_(ZmemError):
    """Index problems: newer schema, corrupt file, lock timeout."""


class ConfigError(ZmemError):
    """zmem.toml or user config is invalid."""
