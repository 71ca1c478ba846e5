"""A zmem command in a new interpreter, through the `zmem` entry point agents run (zmem.cli.entry),
reporting what it loaded and which lazily compiled patterns it compiled: facts for the startup tests,
not timings (bench/README.md has the timings)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# The command owns stdout and stderr; the report goes to the file named by the first argument.
WRAPPER = """
import json, sys
report_path = sys.argv.pop(1)
sys.argv[0], code = "zmem", None
from zmem.cli.entry import main
try:
    main()
except SystemExit as e:
    code = e.code
from zmem.text import lazyre
compiled = {f"{name}.{attr}": value._compiled is not None for name, module in list(sys.modules.items())
            if name.startswith("zmem.") for attr, value in vars(module).items() if isinstance(value, lazyre.LazyPattern)}
with open(report_path, "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules), "compiled": compiled}, out)
"""


def fresh(*args: str, env: dict | None = None) -> tuple[dict, subprocess.CompletedProcess]:
    """({code, modules, compiled}, the process) of `zmem ARGS` in a new interpreter. compiled maps
    `module.NAME` of every LazyPattern of a loaded zmem module to whether it was compiled."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.json"
        proc = subprocess.run([sys.executable, "-c", WRAPPER, str(path), *args], capture_output=True, text=True,
                              timeout=120, env=env if env is not None else dict(os.environ))
        assert path.exists(), proc.stderr
        return json.loads(path.read_text()), proc
