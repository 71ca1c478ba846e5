"""Settings: built-in defaults < user config (~/.config/zmem/config.toml) < the workspace's zmem.toml."""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from zmem.errors import ConfigError

DEFAULT_TOML = """\
# zmem settings for this workspace. Committed with the notes; keep secrets out of it.
# Every key is optional; the values below are the defaults.

# Extra Markdown files or directories (relative to this workspace) to index besides
# MEMORY.md, memory.md, memory/**/*.md and bank/**/*.md.
# extra_paths = ["notes", "projects/README.md"]

[index]
# Target chunk size and overlap, in estimated tokens (a CJK character counts as one token).
# chunk_tokens = 400
# chunk_overlap = 80
# Files larger than this many megabytes are skipped with a warning.
# max_file_mb = 32

[recall]
# Number of results when --k is not given.
# k = 6
# Maximum characters of one snippet.
# snippet_chars = 700

[hooks]
# The post-commit hook indexes inline when a commit touches at most this many memory files;
# larger changes are indexed by a detached process so `git commit` stays fast.
# inline_max_files = 200
"""


@dataclass(frozen=True)
class Config:
    extra_paths: tuple[str, ...] = ()
    chunk_tokens: int = 400
    chunk_overlap: int = 80
    max_file_mb: float = 32
    recall_k: int = 6
    snippet_chars: int = 700
    inline_max_files: int = 200
    sources: tuple[str, ...] = field(default=())  # files the settings came from


# (section, key) -> (Config field, type, minimum)
_KEYS = {
    (None, "extra_paths"): ("extra_paths", list, None),
    ("index", "chunk_tokens"): ("chunk_tokens", int, 32),
    ("index", "chunk_overlap"): ("chunk_overlap", int, 0),
    ("index", "max_file_mb"): ("max_file_mb", (int, float), 0),
    ("recall", "k"): ("recall_k", int, 1),
    ("recall", "snippet_chars"): ("snippet_chars", int, 40),
    ("hooks", "inline_max_files"): ("inline_max_files", int, 0),
}
_SECTIONS = {"index", "recall", "hooks"}


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "zmem" / "config.toml"


def _read_toml(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}", hint="fix the file, or move it aside to use the defaults")
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}", hint="check the file's permissions")


def _apply(values: dict, data: dict, path: Path) -> None:
    for key, value in data.items():
        if isinstance(value, dict) and key in _SECTIONS:
            items = [((key, k), v) for k, v in value.items()]
        elif isinstance(value, dict):
            continue  # sections other issues own ([embeddings], [sessions], ...) are read there
        else:
            items = [((None, key), value)]
        for (section, name), v in items:
            spec = _KEYS.get((section, name))
            if spec is None:
                continue  # unknown keys are tolerated so newer zmem.toml files still load
            attr, typ, minimum = spec
            where = f"{section}.{name}" if section else name
            if isinstance(v, bool) or not isinstance(v, typ):
                raise ConfigError(f"{path}: `{where}` has the wrong type ({type(v).__name__})",
                                  hint=f"see the commented defaults that `zmem init` writes to zmem.toml")
            if minimum is not None and v < minimum:
                raise ConfigError(f"{path}: `{where}` must be at least {minimum}", hint="fix the value in the file")
            if attr == "extra_paths":
                if not all(isinstance(p, str) for p in v):
                    raise ConfigError(f"{path}: `extra_paths` must be a list of strings",
                                      hint='e.g. extra_paths = ["notes"]')
                v = tuple(v)
            values[attr] = v


def load_config(workspace_root: Path | None) -> Config:
    values: dict = {}
    sources = []
    candidates = [user_config_path()]
    if workspace_root is not None:
        candidates.append(workspace_root / "zmem.toml")
    for path in candidates:
        if path.is_file():
            _apply(values, _read_toml(path), path)
            sources.append(str(path))
    cfg = Config(**values, sources=tuple(sources))
    if cfg.chunk_overlap >= cfg.chunk_tokens:
        raise ConfigError("`index.chunk_overlap` must be smaller than `index.chunk_tokens`",
                          hint="e.g. chunk_tokens = 400, chunk_overlap = 80")
    return cfg
