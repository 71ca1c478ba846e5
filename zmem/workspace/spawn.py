"""zmem starting zmem: detached background work (an index catch-up, embedding, session
transcripts) and a checked child (a local model's first run). The one place that builds the
`python -m zmem…` command line.

`-P`: Python would otherwise put the working directory first on sys.path for `-m`, and these
children start inside the workspace: a cloned memory repository holding a `zmem/` package would
have its code imported instead of zmem's. The git hook template runs `-P -m zmem.hookrun` for
the same reason."""
from __future__ import annotations

import os
import subprocess
import sys

from zmem.workspace.core import Workspace


def zmem_command(module: str, *args: str) -> list[str]:
    """This interpreter running a zmem module, never one found in the working directory."""
    return [sys.executable, "-P", "-m", module, *args]


def spawn_detached(ws: Workspace, args: list[str], log_name: str, env: dict | None = None, cwd=None) -> int:
    """`zmem -C WORKSPACE ARGS…` in its own session, output to .zmem/LOG_NAME: the caller (a git
    command, a recall) returns at once. cwd: its working directory (default: the caller's, which a
    relative GIT_DIR in a hook's environment may need). Returns its pid."""
    ws.state_dir.mkdir(exist_ok=True)
    with open(ws.state_dir / log_name, "ab") as log:
        return subprocess.Popen(zmem_command("zmem", "-C", str(ws.root), *args), stdin=subprocess.DEVNULL, stdout=log,
                         stderr=log, start_new_session=True, close_fds=True, env=env or dict(os.environ), cwd=cwd).pid
