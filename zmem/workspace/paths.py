"""Workspace-relative path arithmetic, pure and below config and workspace (both need it)."""
from __future__ import annotations

from pathlib import PurePosixPath


def normalize_rel(path: str) -> str | None:
    """A relative path in POSIX form without `.`/`..` escapes, or None if it escapes."""
    parts = []
    for part in PurePosixPath(path.replace("\\", "/")).parts:
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part == "/":
            return None
        else:
            parts.append(part)
    return "/".join(parts) if parts else None
