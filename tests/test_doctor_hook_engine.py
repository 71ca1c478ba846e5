"""`zmem doctor` says when the installed git hooks run another environment's Python that lacks the engine
the index's vectors need (the shim bakes the installing interpreter in): a commit's chunks would stay
unembedded until a command of this environment embeds them. With the command that fixes it. Real venvs,
real hooks, the tiny generated onnx model."""
from __future__ import annotations

import shlex
import subprocess

import pytest

pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from helpers.tiny_bert import onnx_workspace  # noqa: E402
from helpers.venv import other_venv  # noqa: E402
from helpers.workspace import zmem_proc, zmem_python  # noqa: E402


def _doctor(root) -> list[str]:
    return [line.replace("[WARN]", "[warn]") for line in zmem_proc("-C", str(root), "doctor").stdout.splitlines()
            if "hooks:" in line]


def _install_hooks(python, root) -> None:
    proc = subprocess.run([str(python), "-m", "zmem", "-C", str(root), "hooks", "install"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_doctor_says_the_hooks_python_lacks_the_vectors_engine_and_how_to_fix_it(tmp_path, tiny_onnx):
    ws, _ = onnx_workspace(tmp_path / "ws", tiny_onnx)
    python = other_venv(tmp_path / "mcp only", hide=("onnxruntime",))
    _install_hooks(python, ws.root)
    lines = _doctor(ws.root)
    fix = f"{shlex.quote(zmem_python())} -m zmem -C {shlex.quote(str(ws.root))} hooks install"
    warned = [line for line in lines if line.startswith("[warn] hooks:")]
    assert len(warned) == 1, lines
    assert (f"post-commit, post-merge, post-checkout, post-rewrite run {python}, which lacks onnxruntime" in warned[0]
            and "vectors are onnx's" in warned[0] and f"`{fix}`" in warned[0]), warned
    # the command it names fixes it: the hooks run this environment's Python, and doctor is content
    subprocess.run(shlex.split(fix), check=True, capture_output=True, timeout=120)
    assert not [line for line in _doctor(ws.root) if line.startswith("[warn]")], _doctor(ws.root)


def test_hooks_from_another_venv_that_has_the_engine_are_fine(tmp_path, tiny_onnx):
    ws, _ = onnx_workspace(tmp_path / "ws", tiny_onnx)
    python = other_venv(tmp_path / "full")
    _install_hooks(python, ws.root)
    lines = _doctor(ws.root)
    assert lines and not [line for line in lines if line.startswith("[warn]")], lines
    assert f"installed (runs {python})" in lines[0]
