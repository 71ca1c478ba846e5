"""A Ctrl-C while the entry point still imports the command line (or the library, on the plain recall
path) is said as every interruption is, `zmem: interrupted` and exit 130, not a traceback."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

# the child's import of `module` is interrupted, as a Ctrl-C in its first ~80 ms would
INTERRUPTED_IMPORT = """import sys
INTERRUPTED = sys.argv.pop(1)
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == INTERRUPTED:
            raise KeyboardInterrupt
sys.meta_path.insert(0, Interrupt())
sys.argv[0] = "zmem"
from zmem.cli.entry import main
main()
"""


@pytest.mark.parametrize("module, args", [
    ("zmem.cli.app", ["status"]),  # the click command line
    ("zmem.memory", ["recall", "gateway"]),  # the plain recall
])
def test_an_interrupted_start_says_interrupted_with_exit_130(ws, module, args):
    proc = subprocess.run([sys.executable, "-c", INTERRUPTED_IMPORT, module, "-C", str(ws), *args],
                          capture_output=True, timeout=120, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert (proc.returncode, proc.stdout, proc.stderr) == (130, b"", b"zmem: interrupted\n")
