"""provider = "auto" (the default): a configured model or endpoint, else a local Ollama with an
embedding model (a fake Ollama on loopback), else an installed model, else keyword recall exactly as
with provider = "none". And `zmem embed` passes on the provider's own hint."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers.workspace import commit_all, recall_json, run, user_config, install_hint, write, zmem_proc
from helpers.fake_hub import FakeOllama
from zmem.embedders import auto, make_embedder

NOMIC = {"name": "nomic-embed-text:latest", "details": {"family": "nomic-bert", "families": ["nomic-bert"]}}
LLAMA = {"name": "llama3.2:3b", "details": {"family": "llama", "families": ["llama"]}}


@pytest.fixture(autouse=True)
def _fresh_detection():
    auto._seen.clear()  # what this process remembered of another test's Ollama
    yield
    auto._seen.clear()


def test_with_nothing_installed_recall_is_what_provider_none_gives(ws):
    default = recall_json(ws, "gateway mac studio")
    st = json.loads(run(["-C", str(ws), "status", "--json"]).stdout)["embeddings"]
    assert st["provider"] == "none" and st["auto"]["chose"] == "none"
    assert "no Ollama at 127.0.0.1:9" in st["auto"]["why"] and "zmem model pull" in st["auto"]["why"]
    text = run(["-C", str(ws), "status"]).stdout
    assert "provider auto:  none, because nothing found" in text
    user_config('[embeddings]\nprovider = "none"\n')
    assert recall_json(ws, "gateway mac studio") == default
    assert default["mode"] == "bm25" and default["warnings"] == []
    assert not (ws / ".zmem" / "embed.log").exists()  # nothing was started


def test_a_local_ollama_embedding_model_is_found_and_used(ws, monkeypatch):
    with FakeOllama([LLAMA, NOMIC]) as ollama:
        monkeypatch.setenv("OLLAMA_HOST", ollama.host)
        settings, why = auto.resolve({})
        assert settings["provider"] == "openai" and settings["model"] == "nomic-embed-text:latest"
        assert settings["base_url"] == f"http://{ollama.host}/v1" and settings["query_prefix"] == "search_query: "
        assert why == f"Ollama at {ollama.host} has the embedding model nomic-embed-text:latest"
        write(ws, "bank/world.md", "# World\n\n- the gateway host is the mac studio in the office\n")
        commit_all(ws)
        proc = zmem_proc("-C", str(ws), "index", "--json")
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)["embeddings"]
        assert report["provider"] == "openai" and report["pending"] == 0 and report["embedded"] > 0
        assert "/v1/embeddings" in ollama.requests
        res = recall_json(ws, "which computer relays", "--mode", "hybrid", "--explain")
        assert res["mode"] == "hybrid" and any(r["explain"]["vector_similarity"] is not None for r in res["results"])
        st = json.loads(zmem_proc("-C", str(ws), "status", "--json").stdout)["embeddings"]
        assert st["auto"] == {"chose": "openai", "why": why} and st["model"] == "nomic-embed-text:latest"
        listed = json.loads(run(["-C", str(ws), "model", "list", "--json"]).stdout)
        assert listed["in_use"]["provider"] == "openai" and listed["in_use"]["model"] == "nomic-embed-text:latest"


def test_a_recall_only_starts_embedding_in_the_background(tmp_path, monkeypatch):
    root = tmp_path / "fresh"
    assert run(["init", "--no-hooks", str(root)]).exit_code == 0
    write(root, "memory/2025-11-24.md", "# 2025-11-24\n\n- the gateway runs on the mac studio\n")
    commit_all(root)
    with FakeOllama([NOMIC]) as ollama:
        monkeypatch.setenv("OLLAMA_HOST", ollama.host)
        res = recall_json(root, "gateway")
        assert res["mode"] == "bm25" and res["results"]
        assert any("embedding started in the background" in w for w in res["warnings"]), res["warnings"]


def test_an_ollama_without_an_embedding_model_is_not_used_and_its_answer_is_remembered(monkeypatch):
    with FakeOllama([LLAMA]) as ollama:
        monkeypatch.setenv("OLLAMA_HOST", f"http://{ollama.host}/")
        settings, why = auto.resolve({})
        assert settings is None and f"Ollama at {ollama.host} has no embedding model" in why
        assert ollama.requests == ["/api/tags"]
        auto._seen.clear()  # as a new process: the answer comes from the cache file
        assert auto.resolve({})[0] is None and ollama.requests == ["/api/tags"]


def test_configured_settings_come_first_and_a_key_in_the_environment_is_not_an_endpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("GEMINI_API_KEY", "g-test")
    assert auto.resolve({})[0] is None and make_embedder({}) is None
    settings, why = auto.resolve({"base_url": "http://127.0.0.1:1/v1", "model": "m"})
    assert settings["provider"] == "openai" and "endpoint is configured" in why
    assert auto.resolve({"api_key_env": "GEMINI_API_KEY", "api": "native"})[0]["provider"] == "gemini"
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert auto.resolve({"model_path": str(gguf)})[0]["provider"] == "local"
    assert auto.resolve({"model_path": str(tmp_path)})[0]["provider"] == "onnx"


def test_an_untrusted_zmem_toml_may_ask_for_auto_but_not_choose_an_endpoint(ws):
    (ws / "zmem.toml").write_text('[embeddings]\nprovider = "auto"\nbase_url = "http://198.51.100.7/v1"\n')
    from zmem.workspace.config import load_config
    cfg = load_config(ws)
    assert cfg.embeddings == {"provider": "auto"} and cfg.untrusted == ("embeddings.base_url",)
    user_config('[embeddings]\nprovider = "none"\n')  # the user's own "none" is not overridden
    assert load_config(ws).embeddings == {"provider": "none"}


def test_init_says_what_auto_found_and_its_template_says_auto(tmp_path, monkeypatch):
    from zmem.workspace.config import DEFAULT_TOML
    assert '# provider = "auto"' in DEFAULT_TOML
    res = run(["init", "--no-hooks", str(tmp_path / "a")])
    assert "semantic recall: off (keyword recall) until provider auto finds a model: `zmem model pull`" in res.stdout
    with FakeOllama([NOMIC]) as ollama:
        monkeypatch.setenv("OLLAMA_HOST", ollama.host)
        res = run(["init", "--no-hooks", str(tmp_path / "b")])
    assert (f"semantic recall: provider auto uses openai, because Ollama at {ollama.host} has the embedding "
            "model nomic-embed-text:latest") in res.stdout


def test_embed_passes_on_the_providers_own_hint(ws, tmp_path):
    """onnxruntime missing (a shadow package that fails to import, as a missing one does): the hint
    says what to install, not only "fix the settings"."""
    pytest.importorskip("onnx")
    pytest.importorskip("tokenizers")
    from helpers.tiny_bert import make_tiny_bert
    from zmem.embedders.modelimport import import_onnx
    model = import_onnx(make_tiny_bert(tmp_path / "tiny"), tmp_path / "tiny.onnx")["out"]
    shadow = tmp_path / "shadow" / "onnxruntime"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'onnxruntime'\", "
                                        "name='onnxruntime')\n")
    user_config(f'[embeddings]\nprovider = "onnx"\nmodel_path = "{model}"\n')
    path = os.pathsep.join([str(shadow.parent), os.environ.get("PYTHONPATH", "")])
    proc = zmem_proc("-C", str(ws), "embed", env={"PYTHONPATH": path})
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2 and "needs onnxruntime" in lines[0], proc.stderr
    assert lines[1] == f"hint: {install_hint('semantic')}, then run `zmem embed` again"
    assert Path(model).is_dir()


def test_a_host_that_does_not_answer_costs_one_short_wait_then_is_remembered(monkeypatch):
    import socket
    with socket.socket() as listener:  # accepts connections (the kernel does) but never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        host = f"127.0.0.1:{listener.getsockname()[1]}"
        monkeypatch.setenv("OLLAMA_HOST", host)
        assert auto.resolve({})[0] is None
    remembered = json.loads((Path(os.environ["HOME"]) / ".cache" / "zmem" / "ollama-detect.json").read_text())
    assert remembered[host]["models"] is None
    auto._seen.clear()
    assert auto._remembered(host) == (True, None)  # a new process does not wait on it again for 30 s


@pytest.mark.slow
def test_an_ollama_too_busy_to_answer_keeps_its_last_list(monkeypatch):
    """Else a loaded machine would switch auto to another model, and re-embed everything."""
    import socket
    import time
    with FakeOllama([NOMIC]) as ollama:
        monkeypatch.setenv("OLLAMA_HOST", ollama.host)
        assert auto.resolve({})[0]["model"] == "nomic-embed-text:latest"
        port = ollama.httpd.server_address[1]
    cache = Path(os.environ["HOME"]) / ".cache" / "zmem" / "ollama-detect.json"
    data = json.loads(cache.read_text())
    data[ollama.host]["at"] = time.time() - 3600  # an hour-old answer: no longer fresh
    cache.write_text(json.dumps(data))
    auto._seen.clear()
    with socket.socket() as busy:  # the same port, accepting but never answering
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        busy.bind(("127.0.0.1", port))
        busy.listen(4)
        settings, why = auto.resolve({})
    assert settings["model"] == "nomic-embed-text:latest" and "Ollama at" in why
