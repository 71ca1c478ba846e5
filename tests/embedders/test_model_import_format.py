"""`zmem model import DIR` writes what the installed engine runs (issue 25 item 6): onnx on the compile-free
install (the semantic extra's onnxruntime), gguf where llama-cpp-python is installed and onnxruntime is not;
and after an import that provider "auto" picks up, it asks for no config line. Real processes; an engine
is hidden from (or stood in for) a process by a directory on PYTHONPATH."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("numpy")
pytest.importorskip("onnx")
pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

from helpers.tiny_bert import make_tiny_bert  # noqa: E402
from helpers.workspace import install_hint, run, write, zmem_proc  # noqa: E402


def _env(tmp_path: Path, *, hide=(), stand_in=()) -> dict:
    """PYTHONPATH for a zmem process that cannot find the modules in hide and finds a stand-in for those
    in stand_in (found by importlib.util.find_spec, as an installed package is)."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text("import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in hide))
    for name in stand_in:
        write(site, f"{name}/__init__.py", "")
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)}


def _models() -> Path:
    return Path(os.environ["HOME"]) / ".cache" / "zmem" / "models"


def test_the_compile_free_install_imports_onnx_that_provider_auto_uses_with_no_config_line(tmp_path, ws):
    pytest.importorskip("onnxruntime")
    src = make_tiny_bert(tmp_path / "tiny-bert")
    proc = zmem_proc("model", "import", str(src), env=_env(tmp_path, hide=("llama_cpp",)))
    assert proc.returncode == 0, proc.stderr
    out = _models() / "tiny-bert.onnx"
    assert (out / "model.onnx").is_file() and (out / "tokenizer.json").is_file()
    assert "[embeddings]" not in proc.stdout and "model_path" not in proc.stdout and 'provider = "onnx"' not in proc.stdout
    assert 'provider = "auto" (the default) uses it' in proc.stdout and "nothing to add" in proc.stdout
    assert proc.stderr == ""
    # and it does: provider auto (nothing configured) embeds with it
    write(ws, "bank/world.md", "# World\n\n- the gateway host is the mac studio\n")
    assert run(["-C", str(ws), "index", "-q"]).exit_code == 0
    st = json.loads(zmem_proc("-C", str(ws), "status", "--json").stdout)
    assert st["embeddings"]["provider"] == "onnx" and st["embeddings"]["auto"]["chose"] == "onnx"


def test_with_llama_cpp_and_no_onnxruntime_the_default_is_gguf(tmp_path):
    pytest.importorskip("gguf")
    src = make_tiny_bert(tmp_path / "tiny-bert")
    proc = zmem_proc("model", "import", str(src), env=_env(tmp_path, hide=("onnxruntime",), stand_in=("llama_cpp",)))
    assert proc.returncode == 0, proc.stderr
    assert (_models() / "tiny-bert.f16.gguf").read_bytes()[:4] == b"GGUF"
    assert 'provider = "local"' in proc.stdout and "model_path" in proc.stdout  # auto does not load a GGUF


def test_with_neither_engine_it_writes_onnx_and_says_what_to_install(tmp_path):
    src = make_tiny_bert(tmp_path / "tiny-bert")
    proc = zmem_proc("model", "import", str(src), env=_env(tmp_path, hide=("onnxruntime", "llama_cpp")))
    assert proc.returncode == 0, proc.stderr
    assert (_models() / "tiny-bert.onnx" / "model.onnx").is_file()
    assert proc.stderr.splitlines() == [
        f"warning: the onnx engine that runs it is not installed (onnxruntime): {install_hint('semantic')}"]
    assert 'provider = "auto" (the default) uses it' in proc.stdout  # once the engine is there: nothing to add


def test_an_import_outside_the_models_directory_still_gets_its_config_line(tmp_path):
    pytest.importorskip("onnxruntime")
    src = make_tiny_bert(tmp_path / "tiny-bert")
    out = tmp_path / "elsewhere.onnx"
    proc = zmem_proc("model", "import", str(src), "--out", str(out), env=_env(tmp_path, hide=("llama_cpp",)))
    assert proc.returncode == 0, proc.stderr
    assert f'provider = "onnx"\nmodel_path = {json.dumps(str(out))}' in proc.stdout
