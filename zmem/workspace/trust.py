"""`zmem trust`: a committed zmem.toml may choose where notes are sent (embedding endpoints) and
what code is loaded (model files) only after its owner trusts that exact file content."""
from __future__ import annotations

import json
import os
from pathlib import Path


def _store() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "zmem" / "trusted.json"


def _digest(path: Path) -> str:
    import hashlib  # loads OpenSSL (~15 ms): only a trusted file's check hashes
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load() -> dict:
    try:
        data = json.loads(_store().read_text())
    except (OSError, ValueError, RecursionError):  # missing, damaged, or nested too deeply
        return {}
    return data if isinstance(data, dict) else {}


def state(path: Path) -> str:
    """How this user trusts the file: "trusted" (this path with exactly this content), "changed"
    (this path, trusted with another content: a pull, an edit) or "untrusted" (never, or revoked)."""
    try:
        trusted = _load().get(str(path.resolve()))
        if trusted is None:
            return "untrusted"
        return "trusted" if trusted == _digest(path) else "changed"
    except OSError:
        return "untrusted"


def trust(path: Path) -> None:
    data = _load()
    try:
        data[str(path.resolve())] = _digest(path)
    except OSError as e:
        from zmem.errors import ZmemError
        raise ZmemError(f"cannot read {path}: {e.strerror or e}", hint="check the file's permissions") from None
    _save(data)


def untrust(path: Path) -> bool:
    data = _load()
    removed = data.pop(str(path.resolve()), None) is not None
    if removed:
        _save(data)
    return removed


def _save(data: dict) -> None:
    """Write the trust list atomically; a place it cannot go is an error naming it, with a hint."""
    store = _store()
    tmp = store.with_suffix(".tmp")
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
        os.replace(tmp, store)
    except OSError as e:
        from zmem.errors import ZmemError
        try:
            tmp.unlink()
        except OSError:
            pass
        where = e.filename or store
        raise ZmemError(f"cannot save the trust list {store}: {where}: {e.strerror or e}",
                        hint="set XDG_CONFIG_HOME to a writable directory (or unset it to use ~/.config), "
                             "or fix the permissions there, then run `zmem trust` again") from None
