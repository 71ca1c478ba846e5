"""`zmem status` and `zmem doctor`: the state of the workspace and index, and checks that explain."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from zmem.store import db
from zmem.errors import ZmemError
from zmem.index import fsmonitor
from zmem.index.catchup import UNREADABLE, fingerprint, open_index, stored_warnings
from zmem.workspace.snapshot import ignore_rules_changed, stat_signature, stored_ignore_record
from zmem.workspace.snapshot import git_blob_id as blob_id
from zmem.workspace.core import Workspace, find_workspace


def workspace_status(ws: Workspace, conn=None) -> dict:
    """conn: an open index connection to use (left open)."""
    from zmem.git import hooks as hooks_lib
    from zmem.git.gitstatus import WorktreeStatus, worktree_status
    git = worktree_status(ws.root)  # the git command line: pygit2's import alone costs ~100 ms
    if git is None:
        from zmem.git.repo import open_repo
        repo = open_repo(ws.root)  # says why git could not tell (not a work tree, a bare repository, …)
        git = WorktreeStatus(head=repo.head(), dirty=repo.dirty_paths(), shallow=repo.is_shallow())
    head = git.head
    own = conn is None
    if own:
        conn = open_index(ws)
    try:
        indexed = db.get_meta(conn, "indexed_commit")
        dirty = sorted(p for p in git.dirty if ws.is_memory_path(p))
        changed = [p for p in dirty if _differs(ws, p, *_indexed(conn, p))]
        files = conn.execute("SELECT count(*) FROM files").fetchone()[0]
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        warnings = list(ws.config.warnings) + stored_warnings(conn)  # zmem.toml keys no setting has, then notes
        stale = (indexed is None or (indexed or None) != head or bool(changed)
                 or ignore_rules_changed(stored_ignore_record(conn))  # a .gitignore changed
                 or db.get_meta(conn, "fingerprint") != fingerprint(ws))
        vec_loaded, vec_detail = db.load_vec(conn)
        auto_watch = _auto_watch(ws, conn, files)
        embeddings = _embedding_status(ws, conn)
        sessions = _sessions_status(ws, conn)
        read_only = db.readonly_reason(conn)
    finally:
        if own:
            conn.close()
    size = sum(p.stat().st_size for p in ws.state_dir.glob("index.sqlite*") if p.is_file()
               and "rebuild" not in p.name)
    try:
        hooks = hooks_lib.status(ws.root)
    except ZmemError as e:
        hooks = {"all": f"unavailable: {e.message}"}
    return {
        "workspace": str(ws.root), "head": head, "indexed_commit": indexed or None,
        "indexed": indexed is not None,  # also without commits: then from the working tree
        "stale": stale, "read_only": read_only is not None, "read_only_reason": read_only,
        "dirty": dirty, "files": files, "chunks": chunks, "db_bytes": size, "driver": db.DRIVER,
        "sqlite_version": db.sqlite_version(),
        "vector_store": vec_detail if vec_loaded else f"in-process fallback ({vec_detail})",
        "sqlite_vec": vec_loaded, "shallow": git.shallow, "hooks": hooks, "file_warnings": warnings,
        "embeddings": embeddings, "sessions": sessions,
        "watcher": fsmonitor.serving(ws.state_dir), "auto_watch": auto_watch,
    }


def _auto_watch(ws: Workspace, conn, files: int) -> dict:
    """Whether a reading command starts a watcher here when none serves (zmem.index.autowatch), why, and
    when one last tried (ISO 8601, UTC, or None)."""
    import datetime as dt
    from zmem.index import autowatch
    cfg = ws.config
    try:
        tried = os.stat(ws.state_dir / autowatch.STAMP)
        last = dt.datetime.fromtimestamp(tried.st_mtime, dt.timezone.utc).isoformat(timespec="seconds") \
            if tried.st_size else None
    except OSError:
        last = None
    on, why = autowatch.pays(ws, conn, files)
    if on and (running := len(autowatch.automatic_watchers())) >= cfg.watch_auto_max:
        why, on = (f"{why}, but {running} automatic watchers of this user run already (watch.auto_max = "
                   f"{cfg.watch_auto_max}): none starts until one exits"), False
    return {"on": on, "why": why, "last_start": last}


def watcher_line(who: dict) -> str:
    """The process serving a workspace (fsmonitor.serving), for status, doctor and watch --stop."""
    how = {True: "started automatically", False: "started by hand"}.get(who.get("auto"), "")
    since = f"since {who['started']}" if who.get("started") else ""
    idle = f"exits after {who['idle_exit']:g} s without a question" if who.get("idle_exit") else ""
    details = ", ".join(x for x in (how if who.get("command") != "mcp" else "", since, idle) if x)
    return f"zmem {who.get('command') or 'watch'} (pid {who.get('pid')}" + (f"; {details})" if details else ")")


def no_watcher_line(auto: dict) -> str:
    import datetime as dt
    from zmem.index.autowatch import LOG, RETRY
    last = ""
    if auto["last_start"]:
        ago = (dt.datetime.now(dt.timezone.utc) - dt.datetime.fromisoformat(auto["last_start"])).total_seconds()
        last = f"; the last start was at {auto['last_start']} (.zmem/{LOG} says how it went)" + (
            f": none again before {RETRY:g} s after it" if ago < RETRY else "")
    if auto["on"]:
        return f"none now: a reading command starts one ({auto['why']}{last})"
    return f"none: every command checks each file itself; no automatic start ({auto['why']})"


def _indexed(conn, rel: str) -> tuple[str | None, tuple | None]:
    """(blob, stat signature) the index holds for a file, or (None, None): read per dirty file, not
    for all of them (10,000 rows took ~35 ms, and a workspace at rest has no dirty file)."""
    row = conn.execute("SELECT blob, mtime_ns, size, ino, ctime_ns FROM files WHERE path = ?", (rel,)).fetchone()
    return (row[0], tuple(row[1:])) if row else (None, None)


def _differs(ws: Workspace, rel: str, blob: str | None, sig: tuple | None = None) -> bool:
    """Whether the index disagrees with a dirty file: a file on disk indexed with other content
    (or not at all), or an indexed file that is gone. A file deleted (or turned into a symlink or
    directory) that the index no longer holds is up to date, and so is a file that cannot be read
    which the index holds as unreadable with the stat it has now (as catch-up decides: it is
    read again when its stat changes)."""
    path = ws.root / rel
    if path.is_symlink() or not path.is_file():
        return blob is not None
    try:
        return blob != blob_id(path.read_bytes())
    except OSError:
        return not (blob == UNREADABLE and sig is not None and stat_signature(path) == sig)


def _sessions_status(ws: Workspace, conn) -> dict:
    from zmem.workspace.session_settings import settings_for
    settings = settings_for(ws)
    files = conn.execute("SELECT count(*) FROM session_files").fetchone()[0]
    warning = None
    if settings.enabled:
        from zmem.query.sessions import unmatched_warning
        warning = unmatched_warning(settings)
    return {"enabled": settings.enabled, "files": files, "warning": warning}


def _embedding_status(ws: Workspace, conn) -> dict:
    from zmem.index.embedding import pending_count, providers, vector_fingerprint
    provs = providers(ws)
    active = provs.primary or provs.fallback
    vectors = conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0]
    fp = db.get_meta(conn, "vec_fingerprint")
    try:  # the fingerprint names the provider and model that made the vectors, configured now or not
        made = json.loads(fp.rsplit("|", 1)[0]) if fp and vectors else None
        made_by = f"{made['provider']} {made['model']}" if isinstance(made, dict) else None
    except (ValueError, KeyError):
        made_by = None
    auto = None
    if ws.config.embeddings.get("provider", "auto") == "auto":  # which one auto picked, and why
        from zmem.embedders.auto import resolve
        chosen, why = resolve(ws.config.embeddings)
        auto = {"chose": chosen["provider"] if chosen else "none", "why": why}
    return {
        "provider": active.provider if active else "none",
        "model": active.model if active else None,
        "fallback": provs.fallback.provider if provs.fallback else None,
        "vectors": vectors,
        "vectors_by": made_by,
        "fallback_made": bool(vectors) and provs.fallback is not None and fp == vector_fingerprint(provs.fallback),
        "pending": pending_count(conn) if active else 0,
        "current": bool(active) and fp == vector_fingerprint(active),
        "last_error": db.get_meta(conn, "embed_error") if active else None,  # none configured: nothing runs
        "warnings": provs.warnings,
        "auto": auto,
    }


NO_EMBEDDINGS = ("none configured — keyword (BM25) recall; for semantic recall see README's "
                 "\"Semantic recall\" ([embeddings] in ~/.config/zmem/config.toml)")


def vectors_line(emb: dict) -> str:
    """What the vectors are and who made them, for status and doctor."""
    line = f"{emb['provider']} {emb['model']}: {emb['vectors']} vectors (windows), {emb['pending']} chunks pending"
    if emb["vectors"] and not emb["current"]:
        by = f" ({emb['vectors_by']})" if emb["vectors_by"] else ""
        line += (f"; the vectors were made by the fallback{by}" if emb["fallback_made"] else
                 f"; the vectors come from another model{by} and are being re-embedded")
    return line


def hooks_line(hooks: dict[str, str], sep: str = " ") -> str:
    """Hook states, hooks in one state named together: `post-commit, post-merge installed; …`."""
    names: dict[str, list[str]] = {}
    for name, state in hooks.items():
        names.setdefault(state, []).append(name)
    return "; ".join(f"{', '.join(n)}{sep}{state}" for state, n in names.items())


def run_doctor(directory, *, workspace: Workspace | None = None, connect=None) -> list[tuple[str, str, str]]:
    """(level, check, explanation) with level ok | warn | fail. workspace: the one found already;
    connect: gives the index connection to use (left open), e.g. a Memory's; else one is opened."""
    checks: list[tuple[str, str, str]] = []
    git = shutil.which("git")
    if git:
        version = subprocess.run([git, "--version"], capture_output=True, text=True).stdout.strip()
        checks.append(("ok", "git", version))
    else:
        checks.append(("fail", "git", "git is not on PATH; zmem needs it for commits and hooks"))
    checks.append(_sqlite_check())
    conn = db.sqlite.connect(":memory:")
    loaded, detail = db.load_vec(conn)
    conn.close()
    checks.append(("ok" if loaded else "warn", "sqlite-vec",
                   detail if loaded else f"{detail}; vector search would use the exact in-process fallback"))
    try:
        ws = workspace or find_workspace(directory)
    except ZmemError as e:
        checks.append(("fail", "workspace", f"{e.message} ({e.hint})"))
        return checks
    checks.append(("ok", "workspace", str(ws.root)))
    if ws.config.warnings:
        checks += [("warn", "config", w) for w in ws.config.warnings]
    else:
        checks.append(("ok", "config", ", ".join(ws.config.sources) or "defaults (no zmem.toml)"))
    conn = None
    try:
        conn = connect() if connect else None
        st = workspace_status(ws, conn)
    except ZmemError as e:
        checks.append(("fail", "index", f"{e.message} ({e.hint})"))
        return checks
    if st["head"] is None:
        checks.append(("warn", "repository", "no commits yet: files are indexed from the working tree"))
    elif st["shallow"]:
        checks.append(("warn", "repository", "shallow clone: history-based answers see only the fetched commits"))
    else:
        checks.append(("ok", "repository", f"HEAD {st['head'][:10]}"))
    bad = {k: v for k, v in st["hooks"].items() if not v.startswith("installed")}
    from zmem.git.hooks import HOOKS_PATH_STATE
    if bad and all(v == HOOKS_PATH_STATE for v in bad.values()):  # `zmem hooks install` would refuse
        checks.append(("warn", "hooks", "not installed: core.hooksPath is set and belongs to another tool — add "
                       "`zmem hook post-commit` (etc.) to its hooks, or unset it and run `zmem hooks install` "
                       "(every command still catches up by itself)"))
    elif bad:
        checks.append(("warn", "hooks", hooks_line(bad, ": ")
                       + " — run `zmem hooks install` (every command still catches up by itself)"))
    else:
        checks.append(("ok", "hooks", hooks_line(st["hooks"])))
        checks += _hook_engine_checks(ws, st["embeddings"])
    checks.append(_merge_check(ws))
    checks.append(("ok", "watcher", watcher_line(st["watcher"]) if st["watcher"] else no_watcher_line(st["auto_watch"])))
    emb = st["embeddings"]
    if emb["provider"] == "none":
        # none configured is the documented default (said here once, not by every recall); a configured
        # provider that cannot run is a degradation
        checks.append(("warn", "embeddings", "no provider can run (reasons below): recall is keyword (BM25) only")
                      if emb["warnings"] else ("ok", "embeddings", NO_EMBEDDINGS))
    else:
        detail = vectors_line(emb)
        level = "ok" if emb["current"] else "warn"
        if emb["last_error"]:
            detail += f"; last error: {emb['last_error']}"
            level = "warn"
        checks.append((level, "embeddings", detail))
    for w in emb["warnings"]:
        checks.append(("warn", "embeddings", w))
    if emb["auto"]:
        checks.append(("ok", "provider auto", f"{emb['auto']['chose']}, because {emb['auto']['why']}"))
    if st["sessions"]["enabled"]:
        missing = st["sessions"]["warning"]
        checks.append(("warn", "sessions", missing) if missing else
                      ("ok", "sessions", f"{st['sessions']['files']} transcript files indexed"))
    behind = "it cannot be updated while it is read-only" if st["read_only"] else "the next command catches up"
    checks.append(("warn" if st["stale"] else "ok", "index",
                   f"{st['files']} files, {st['chunks']} chunks"
                   + (f" — behind HEAD or the working tree; {behind}" if st["stale"] else ", up to date")))
    if st["read_only"]:
        checks.append(("warn", "index", f"read-only ({st['read_only_reason']}): commands answer from the index as "
                       "it is and write nothing (no catch-up, no embeddings); give this user write access to "
                       f"{ws.state_dir} to update it"))
    for w in st["file_warnings"][len(ws.config.warnings):]:  # the config's were reported above
        checks.append(("warn", "file", w))
    return checks + _fts_checks(ws, conn) + _opinion_checks(ws, conn) + _marker_checks(ws)


def _hook_engine_checks(ws: Workspace, emb: dict) -> list[tuple[str, str, str]]:
    """Hooks installed from another environment run its Python (the shim bakes the installing
    interpreter in): when that one lacks the engine of the in-process model the index's vectors come
    from (onnxruntime for onnx, llama-cpp-python for local), every commit leaves its new chunks
    unembedded until a command of this environment embeds them. Said with the command that fixes it."""
    import shlex
    from zmem.embedders import ENGINES, missing_engine
    from zmem.git import hooks as hooks_lib
    made = (emb.get("vectors_by") or "").split(" ")[0] if emb.get("vectors") else ""
    provider = made or emb.get("provider")
    if provider not in ENGINES:
        return []
    modules, extra = ENGINES[provider]
    checks = []
    for python, names in hooks_lib.interpreters(ws.root).items():
        if python == sys.executable:
            continue  # this interpreter: the embeddings check above speaks for it
        lacking = hooks_lib.cannot_import(python, list(modules))
        if not lacking:
            continue
        if missing_engine(provider) is None:
            fix = (f"run `{shlex.quote(sys.executable)} -m zmem -C {shlex.quote(str(ws.root))} hooks install` "
                   f"(the hooks then run this environment's Python, which has it)")
        else:
            fix = (f"install zmem's `{extra}` extra into the environment of {python}, or run `zmem hooks install` "
                   f"from an environment that has it")
        checks.append(("warn", "hooks", f"{', '.join(names)} run {python}, which lacks {' and '.join(lacking)}: "
                       f"the index's vectors are {provider}'s, so what a commit adds stays unembedded until a "
                       f"command embeds it (keyword-only meanwhile); {fix}"))
    return checks


def _merge_check(ws: Workspace) -> tuple[str, str, str]:
    """Two clones appending to one day's log merge cleanly only with git's union driver."""
    from zmem.git.scaffold import UNION_LOGS, logs_merge_driver
    driver = logs_merge_driver(ws.root)
    if driver == "union":
        return ("ok", "merge", "daily logs merge by union (.gitattributes): concurrent appends never conflict")
    fix = ("run `zmem init` to add it" if driver == "unspecified" else
           f"merge={driver} is set in a .gitattributes; zmem leaves your choice alone")
    return ("warn", "merge", f"daily logs are not merged by union (`{UNION_LOGS}` in .gitattributes): two clones "
            f"appending to the same day conflict on sync; {fix}")


def _fts_checks(ws: Workspace, conn=None) -> list[tuple[str, str, str]]:
    """The full-text tables against the rows they index (fts.check_tables, one consistent read); a
    table that does not match, or that still deletes by value where SQLite could delete by rowid,
    is rebuilt from the stored text under the index lock (it is derived: nothing is lost), and said."""
    from zmem.store import fts
    from zmem.index.catchup import IndexLock, LockTimeout
    name = "full-text index"
    own = conn is None
    conn = open_index(ws) if own else conn
    try:
        record = ws.state_dir / FTS_PASSED
        try:  # the tables' digests when the integrity-check last found nothing: unchanged, not checked again
            passed = json.loads(record.read_text())
            passed = passed if isinstance(passed, dict) else {}
        except (OSError, ValueError):
            passed = {}
        before = dict(passed)
        conn.execute("BEGIN")  # one state of the index throughout (WAL: writers go on meanwhile)
        try:
            problems = dict(fts.check_tables(conn, passed))
        finally:
            conn.execute("ROLLBACK")
        by_value = [t for t in fts.TABLES if not fts.deletes_by_rowid(conn, t)]
        why = db.readonly_reason(conn)
        if why is None and passed != before:
            _write_passed(record, passed)
        if why is not None:
            return [("fail", name, f"{t}: {problem}; not repaired: {why} (where the index can be written, "
                     "`zmem doctor` rebuilds it from the stored text)") for t, problem in problems.items()] or \
                [("ok", name, f"{len(fts.TABLES)} tables hold exactly what their rows give")]
        if not problems and (by_value == [] or not fts.can_delete_by_rowid()):
            how = ("rows are deleted by rowid" if not by_value else
                   f"SQLite {db.sqlite_version()} predates contentless_delete (3.43): rows are deleted by value")
            return [("ok", name, f"{len(fts.TABLES)} tables hold exactly what their rows give; {how}")]
        redo = list(problems) + [t for t in by_value if t not in problems and fts.can_delete_by_rowid()]
        try:
            with IndexLock(ws, 10.0), db.write_transaction(conn):
                rows = fts.rebuild_tables(conn, redo)
        except LockTimeout:
            return [("warn", name, f"{t}: {problems.get(t, 'deletes rows by value')}; not repaired: another zmem "
                     "process is updating the index (run `zmem doctor` again)") for t in redo]
        except db.Error as e:
            return [("fail", name, f"{', '.join(redo)}: cannot be rebuilt ({e}); run `zmem index --full`")]
    finally:
        if own:
            conn.close()
    return [("warn", name, f"{t}: {problems[t]}; repaired: rebuilt from the stored text ({rows[t]} rows)")
            if t in problems else
            ("ok", name, f"{t}: made by a SQLite without contentless_delete; rebuilt to delete rows by rowid "
                         f"({rows[t]} rows)") for t in redo]


FTS_PASSED = "fts-checked.json"  # in .zmem: table -> fts.stored_digest of the last state that passed


def _write_passed(record, passed: dict[str, str]) -> None:
    """Only a shortcut for the next doctor: a record that cannot be written is no problem."""
    tmp = record.with_name(f"{record.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(passed, sort_keys=True))
        os.replace(tmp, record)
    except OSError:
        tmp.unlink(missing_ok=True)


def _opinion_checks(ws: Workspace, conn=None) -> list[tuple[str, str, str]]:
    """The opinions `zmem opinions` lists, the `O` facts awaiting `zmem reflect`, and lines of
    bank/opinions.md that reflect cannot read (it goes on as if they were not there)."""
    from zmem.text import opinions as op_mod
    from zmem.query.entities import awaiting_reflect
    path = ws.root / op_mod.OPINIONS_PATH
    parsed = op_mod.read(ws.root)
    if conn is not None:
        waiting = awaiting_reflect(conn, parsed)
    else:
        conn = open_index(ws)
        try:
            waiting = awaiting_reflect(conn, parsed)
        finally:
            conn.close()
    after = (f"; {waiting} `O` fact{'s await' if waiting != 1 else ' awaits'} `zmem reflect`" if waiting else "")
    if not path.is_file():
        return [("ok", "opinions", f"no {op_mod.OPINIONS_PATH} yet; `zmem reflect` starts it from `O` facts{after}")]
    n, bullets = len(parsed.opinions), sum(o.bullet for o in parsed.opinions)
    count = (f"{op_mod.OPINIONS_PATH}: {n} opinion{'s' * (n != 1)}"
             + (f" ({bullets} written as {'a `- O` bullet' if bullets == 1 else '`- O` bullets'})" if bullets else ""))
    if parsed.warnings:
        return [("warn", "opinions", w) for w in parsed.warnings] + [("ok", "opinions", count + after)]
    return [("ok", "opinions", f"{count}, all readable{after}")]


def _marker_checks(ws: Workspace) -> list[tuple[str, str, str]]:
    """Entity pages whose zmem:begin/zmem:end markers `zmem reflect` refuses: it leaves such a page
    alone (never writes over it), so a warning, not a failure."""
    from zmem.query.entities import BEGIN, END, ENTITY_DIR
    from zmem.reflect.run import put_block
    checks = []
    pages = sorted(p for p in (ws.root / ENTITY_DIR).glob("*.md") if not p.is_symlink())  # reflect skips symlinks
    for page in pages:
        text = page.read_text(encoding="utf-8", errors="replace")
        _, problem = put_block(text, "", "")  # the test reflect makes before it writes a page
        if problem:
            line = next((n for n, s in enumerate(text.splitlines(), 1) if BEGIN.split(" (")[0] in s or END in s), 1)
            checks.append(("warn", "entity pages", f"{page.relative_to(ws.root).as_posix()}:{line}: {problem}; "
                           "`zmem reflect` leaves this page alone until it has one `<!-- zmem:begin … -->` … "
                           "`<!-- zmem:end -->` pair, or none"))
    return checks or [("ok", "entity pages", f"{len(pages)} pages, zmem:begin/zmem:end markers in order")]


def _sqlite_check() -> tuple[str, str, str]:
    conn = db.sqlite.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        return "ok", "sqlite", f"{db.DRIVER} {db.sqlite_version()} with FTS5"
    except db.Error:
        return "fail", "sqlite", f"{db.DRIVER} {db.sqlite_version()} has no FTS5; install pysqlite3-binary"
    finally:
        conn.close()
