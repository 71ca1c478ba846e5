"""The [sessions] settings, apart from zmem.query.sessions: every recall and `zmem index` reads them, and
importing the transcript code (its redaction patterns) is wasted when sessions are off."""
from __future__ import annotations

import os
from dataclasses import dataclass

from zmem.errors import ConfigError

DELTA_BYTES = 100_000
DELTA_MESSAGES = 50


@dataclass(frozen=True)
class SessionSettings:
    enabled: bool = False
    dirs: tuple[str, ...] = ()
    delta_bytes: int = DELTA_BYTES
    delta_messages: int = DELTA_MESSAGES

    @staticmethod
    def from_table(table: dict, where: str, origins: dict | None = None) -> SessionSettings:
        """origins: key -> the file that set it (named in the error), else `where`."""
        def bad(key, what, *keys):
            src = next((origins[k] for k in (key, *keys) if origins and k in origins), where)
            return ConfigError(f"{src}: `sessions.{key}` must be {what}", hint="see docs/sessions.md, Settings")
        enabled = table.get("enabled", False)
        if not isinstance(enabled, bool):
            raise bad("enabled", "true or false")
        d = table.get("dir", table.get("dirs", ()))
        dirs = (d,) if isinstance(d, str) else d
        if not isinstance(dirs, (list, tuple)) or not all(isinstance(x, str) for x in dirs):
            raise bad("dir", "a path or a list of paths (globs allowed)", "dirs")
        out = {}
        for key in ("delta_bytes", "delta_messages"):
            v = table.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise bad(key, "a whole number ≥ 0")
            if v is not None:
                out[key] = v
        if enabled and not dirs:
            raise bad("dir", 'set when enabled (e.g. dir = "~/.openclaw/agents/*/sessions")', "dirs", "enabled")
        return SessionSettings(enabled, tuple(dirs), **out)


def settings_for(ws) -> SessionSettings:
    """The [sessions] settings, with relative `dir` entries (in zmem.toml or the user config alike)
    resolved against the workspace root, never the current directory."""
    origins = {k[len("sessions."):]: v for k, v in ws.config.origins.items() if k.startswith("sessions.")}
    settings = SessionSettings.from_table(ws.config.sessions, "the [sessions] settings", origins)
    dirs = tuple(d if os.path.isabs(os.path.expanduser(d)) else str(ws.root / d) for d in settings.dirs)
    return SessionSettings(settings.enabled, dirs, settings.delta_bytes, settings.delta_messages)
