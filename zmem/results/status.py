"""The workspace as it is: `zmem status` and `zmem doctor`."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Status:
    """The workspace and its index as they are (`zmem status`; nothing is caught up)."""
    workspace: str
    head: str | None
    indexed_commit: str | None
    indexed: bool
    stale: bool
    read_only: bool
    read_only_reason: str | None
    dirty: list[str]
    files: int
    chunks: int
    db_bytes: int
    driver: str
    sqlite_version: str
    vector_store: str
    sqlite_vec: bool
    shallow: bool
    hooks: dict
    file_warnings: list[str]
    embeddings: dict
    sessions: dict
    watcher: dict | None  # the process serving the workspace (fsmonitor.serving), None when none does
    auto_watch: dict  # {"on", "why"}: whether a reading command starts a watcher here when none serves

    def to_json(self) -> dict:
        return dict(self.__dict__)

@dataclass
class Check:
    """One line of `zmem doctor`: level ok, warn or fail."""
    level: str
    name: str
    detail: str
