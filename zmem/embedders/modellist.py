"""`zmem model list`: the catalog, the installed models and the one this workspace's provider uses."""
from __future__ import annotations

import os
from pathlib import Path

from zmem.embedders import modelpull
from zmem.embedders.modelpull import installed, models_dir


def in_use(directory: str | None) -> dict | None:
    """{provider, model, model_path, why} of the embedder the workspace (or, outside one, the user's
    config) would use, `auto` resolved; None when it is keyword recall only."""
    from zmem.embedders.auto import resolve
    from zmem.errors import ZmemError
    try:
        from zmem.workspace.core import find_workspace
        settings = find_workspace(directory).config.embeddings
    except ZmemError:  # not in a workspace: the user's own config
        from zmem.workspace.config import load_config
        settings = load_config(None).embeddings
    provider, why = settings.get("provider", "auto"), "configured"
    if provider == "auto":
        resolved, why = resolve(settings)
        if resolved is None:
            return None
        settings, provider = resolved, resolved["provider"]
    if provider == "none":
        return None
    path = settings.get("model_path")
    return {"provider": provider, "model": settings.get("model") or (Path(path).name if path else None),
            "model_path": os.path.abspath(os.path.expanduser(path)) if path else None, "why": why}


def models_in_use(directory: str | None) -> dict:
    used = in_use(directory)
    used_path = used and used["model_path"]
    found = {m["path"]: m for m in installed()}
    rows = []
    for entry in modelpull.CATALOG:
        path = str(models_dir() / f"{entry.name}.onnx")
        have = found.pop(path, None)
        rows.append({"name": entry.name, "kind": entry.kind, "description": entry.description, "repo": entry.repo,
                     "revision": entry.revision, "default": entry.name == modelpull.DEFAULT, "installed": have is not None,
                     "path": path, "bytes": have["bytes"] if have else None, "outtype": have["outtype"] if have else None,
                     "source": have["source"] if have else None, "in_use": bool(have) and used_path == path})
    for m in found.values():  # imported ones
        rows.append({"name": m["name"], "kind": m["kind"], "description": None, "repo": m.get("repo"),
                     "revision": m.get("revision"), "default": False, "installed": True, "path": m["path"],
                     "bytes": m["bytes"], "outtype": m.get("outtype"), "source": m["source"], "in_use": used_path == m["path"]})
    return {"models_dir": str(models_dir()), "in_use": used, "models": rows}
