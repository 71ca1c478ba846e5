"""The native Gemini provider through a real batchEmbedContents server on loopback, and
[embeddings.fallback] with its own settings."""
from __future__ import annotations

import json
import math
import socket
import time

import pytest

from helpers.workspace import commit_all, recall_json, run, user_config, write
from helpers.gemini_server import GeminiServer, gemini_vector
from zmem.workspace.config import load_config
from zmem.embedders import fallback_settings, make_embedder
from zmem.embedders.base import Embedder, EmbeddingError
from zmem.embedders.gemini import GeminiNativeEmbedder
from zmem.errors import ConfigError

KEY = "g-test-key"


@pytest.fixture
def server():
    with GeminiServer(key=KEY) as s:
        yield s


@pytest.fixture
def fast_retries(monkeypatch):
    monkeypatch.setattr(Embedder, "backoff_base", 0.001)


def dead_url() -> str:
    """A loopback address nothing listens on: connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def embedder(server, **kw) -> GeminiNativeEmbedder:
    e = GeminiNativeEmbedder(base_url=server.base_url, api_key=kw.pop("api_key", KEY), **kw)
    e.backoff_base = 0.001
    return e


def unit(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def test_batches_of_at_most_100_with_key_header_and_unit_vectors(server):
    e = embedder(server)
    texts = [f"note {i} about the relay" for i in range(250)]
    vectors = e.embed(texts)
    calls = server.batch_calls()
    assert [len(c["body"]["requests"]) for c in calls] == [100, 100, 50]
    assert all(c["path"] == "/v1beta/models/gemini-embedding-001:batchEmbedContents" for c in calls)
    assert calls[0]["headers"]["x-goog-api-key"] == KEY and "key=" not in calls[0]["path"]
    first = calls[0]["body"]["requests"][0]
    assert first["model"] == "models/gemini-embedding-001" and first["content"] == {"parts": [{"text": texts[0]}]}
    assert "outputDimensionality" not in first
    assert len(vectors) == 250 and e.dimensions == 256
    assert abs(sum(x * x for x in gemini_vector(texts[7])) - 9.0) < 1e-6  # the server's are not unit length
    assert all(abs(sum(x * x for x in v) - 1.0) < 1e-6 for v in vectors)  # ours are
    assert all(abs(a - b) < 1e-9 for a, b in zip(vectors[137], unit(gemini_vector(texts[137]))))  # order kept
    # a configured batch_size above Gemini's limit is capped at 100
    e = make_embedder({"provider": "gemini", "base_url": server.base_url, "batch_size": 500})
    assert isinstance(e, GeminiNativeEmbedder) and e.batch_size == 100
    assert make_embedder({"provider": "gemini", "base_url": server.base_url, "batch_size": 8}).batch_size == 8


def test_task_type_differs_for_query_and_document(server):
    e = embedder(server)
    e.embed(["the gateway lives on the Mac Studio"], "document")
    e.embed(["which computer runs the relay"], "query")
    e.embed(["another note"])
    types = [c["body"]["requests"][0]["taskType"] for c in server.batch_calls()]
    assert types == ["RETRIEVAL_DOCUMENT", "RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT"]


@pytest.mark.slow
def test_429_honours_retry_after_and_5xx_is_retried(server):
    e = embedder(server)
    server.faults = [("429", 0.3), ("500",), ("503",)]
    t = time.monotonic()
    assert len(e.embed(["hello"])) == 1
    assert time.monotonic() - t >= 0.3  # waited as Retry-After said
    assert len(server.batch_calls()) == 4
    server.faults = [("429-info", 0.2)]  # no header: Gemini's RetryInfo.retryDelay in the body
    t = time.monotonic()
    assert len(e.embed(["hello"])) == 1
    assert time.monotonic() - t >= 0.2


def test_timeouts_and_refused_connections_are_retried_then_give_up(server):
    e = embedder(server, timeout=0.3)
    server.faults = [("slow", 1.0)]
    assert len(e.embed(["hello"])) == 1  # the second attempt answers in time
    e.max_retries = 2
    server.faults = [("500",)] * 3
    with pytest.raises(EmbeddingError) as err:
        e.embed(["hello"])
    assert "gave up after 2 retries" in err.value.message and "server error 500" in err.value.message
    dead = GeminiNativeEmbedder(base_url=dead_url(), api_key=KEY)
    dead.backoff_base, dead.max_retries = 0.001, 1
    with pytest.raises(EmbeddingError) as err:
        dead.embed(["hello"])
    assert "cannot reach" in err.value.message


def test_bad_or_missing_key_is_a_clear_error_and_not_retried(server, monkeypatch):
    e = embedder(server, api_key="wrong")
    with pytest.raises(EmbeddingError) as err:
        e.embed(["hello"])
    assert "rejected the API key" in err.value.message and "API key not valid" in err.value.message
    assert "GEMINI_API_KEY" in err.value.hint
    assert len(server.batch_calls()) == 1
    monkeypatch.setenv("MY_GEMINI_KEY", "also-wrong")
    e = make_embedder({"provider": "gemini", "base_url": server.base_url, "api_key_env": "MY_GEMINI_KEY"})
    with pytest.raises(EmbeddingError) as err:
        e.embed(["hello"])
    assert "MY_GEMINI_KEY" in err.value.hint
    monkeypatch.delenv("MY_GEMINI_KEY")
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    e = make_embedder({"provider": "gemini", "base_url": server.base_url})  # no key at all: 403
    with pytest.raises(EmbeddingError) as err:
        e.embed(["hello"])
    assert "403" in err.value.message and "GEMINI_API_KEY" in err.value.hint
    with pytest.raises(EmbeddingError) as err:  # Google's endpoint without a key: refused before any call
        make_embedder({"provider": "gemini"})
    assert "GEMINI_API_KEY" in err.value.hint


def test_unknown_model_is_a_clear_error(server):
    with pytest.raises(EmbeddingError) as err:
        embedder(server, model="no-such-model").embed(["hello"])
    assert "no-such-model" in err.value.message and "gemini-embedding-001" in err.value.hint


def test_dimensions_are_sent_and_a_wrong_dimension_is_a_clear_error(server):
    e = embedder(server, dimensions=32)
    v = e.embed(["hello world"])[0]
    assert server.batch_calls()[-1]["body"]["requests"][0]["outputDimensionality"] == 32
    assert len(v) == 32 and abs(sum(x * x for x in v) - 1.0) < 1e-6  # truncated, then normalized
    server.faults = [("dims", 48)]
    with pytest.raises(EmbeddingError) as err:
        e.embed(["hello"])
    assert "48 dimensions, expected 32" in err.value.message and "outputDimensionality" in err.value.hint
    with pytest.raises(EmbeddingError) as err:  # more than the model has: Gemini answers 400
        embedder(server, dimensions=4096).embed(["hello"])
    assert "dimensions = 4096" in err.value.message and "3072" in err.value.hint


def test_fingerprint_names_api_task_types_and_endpoint_without_secrets():
    a = GeminiNativeEmbedder(base_url="https://user:pw@proxy.example:8443/gemini/?key=sekrit", api_key="AIza-secret")
    fp = json.loads(a.fingerprint())
    assert fp["provider"] == "gemini" and fp["model"] == "gemini-embedding-001" and fp["api"] == "native"
    assert fp["endpoint"] == "https://proxy.example:8443/gemini/v1beta"
    assert fp["task_types"] == {"document": "RETRIEVAL_DOCUMENT", "query": "RETRIEVAL_QUERY"}
    assert not any(s in a.fingerprint() for s in ("sekrit", "AIza-secret", "pw"))
    assert a.url() == "https://proxy.example:8443/gemini/v1beta/models/gemini-embedding-001:batchEmbedContents?key=sekrit"
    default = GeminiNativeEmbedder()
    assert json.loads(default.fingerprint())["endpoint"] == "https://generativelanguage.googleapis.com/v1beta"
    assert GeminiNativeEmbedder(base_url="https://generativelanguage.googleapis.com/v1/").endpoint().endswith("/v1")
    others = [GeminiNativeEmbedder(dimensions=768), GeminiNativeEmbedder("text-embedding-004"),
              GeminiNativeEmbedder(query_prefix="q: ")]
    assert len({default.fingerprint(), *(o.fingerprint() for o in others)}) == 4
    assert GeminiNativeEmbedder("models/gemini-embedding-001").fingerprint() == default.fingerprint()


def test_api_switch_between_native_and_openai_compatible(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "g-key")
    assert isinstance(make_embedder({"provider": "gemini"}), GeminiNativeEmbedder)
    assert isinstance(make_embedder({"provider": "auto", "api_key_env": "GEMINI_API_KEY", "api": "native"}),
                      GeminiNativeEmbedder)
    from zmem.embedders.openai import GEMINI_BASE_URL, OpenAIEmbedder
    compat = make_embedder({"provider": "gemini", "api": "openai"})
    assert isinstance(compat, OpenAIEmbedder) and compat.base_url == GEMINI_BASE_URL
    assert compat.fingerprint() != make_embedder({"provider": "gemini"}).fingerprint()
    # an OpenAI-style base_url means the compatible route unless `api` says otherwise
    assert isinstance(make_embedder({"provider": "gemini", "base_url": "http://127.0.0.1:9/v1"}), OpenAIEmbedder)
    assert isinstance(make_embedder({"provider": "gemini", "base_url": GEMINI_BASE_URL}), OpenAIEmbedder)
    assert isinstance(make_embedder({"provider": "gemini", "base_url": "http://127.0.0.1:9/v1", "api": "native"}),
                      GeminiNativeEmbedder)


@pytest.fixture
def semantic_ws(ws, server):
    write(ws, "bank/world.md", "# World\n\n- The gateway lives on the Mac Studio in the office.\n\n"
          "- Ana drinks espresso every morning.\n")
    commit_all(ws)
    return ws


def test_recall_end_to_end_with_gemini_in_the_user_config(semantic_ws, server, monkeypatch):
    monkeypatch.setenv("ZMEM_GEMINI_KEY", KEY)
    user_config(f'[embeddings]\nprovider = "gemini"\nbase_url = "{server.base_url}"\napi_key_env = "ZMEM_GEMINI_KEY"\n')
    res = run(["-C", str(semantic_ws), "index", "--json"])
    assert res.exit_code == 0, res.output
    emb = json.loads(res.stdout)["embeddings"]
    assert emb["provider"] == "gemini" and emb["error"] is None and emb["pending"] == 0 and emb["embedded"] > 0
    assert {r["taskType"] for c in server.batch_calls() for r in c["body"]["requests"]} == {"RETRIEVAL_DOCUMENT"}
    query = "which computer runs the relay"
    assert recall_json(semantic_ws, query, "--mode", "bm25")["results"] == []
    out = recall_json(semantic_ws, query, "--mode", "vector")
    assert out["mode"] == "vector" and out["results"][0]["path"] == "bank/world.md"
    assert "gateway lives on the Mac Studio" in out["results"][0]["snippet"]
    last = server.batch_calls()[-1]["body"]["requests"]
    assert len(last) == 1 and last[0]["taskType"] == "RETRIEVAL_QUERY" and last[0]["content"]["parts"][0]["text"] == query
    hybrid = recall_json(semantic_ws, query)
    assert hybrid["mode"] == "hybrid" and hybrid["results"][0]["path"] == "bank/world.md"
    assert not any("fallback provider" in w or "BM25" in w for w in hybrid["warnings"])


def test_fallback_table_with_its_own_settings_answers_when_the_primary_is_down(semantic_ws, server, monkeypatch,
                                                                               fast_retries):
    monkeypatch.setenv("PRIMARY_KEY", "primary-key")
    monkeypatch.setenv("FALLBACK_KEY", KEY)
    user_config(f'[embeddings]\nprovider = "gemini"\nbase_url = "{dead_url()}"\napi_key_env = "PRIMARY_KEY"\n'
                f'dimensions = 768\n\n'
                f'[embeddings.fallback]\nprovider = "gemini"\nmodel = "text-embedding-004"\n'
                f'base_url = "{server.base_url}"\napi_key_env = "FALLBACK_KEY"\n')
    res = run(["-C", str(semantic_ws), "index", "--json"])
    assert res.exit_code == 0, res.output
    emb = json.loads(res.stdout)["embeddings"]
    assert emb["provider"] == "gemini" and emb["error"] is None and emb["pending"] == 0
    calls = server.batch_calls()
    assert calls and all(c["path"] == "/v1beta/models/text-embedding-004:batchEmbedContents" for c in calls)
    assert all(c["headers"]["x-goog-api-key"] == KEY for c in calls)  # its own key, not the primary's
    assert all("outputDimensionality" not in r for c in calls for r in c["body"]["requests"])  # nor its dimensions
    out = recall_json(semantic_ws, "which computer runs the relay", "--mode", "vector")
    assert out["results"][0]["path"] == "bank/world.md"
    assert any("fallback provider" in w for w in out["warnings"])


@pytest.mark.slow
def test_fallback_table_can_be_an_openai_endpoint(semantic_ws, server, monkeypatch, fast_retries):
    from helpers.embed_server import EmbeddingServer
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_FB_KEY", "sk-fallback")
    with EmbeddingServer() as oai:
        oai.require_key = "sk-fallback"
        user_config(f'[embeddings]\nprovider = "gemini"\nbase_url = "{dead_url()}"\n\n'
                    f'[embeddings.fallback]\nprovider = "openai"\nmodel = "fake-embed"\n'
                    f'base_url = "{oai.base_url}"\napi_key_env = "OPENAI_FB_KEY"\n')
        emb = json.loads(run(["-C", str(semantic_ws), "index", "--json"]).stdout)["embeddings"]
        assert emb["provider"] == "openai" and emb["pending"] == 0 and emb["error"] is None
        assert {c["body"]["model"] for c in oai.embedding_calls()} == {"fake-embed"}
        out = recall_json(semantic_ws, "which computer runs the relay", "--mode", "vector")
        assert out["results"][0]["path"] == "bank/world.md"
        assert any("fallback provider openai" in w for w in out["warnings"])
    assert server.batch_calls() == []


def test_fallback_settings_table_shorthand_and_merging(tmp_path, monkeypatch):
    assert fallback_settings({"provider": "local", "model_path": "m.gguf"}) is None
    assert fallback_settings({"provider": "openai", "fallback": "openai"}) is None
    short = fallback_settings({"provider": "openai", "model": "m", "fallback": "gemini"})
    assert short == {"provider": "gemini", "model": "m"}  # shorthand: the primary's settings
    table = fallback_settings({"provider": "openai", "model": "m", "fallback": {"provider": "gemini"}})
    assert table == {"provider": "gemini"}  # a table inherits nothing
    assert fallback_settings({"fallback": {"provider": "none", "model": "x"}}) is None
    with pytest.raises(EmbeddingError) as err:
        fallback_settings({"fallback": {"model": "x"}})
    assert "provider" in err.value.hint
    user_config('[embeddings]\nprovider = "local"\nmodel_path = "m.gguf"\n\n'
                '[embeddings.fallback]\nprovider = "openai"\nmodel = "text-embedding-3-small"\n'
                'base_url = "http://127.0.0.1:9/v1"\ndimensions = 512\nheaders = { "X-Title" = "zmem" }\n')
    cfg = load_config(None)
    assert cfg.embeddings["fallback"] == {"provider": "openai", "model": "text-embedding-3-small",
                                          "base_url": "http://127.0.0.1:9/v1", "dimensions": 512,
                                          "headers": {"X-Title": "zmem"}}
    user_config('[embeddings]\nprovider = "local"\nfallback = "openai"\n')
    assert load_config(None).embeddings["fallback"] == "openai"
    user_config('[embeddings.fallback]\nprovider = "auto"\n')
    with pytest.raises(ConfigError) as err:
        load_config(None)
    assert "embeddings.fallback.provider" in err.value.message
    user_config('[embeddings.fallback]\nprovider = "openai"\ndimensions = "big"\n')
    with pytest.raises(ConfigError) as err:
        load_config(None)
    assert "embeddings.fallback.dimensions" in err.value.message
    user_config('[embeddings]\napi = "grpc"\n')
    with pytest.raises(ConfigError) as err:
        load_config(None)
    assert "embeddings.api" in err.value.message


def test_trusted_zmem_toml_merges_into_the_users_fallback_table(ws):
    user_config('[embeddings.fallback]\nprovider = "openai"\napi_key_env = "MY_KEY"\nmodel = "a"\n')
    (ws / "zmem.toml").write_text('[embeddings.fallback]\nmodel = "b"\nbase_url = "http://127.0.0.1:9/v1"\n')
    assert run(["-C", str(ws), "trust"]).exit_code == 0
    assert load_config(ws).embeddings["fallback"] == {"provider": "openai", "api_key_env": "MY_KEY", "model": "b",
                                                      "base_url": "http://127.0.0.1:9/v1"}


def test_untrusted_zmem_toml_cannot_choose_a_fallback_endpoint(ws, server, monkeypatch):
    server.key = None
    (ws / "zmem.toml").write_text(f'[embeddings.fallback]\nprovider = "gemini"\nbase_url = "{server.base_url}"\n'
                                  'headers = { "X-Exfil" = "1" }\n')
    cfg = load_config(ws)
    assert "fallback" not in cfg.embeddings
    assert set(cfg.untrusted) >= {"embeddings.fallback.base_url", "embeddings.fallback.headers",
                                  "embeddings.fallback.provider"}
    out = recall_json(ws, "gateway")
    assert any("zmem trust" in w and "embeddings.fallback.base_url" in w for w in out["warnings"])
    assert run(["-C", str(ws), "index"]).exit_code == 0
    assert server.batch_calls() == []
    assert run(["-C", str(ws), "trust"]).exit_code == 0
    res = run(["-C", str(ws), "index", "--json"])
    assert json.loads(res.stdout)["embeddings"]["provider"] == "gemini"
    assert server.batch_calls() and server.batch_calls()[0]["headers"]["x-exfil"] == "1"
