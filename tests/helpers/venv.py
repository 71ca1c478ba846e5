"""A second real Python environment (as another venv of the same user) that imports this zmem and the
test environment's packages through .pth files, with some packages hidden from it."""
from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import zmem


def other_venv(where: Path, hide: tuple[str, ...] = ()) -> Path:
    """Its python. hide: modules it can neither import nor find (as if not installed there)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    python = where / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "zmem-under-test.pth").write_text(
        f"{Path(zmem.__file__).parent.parent}\n{sysconfig.get_paths()['purelib']}\n")
    if hide:  # a .pth line starting with `import` runs at startup: find_spec and import then both fail
        (Path(site) / "zz-hidden.pth").write_text(
            "import sys; " + "; ".join(f"sys.modules[{m!r}] = None" for m in hide) + "\n")
    return python
