"""Output to a full disk (here /dev/full) is the user's disk, not a bug in zmem: exit 1 with a hint,
on the entry point's plain recall and on the click command line alike (was exit 3, 'internal error')."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ENTRY = "import sys; from zmem.cli.entry import main; sys.argv[0] = 'zmem'; main()"
CLICK = "import sys; from zmem.cli.app import main; sys.argv[0] = 'zmem'; main()"
FULL = (b"zmem: cannot write: No space left on device\nhint: the disk is full or a size limit was reached "
        b"(`df -h`, `ulimit -f`); free some space, then run it again\n")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["recall", "gateway"], ["recall", "gateway", "--json"],
                                  ["recall", "gateway", "--since", "100y"], ["status"]])
@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_output_to_a_full_disk_is_an_expected_error(ws, args, unbuffered):
    # buffered, as on a user's machine, the interpreter's own flush at exit failed again after zmem's
    # message: "Exception ignored ... OSError" and exit 120 (PYTHONUNBUFFERED, set on the CI machine, hid it)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    for code in (ENTRY, CLICK):
        with open("/dev/full", "wb") as full:
            proc = subprocess.run([sys.executable, "-c", code, "-C", str(ws), *args], stdout=full,
                                  stderr=subprocess.PIPE, env=env, timeout=120)
        assert (proc.returncode, proc.stderr) == (1, FULL), (code, args)
