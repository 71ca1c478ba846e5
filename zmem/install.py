"""How this zmem was installed, as the one command that adds an optional extra (`semantic`, `mcp`,
`local`) to it. Every hint that asks for an extra comes from `pip_install(extra)`: a hint saying
`pip install 'zmem[semantic]'` fails ("No matching distribution") for zmem installed from a checkout,
and a bare `pip` may be another interpreter's.

The installation is read from the distribution's PEP 610 `direct_url.json`: none means an index
(PyPI) install; `dir_info` a local directory (editable or not); `archive_info` a wheel or sdist file
or URL; `vcs_info` a git URL. zmem running from a source tree with no distribution at all (on
PYTHONPATH) is treated as that checkout. The command runs this interpreter's pip
(`<sys.executable> -m pip`), so the extra lands where zmem runs."""
from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

_DIST = "zmem"


def pip_install(extra: str) -> str:
    """The command that installs zmem's optional `extra` into the zmem that is running, e.g.
    `/venv/bin/python -m pip install -e '/src/zmem[semantic]'` for an editable checkout install,
    `/venv/bin/python -m pip install 'zmem[semantic]'` for one from an index."""
    return _pip("install", _requirement(extra))


def pip_upgrade(package: str) -> str:
    """The command that upgrades one of an extra's packages where zmem runs."""
    from shlex import quote
    return _pip("install", "-U", quote(package))


def _pip(*args: str) -> str:
    """This interpreter's pip running args; in an environment made without pip (`uv venv`,
    `python -m venv --without-pip`), uv's pip aimed at this interpreter, or pip put there first."""
    import shutil
    from importlib.util import find_spec
    from shlex import quote  # (lazy, as in _requirement: hints are built on error paths only)
    exe = quote(sys.executable)
    try:
        has_pip = find_spec("pip") is not None
    except (ImportError, ValueError):
        has_pip = False
    if has_pip:
        return " ".join([exe, "-m", "pip", *args])
    if shutil.which("uv"):
        return " ".join(["uv", "pip", args[0], "--python", exe, *args[1:]])
    return f"{exe} -m ensurepip && " + " ".join([exe, "-m", "pip", *args])


def _requirement(extra: str) -> str:
    """What pip is given: the checkout with the extra (`-e '<dir>[x]'`), `zmem[x] @ <url>` for an
    archive or a VCS install, or `zmem[x]` from an index."""
    from shlex import quote
    origin = installed_from()
    kind = origin["kind"]
    if kind == "directory":
        spec = quote(f"{origin['path']}[{extra}]")
        return f"-e {spec}" if origin.get("editable") else spec
    if kind in ("archive", "vcs"):
        return quote(f"{_DIST}[{extra}] @ {origin['url']}")
    return quote(f"{_DIST}[{extra}]")


@functools.lru_cache(maxsize=1)
def installed_from() -> dict:
    """{kind: "index" | "directory" | "archive" | "vcs", path (a directory), editable, url}."""
    here = Path(__file__).resolve().parent  # the zmem package that is running
    try:
        from importlib import metadata
        dist = metadata.distribution(_DIST)
    except Exception:  # noqa: BLE001 - no metadata at all: zmem runs from a source tree
        dist = None
    if dist is None or not _is_this(dist, here):
        if (here.parent / "pyproject.toml").is_file():
            return {"kind": "directory", "path": str(here.parent), "editable": True}
        return {"kind": "index"}
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "null")
    except (OSError, ValueError):
        direct = None
    if not isinstance(direct, dict) or not isinstance(direct.get("url"), str):
        return {"kind": "index"}
    url = direct["url"]
    if isinstance(direct.get("dir_info"), dict):
        path = _file_path(url)
        if path:
            return {"kind": "directory", "path": path, "editable": bool(direct["dir_info"].get("editable"))}
    if isinstance(direct.get("vcs_info"), dict):
        vcs = direct["vcs_info"]
        rev = vcs.get("commit_id") or vcs.get("requested_revision")
        return {"kind": "vcs", "url": f"{vcs.get('vcs', 'git')}+{url}" + (f"@{rev}" if rev else "")}
    return {"kind": "archive", "url": url}


def _is_this(dist, here: Path) -> bool:
    """Whether `dist` is the distribution of the zmem package at `here` (and not another zmem found
    first on sys.path): its files hold this package, or its direct URL names the directory above it."""
    try:
        located = Path(dist.locate_file("zmem/__init__.py")).resolve()
        if located.parent == here:
            return True
        direct = json.loads(dist.read_text("direct_url.json") or "null")
    except (OSError, ValueError, NotImplementedError):
        return True  # cannot tell: trust the metadata Python found
    path = _file_path(direct.get("url", "")) if isinstance(direct, dict) else None
    return bool(path) and Path(path).resolve() == here.parent


def _file_path(url: str) -> str | None:
    if not url.startswith("file:"):
        return None
    from urllib.parse import unquote, urlparse  # not urllib.request: it imports ssl, http, email
    path = unquote(urlparse(url).path)
    if sys.platform == "win32" and path[:1] == "/" and path[2:3] == ":":
        path = path[1:]  # file:///C:/src -> C:/src
    return path
