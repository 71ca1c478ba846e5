"""Settings: built-in defaults < user config (~/.config/zmem/config.toml) < the workspace's zmem.toml."""
from __future__ import annotations

import errno
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from zmem.errors import ConfigError, ZmemError
from zmem.workspace.paths import normalize_rel

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

# Recall mode when --mode is not given: hybrid (when vectors exist), bm25 or vector.
# mode = "hybrid"
# How hybrid merges keyword and vector candidates: "adaptive" (the weights below when a keyword
# candidate holds the query's rare words, mostly vectors when none does), "weighted" (the weights
# below always) or "rrf" (see bench/README.md).
# fusion = "adaptive"
# vector_weight = 0.3
# text_weight = 0.7
# candidate_multiplier = 4
# A cross-encoder that reorders the top hits and picks the lines each cites (`zmem model pull`
# installs one; needs the semantic extra): a model name or directory; "" is off. --rerank/--no-rerank.
# "embedding": no other model, the embedding model reads hybrid recall's first three hits token by
# token (English first hits better; ~20-100 ms more per recall).
# rerank = ""

[hooks]
# `zmem hook NAME` (the foreground form, for other hook managers) indexes inline when a change
# touches at most this many memory files; larger ones go to a detached `zmem index`.
# inline_max_files = 200

[watch]
# `zmem watch` reindexes after this many seconds without a change (--debounce overrides it).
# debounce = 1.5
# Reading commands (recall, get, facts, ...) start a watcher in the background (`zmem watch --auto`)
# when none serves this workspace and the index holds at least auto_min_files memory files, or
# hybrid recall embeds queries with an in-process model; it exits after idle_exit seconds without a
# question from another zmem process. ZMEM_WATCH_AUTO=0 in the environment turns it off too.
# auto = true
# auto_min_files = 5000
# idle_exit = 900
# At most this many automatic watchers of this user run at once (each ~25-100 MB, +~130 MB with a
# query model); past it none is started until one exits.
# auto_max = 4

[embeddings]
# Semantic recall. Settings here that send notes off this machine or load code (this whole
# section) apply only after `zmem trust`; your own ~/.config/zmem/config.toml needs no trust.
# provider = "auto"        # auto | none | local | onnx | openai | gemini. auto (the default, needs no
#                          # `zmem trust`): a model or endpoint set here, else a local Ollama embedding
#                          # model, else a model `zmem model pull` installed, else keyword recall only
# model = "text-embedding-3-small"
# base_url = "http://127.0.0.1:11434/v1"   # any OpenAI-compatible endpoint (Ollama, vLLM, ...)
# api_key_env = "OPENAI_API_KEY"           # the key is read from this environment variable
# model_path = "~/.cache/zmem/models/all-MiniLM-L6-v2.f16.gguf"   # for provider = "local"
#                          # (provider = "onnx": the model directory `zmem model import --format onnx` writes)
# api = "native"           # provider = "gemini": the native API, or "openai" for its compatible endpoint
# headers = { "X-Title" = "zmem" }         # extra HTTP headers (openai, gemini)
# dimensions = 768         # what the model returns (checked); some endpoints shorten vectors to it
# query_prefix = ""        # text put before queries: "query: " for e5, "search_query: " for nomic
# document_prefix = ""     # ... and before notes: "passage: " for e5, "search_document: " for nomic
# threads = 8              # local, onnx: CPU threads (at most the machine's cores; onnx default: up to 4)
# batch_size = 32          # texts per provider call (local: 16; gemini: its maximum)
# timeout = 30             # seconds per provider call (recall's query deadline is shorter)
# give_up_after = 5        # seconds `zmem index` and background jobs spend on a failing provider in all,
#                          # then leave the chunks pending (`zmem embed`: at least 60)
# fallback = "none"        # used only when the primary fails: a provider name reusing these settings,
#                          # or an [embeddings.fallback] table with its own (same keys as here)

[cache]
# Embedding cache entries kept (least recently used are pruned).
# max_entries = 50000

[scopes]
# Paths that `--scope group` never returns, besides MEMORY.md, which is always private: globs
# ("bank/people/**"), files, or directories ("bank/people" and "bank/people/" mean everything below it).
# private = ["bank/people/**"]

[sessions]
# Agent session transcripts (JSONL) to index for recall; only after `zmem trust` when set here.
# enabled = false
# dir = "~/.openclaw/agents/*/sessions"
# delta_bytes = 100000     # reindex a file once it grew by this many bytes
# delta_messages = 50      # ... or by this many messages

[llm]
# Optional chat model for `zmem reflect --llm` summaries (any OpenAI-compatible endpoint, e.g.
# llama.cpp's server for a local model). Only after `zmem trust` when set here.
# model = "gpt-4o-mini"
# base_url = "http://127.0.0.1:8080/v1"
# api_key_env = "OPENAI_API_KEY"
# headers = {}
# timeout = 60
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
    watch_debounce: float = 1.5  # seconds of quiet before `zmem watch` reindexes
    watch_auto: bool = True  # reading commands start a watcher (zmem.index.autowatch)
    watch_auto_min_files: int = 5000  # ... when the index holds at least this many memory files
    watch_idle_exit: float = 900.0  # seconds without a question before that watcher exits
    watch_auto_max: int = 4  # automatic watchers of this user at once, over all workspaces
    recall_mode: str = "hybrid"
    fusion: str = "adaptive"  # weights per query by its keyword evidence (zmem/query/fusion.py; bench/README.md)
    vector_weight: float = 0.3  # measured on LoCoMo dev with MiniLM: see bench/README.md
    text_weight: float = 0.7
    candidate_multiplier: int = 4
    rerank: str = ""  # recall's reranker: a model name or directory ("": none; zmem.query.rerank; "embedding": tokencover)
    cache_max_entries: int = 50_000
    private_paths: tuple[str, ...] = ()  # globs hidden from --scope group (MEMORY.md always is)
    embeddings: dict = field(default_factory=dict)  # the [embeddings] table, as trusted
    sessions: dict = field(default_factory=dict)  # the [sessions] table, as trusted (sessions.py reads it)
    llm: dict = field(default_factory=dict)  # the [llm] table, as trusted (summarize.py reads it)
    untrusted: tuple[str, ...] = ()  # keys ignored because zmem.toml is not trusted
    trust: str = ""  # zmem.toml's trust.state(): trusted | changed | untrusted ("" without one)
    warnings: tuple[str, ...] = ()  # keys and tables no setting has: ignored, named with file and key
    sources: tuple[str, ...] = field(default=())  # files the settings came from
    origins: dict = field(default_factory=dict)  # "index.chunk_tokens", "sessions.dir", … -> the file that set it


# (section, key) -> (Config field, type, minimum)
_KEYS = {
    (None, "extra_paths"): ("extra_paths", list, None),
    ("index", "chunk_tokens"): ("chunk_tokens", int, 32),
    ("index", "chunk_overlap"): ("chunk_overlap", int, 0),
    ("index", "max_file_mb"): ("max_file_mb", (int, float), 0),
    ("recall", "k"): ("recall_k", int, 1),
    ("recall", "snippet_chars"): ("snippet_chars", int, 40),
    ("hooks", "inline_max_files"): ("inline_max_files", int, 0),
    ("watch", "debounce"): ("watch_debounce", (int, float), 0),
    ("watch", "auto"): ("watch_auto", bool, None),
    ("watch", "auto_min_files"): ("watch_auto_min_files", int, 0),
    ("watch", "idle_exit"): ("watch_idle_exit", (int, float), 1),
    ("watch", "auto_max"): ("watch_auto_max", int, 1),
    ("recall", "mode"): ("recall_mode", ("hybrid", "bm25", "vector"), None),
    ("recall", "fusion"): ("fusion", ("adaptive", "weighted", "rrf"), None),
    ("recall", "vector_weight"): ("vector_weight", (int, float), 0),
    ("recall", "text_weight"): ("text_weight", (int, float), 0),
    ("recall", "candidate_multiplier"): ("candidate_multiplier", int, 1),
    ("recall", "rerank"): ("rerank", str, None),
    ("cache", "max_entries"): ("cache_max_entries", int, 0),
    ("scopes", "private"): ("private_paths", list, None),
}
_SECTIONS = {"index", "recall", "hooks", "cache", "scopes", "watch"}
EMBEDDING_KEYS = {
    "provider": ("none", "auto", "local", "onnx", "openai", "gemini"),
    "fallback": ("none", "local", "onnx", "openai", "gemini"),
    "model": str, "dimensions": int, "base_url": str, "api_key_env": str, "model_path": str,
    "query_prefix": str, "document_prefix": str, "batch_size": int, "timeout": (int, float), "headers": dict,
    "give_up_after": (int, float),
    "threads": int, "api": ("native", "openai"),
}
# [embeddings.fallback]: the same keys, its own values (nothing inherited from [embeddings])
FALLBACK_KEYS = {**{k: v for k, v in EMBEDDING_KEYS.items() if k != "fallback"}, "provider": EMBEDDING_KEYS["fallback"]}
# The keys of the tables other modules read (sessions.py, summarize.py); their values are checked there.
SESSION_KEYS = ("enabled", "dir", "dirs", "delta_bytes", "delta_messages")
LLM_KEYS = ("model", "base_url", "api_key_env", "headers", "timeout")
_LLM_TYPES = {"model": str, "base_url": str, "api_key_env": str, "headers": dict, "timeout": (int, float)}


def known_keys() -> dict[str | None, set[str]]:
    """Every setting there is: table (None: the top of the file) -> key names."""
    out: dict[str | None, set[str]] = {None: set()}
    for section, name in _KEYS:
        out.setdefault(section, set()).add(name)
    out["embeddings"] = set(EMBEDDING_KEYS)
    out["sessions"] = set(SESSION_KEYS)
    out["llm"] = set(LLM_KEYS)
    return out


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "zmem" / "config.toml"


def trust_note(cfg: Config) -> str | None:
    """Which settings of zmem.toml are ignored until it is trusted, and what to do, or None."""
    if not cfg.untrusted:
        return None
    keys = ", ".join(cfg.untrusted)
    if cfg.trust == "changed":
        return (f"zmem.toml changed since you trusted it (run `zmem trust` to trust the new version); "
                f"until then {keys} {'are' if len(cfg.untrusted) > 1 else 'is'} ignored")
    return f"zmem.toml sets {keys}, ignored until you {trust_advice(cfg)}"


def trust_advice(cfg: Config) -> str:
    """What makes settings of an untrusted zmem.toml apply: trusting it first, or owning them."""
    return (f"run `zmem trust`{' to trust the new version' if cfg.trust == 'changed' else ''} (or move "
            f"them to your own {user_config_path()}, which needs no trust)")


def trust_error(cfg: Config, key: str, message: str) -> ZmemError | None:
    """The error for a feature that is off because zmem.toml sets `key` but awaits `zmem trust`
    (None when it does not): the hint says to trust it, not to set what is already set."""
    if key not in cfg.untrusted:
        return None
    why = "changed since you trusted it" if cfg.trust == "changed" else "is not trusted yet"
    return ZmemError(f"{message}: zmem.toml sets {key}, but {why}", hint=trust_advice(cfg))


def sessions_off(cfg: Config) -> ZmemError:
    """The error for a command that needs session transcripts when they are not enabled."""
    message = "session transcripts are not enabled"
    return trust_error(cfg, "sessions.enabled", message) or ZmemError(
        message, hint=f'add [sessions] enabled = true, dir = "~/.openclaw/agents/*/sessions" to {user_config_path()}')


def user_cache_dir() -> Path:
    """zmem's cache directory: imported models, downloads, models already checked."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "zmem"


def _read_toml(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            text = f.read().decode()  # as tomllib.load does
        tables = _tables_only(text)
        if tables is not None:
            return tables
        import tomllib
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path}: invalid TOML: {e}", hint="fix the file, or move it aside to use the defaults")
    except UnicodeDecodeError as e:  # TOML is UTF-8 by definition
        raise ConfigError(f"{path}: not UTF-8 text (byte {e.start})",
                          hint="save the file as UTF-8, or move it aside to use the defaults")
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}", hint="check the file's permissions")


_TOML_CONTROL = frozenset(map(chr, [*range(0x20), 0x7F])) - {"\t"}  # never valid outside a string
_BARE_KEY = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _tables_only(text: str) -> dict | None:
    """What tomllib makes of a file holding only blank lines, comments and `[table]` headers with bare
    names, as `zmem init` writes zmem.toml: each table empty. None for anything else, which tomllib
    reads: importing it (with typing, datetime, string and its patterns) costs a fresh process ~9 ms."""
    tables: dict = {}
    for line in text.replace("\r\n", "\n").split("\n"):
        if not _TOML_CONTROL.isdisjoint(line):
            return None
        line = line.strip(" \t")
        if line.startswith("["):
            name, closed, rest = line[1:].partition("]")
            name, rest = name.strip(" \t"), rest.lstrip(" \t")
            if not (closed and name and _BARE_KEY.issuperset(name) and name not in tables
                    and (not rest or rest.startswith("#"))):
                return None
            tables[name] = {}
        elif line and not line.startswith("#"):
            return None
    return tables


def _config_file(path: Path) -> bool:
    """Whether there is a config file at path to read. Nothing there: False. Something there that is
    not a file (a directory, a dangling symlink) or cannot be looked at: an error naming it, not
    silently the defaults."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise ConfigError(f"{path}: a symlink to a file that does not exist",
                              hint="point it at your config file, or remove it to use the defaults") from None
        return False
    except OSError as e:
        if e.errno in (errno.ENOTDIR, errno.ENAMETOOLONG):
            return False
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}", hint="check the permissions of the file and "
                          "the directories above it") from None
    if not stat.S_ISREG(st.st_mode):
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise ConfigError(f"{path}: {what}, not a TOML config file",
                          hint="move it aside (zmem then uses the defaults), or make it a TOML file")
    return True


def _number_ok(v) -> bool:
    """A float setting must be a real number: TOML's nan and inf are no timeout, weight or size."""
    return not isinstance(v, float) or math.isfinite(v)


def unknown_settings(data: dict, path: Path) -> list[str]:
    """Warnings for keys and tables no setting has (a typo, or a key under the wrong table),
    each naming the file and the key. They are ignored, not errors: a typo must not stop recall,
    and a zmem.toml written for a newer zmem still loads."""
    known = known_keys()

    def belongs(name: str) -> str:  # a known key in the wrong place: say where it goes
        tables = sorted(t for t, names in known.items() if t and name in names)
        if name in known[None]:
            return f": {name} belongs at the top of the file, before any [table]"
        return f": {name} belongs in {' or '.join(f'[{t}]' for t in tables)}" if tables else ""

    def guess(name: str, choices, where: str | None) -> str:  # a typo: the nearest name, else the list
        import difflib
        close = difflib.get_close_matches(name, sorted(choices), n=1, cutoff=0.75)
        if where == "[":
            return f"; did you mean [{close[0]}]?" if close else f"; the tables are {', '.join(sorted(choices))}"
        if close:
            return f"; did you mean `{where}.{close[0]}`?" if where else f"; did you mean `{close[0]}`?"
        return (f"; [{where}] has {', '.join(sorted(choices))}" if where else
                f"; the top of the file has only {', '.join(sorted(choices))}, then [tables]")

    out = []
    for key, value in data.items():
        if not isinstance(value, dict):
            if key not in known[None]:
                out.append(f"{path}: unknown key `{key}` is ignored"
                           + (belongs(key) or guess(key, known[None], None)))
            continue
        if key not in known:
            out.append(f"{path}: unknown table [{key}] is ignored" + guess(key, [t for t in known if t], "["))
            continue
        tables = [(key, value)]
        if key == "embeddings" and isinstance(value.get("fallback"), dict):
            tables.append(("embeddings.fallback", value["fallback"]))
        for where, table in tables:
            names = known["embeddings"] - {"fallback"} if where == "embeddings.fallback" else known[key]
            for name, v in table.items():
                if name in names:
                    continue  # its value is checked where it is read
                if isinstance(v, dict):
                    out.append(f"{path}: unknown table [{where}.{name}] is ignored" + guess(name, names, where))
                else:
                    out.append(f"{path}: unknown key `{where}.{name}` is ignored"
                               + (belongs(name) or guess(name, names, where)))
    return out


def _apply(values: dict, data: dict, path: Path, origins: dict) -> None:
    for key, value in data.items():
        if isinstance(value, dict) and key in _SECTIONS:
            items = [((key, k), v) for k, v in value.items()]
        elif isinstance(value, dict):
            continue  # [embeddings], [sessions], [llm] are read where they are used
        else:
            items = [((None, key), value)]
        for (section, name), v in items:
            spec = _KEYS.get((section, name))
            if spec is None:
                continue  # unknown keys are warnings (unknown_settings)
            attr, typ, minimum = spec
            where = f"{section}.{name}" if section else name
            if isinstance(typ, tuple) and all(isinstance(t, str) for t in typ):
                if v not in typ:
                    raise ConfigError(f"{path}: `{where}` must be one of {', '.join(typ)}", hint="fix the value in the file")
                values[attr] = v
                origins[where] = str(path)
                continue
            if (isinstance(v, bool) and typ is not bool) or not isinstance(v, typ):
                raise ConfigError(f"{path}: `{where}` has the wrong type ({type(v).__name__})",
                                  hint="see the commented defaults that `zmem init` writes to zmem.toml")
            if not _number_ok(v):
                raise ConfigError(f"{path}: `{where}` must be a finite number, not {v}", hint="fix the value in the file")
            if minimum is not None and v < minimum:
                raise ConfigError(f"{path}: `{where}` must be at least {minimum}", hint="fix the value in the file")
            if typ is list:
                if not all(isinstance(p, str) for p in v):
                    raise ConfigError(f"{path}: `{where}` must be a list of strings",
                                      hint='e.g. ["notes", "bank/people/**"]')
                v = tuple(v)
            values[attr] = v
            origins[where] = str(path)


def _embeddings(data: dict, path: Path, table=None, where: str = "embeddings", keys: dict = EMBEDDING_KEYS) -> dict:
    table = data.get("embeddings", {}) if table is None else table
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: `{where}` must be a table", hint=f"write it as [{where}]")
    out = {}
    for key, v in table.items():
        if key == "fallback" and keys is EMBEDDING_KEYS and isinstance(v, dict):
            out[key] = _embeddings(data, path, v, "embeddings.fallback", FALLBACK_KEYS)
            continue
        spec = keys.get(key)
        if spec is None:
            continue  # unknown keys are warnings (unknown_settings)
        if isinstance(spec, tuple) and all(isinstance(t, str) for t in spec):
            if v not in spec:
                raise ConfigError(f"{path}: `{where}.{key}` must be one of {', '.join(spec)}",
                                  hint="fix the value in the file")
        elif isinstance(v, bool) or not isinstance(v, spec):
            raise ConfigError(f"{path}: `{where}.{key}` has the wrong type ({type(v).__name__})",
                              hint="see the commented [embeddings] section that `zmem init` writes")
        elif not _number_ok(v):
            raise ConfigError(f"{path}: `{where}.{key}` must be a finite number, not {v}", hint="fix the value in the file")
        out[key] = v
    return out


def _merge_embeddings(into: dict, table: dict) -> None:
    """Later files win key by key, inside [embeddings.fallback] too; a `fallback = "name"`
    string and a fallback table replace each other."""
    for key, v in table.items():
        if key == "fallback" and isinstance(v, dict) and isinstance(into.get(key), dict):
            into[key] = {**into[key], **v}
        else:
            into[key] = v


def _key_names(table: dict, prefix: str = "embeddings") -> list[str]:
    """embeddings.KEY, and embeddings.fallback.KEY for the fallback table's keys."""
    return [n for k, v in table.items()
            for n in (_key_names(v, f"{prefix}.{k}") if k == "fallback" and isinstance(v, dict) else [f"{prefix}.{k}"])]


def _table(data: dict, name: str, path: Path) -> dict:
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: `{name}` must be a table", hint=f"write it as [{name}]")
    return table


def _llm(data: dict, path: Path) -> dict:
    """[llm], its types checked here like every other typed key (the values are used by reflect --llm)."""
    table = _table(data, "llm", path)
    for key, typ in _LLM_TYPES.items():
        if key not in table:
            continue
        v = table[key]
        if isinstance(v, bool) or not isinstance(v, typ):
            raise ConfigError(f"{path}: `llm.{key}` has the wrong type ({type(v).__name__})",
                              hint="see the commented [llm] section that `zmem init` writes")
        if key == "timeout" and not (math.isfinite(v) and v > 0):
            raise ConfigError(f"{path}: `llm.timeout` must be a number of seconds above 0, not {v}",
                              hint="e.g. timeout = 60")
    return table


def load_config(workspace_root: Path | None) -> Config:
    from zmem.workspace import trust
    values: dict = {}
    sources = []
    embeddings: dict = {}
    untrusted: list[str] = []
    user = user_config_path()
    sessions: dict = {}
    llm: dict = {}
    warnings: list[str] = []
    origins: dict[str, str] = {}
    trusted = ""
    if _config_file(user):
        data = _read_toml(user)
        warnings += unknown_settings(data, user)
        _apply(values, data, user, origins)
        _merge_embeddings(embeddings, _embeddings(data, user))
        sessions.update(_table(data, "sessions", user))
        origins.update({f"sessions.{k}": str(user) for k in sessions})
        llm.update(_llm(data, user))
        sources.append(str(user))
    if workspace_root is not None and _config_file(workspace_root / "zmem.toml"):
        path = workspace_root / "zmem.toml"
        data = _read_toml(path)
        warnings += unknown_settings(data, path)
        _apply(values, data, path, origins)
        table = _embeddings(data, path)
        session_table = _table(data, "sessions", path)
        llm_table = _llm(data, path)
        trusted = trust.state(path)
        if trusted == "trusted":
            _merge_embeddings(embeddings, table)
            sessions.update(session_table)
            origins.update({f"sessions.{k}": str(path) for k in session_table})
            llm.update(llm_table)
        else:  # a cloned repository must not send notes anywhere, load code, or read files outside it
            # (keys no setting has are not listed: unknown_settings names them, and trust would not help)
            if table.get("provider") == "auto" and "provider" not in embeddings:
                # auto only picks what this user set up (their config, their Ollama, their models)
                embeddings["provider"] = "auto"
                table = {k: v for k, v in table.items() if k != "provider"}
            untrusted = sorted(_key_names(table) + [f"sessions.{k}" for k in session_table if k in SESSION_KEYS]
                               + [f"llm.{k}" for k in llm_table if k in LLM_KEYS])
        sources.append(str(path))
    cfg = Config(**values, embeddings=embeddings, sessions=sessions, llm=llm, untrusted=tuple(untrusted),
                 trust=trusted, warnings=tuple(warnings), sources=tuple(sources), origins=origins)
    if cfg.chunk_overlap >= cfg.chunk_tokens:
        files = list(dict.fromkeys(origins[k] for k in ("index.chunk_tokens", "index.chunk_overlap") if k in origins))
        raise ConfigError(f"{' and '.join(files)}: `index.chunk_overlap` ({cfg.chunk_overlap}) must be smaller than "
                          f"`index.chunk_tokens` ({cfg.chunk_tokens})", hint="e.g. chunk_tokens = 400, chunk_overlap = 80")
    for entry in cfg.extra_paths:
        if normalize_rel(entry) is None:  # it would be silently left out of the index
            raise ConfigError(f"{origins['extra_paths']}: `extra_paths` entry {entry!r} is not a file or directory "
                              "inside the workspace",
                              hint='write paths relative to the workspace root, e.g. extra_paths = ["notes"]')
    return cfg

