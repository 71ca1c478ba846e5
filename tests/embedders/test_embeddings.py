"""Semantic recall through a real OpenAI-compatible HTTP server on loopback."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from helpers.workspace import commit_all, git, recall_json, run, use_server, user_config, wait_for, write, zmem_proc
from helpers.embed_server import EmbeddingServer
from zmem.store import db
from zmem.embedders import make_embedder
from zmem.embedders.base import EmbeddingError
from zmem.embedders.openai import OpenAIEmbedder


@pytest.fixture(autouse=True)
def vec0_scans(monkeypatch):
    """These tests' indexes are small, which a process that loaded numpy searches in memory
    (tests/store/test_small_index.py): here they are searched by sqlite-vec, as a large index is."""
    monkeypatch.setattr("zmem.store.vectors.SMALL_INDEX", 0)


def test_batching_and_auth_header(server):
    e = OpenAIEmbedder("fake", base_url=server.base_url, api_key="sk-abc")
    e.batch_size = 4
    vectors = e.embed([f"text {i}" for i in range(10)])
    assert len(vectors) == 10 and len(server.embedding_calls()) == 3
    assert [len(c["body"]["input"]) for c in server.embedding_calls()] == [4, 4, 2]
    assert server.embedding_calls()[0]["headers"]["authorization"] == "Bearer sk-abc"
    assert abs(sum(x * x for x in vectors[0]) - 1.0) < 1e-6


def test_429_honours_retry_after_and_500_is_retried(server):
    e = OpenAIEmbedder("fake", base_url=server.base_url)
    e.backoff_base = 0.01
    server.faults = [("429", 0.3), ("500",), ("500",)]
    t = time.monotonic()
    assert len(e.embed(["hello"])) == 1
    assert time.monotonic() - t >= 0.3  # waited as Retry-After said
    assert len(server.embedding_calls()) == 4


def test_timeout_is_retried_then_gives_up(server):
    e = OpenAIEmbedder("fake", base_url=server.base_url, timeout=0.3)
    e.backoff_base = 0.01
    server.faults = [("slow", 1.0)]
    assert len(e.embed(["hello"])) == 1  # second attempt succeeds
    e.max_retries = 1
    server.faults = [("500",), ("500",), ("500",)]
    with pytest.raises(EmbeddingError) as err:
        e.embed(["hello"])
    assert "gave up" in err.value.message and err.value.hint


def test_wrong_dimension_is_an_error(server):
    e = OpenAIEmbedder("fake", base_url=server.base_url, dimensions=64)
    server.faults = [("dims", 32)]
    with pytest.raises(EmbeddingError) as err:
        e.embed(["hello"])
    assert "32 dimensions" in err.value.message


def test_fingerprint_has_no_secrets_and_changes_with_model(server):
    a = OpenAIEmbedder("m1", base_url="http://user:secret@127.0.0.1:9/v1?key=abc", api_key="sk-xyz")
    assert "secret" not in a.fingerprint() and "abc" not in a.fingerprint() and "sk-xyz" not in a.fingerprint()
    assert a.fingerprint() != OpenAIEmbedder("m2", base_url="http://127.0.0.1:9/v1").fingerprint()


@pytest.mark.slow
def test_vector_recall_finds_meaning_without_shared_words(semantic_ws):
    query = "which computer runs the relay"
    assert recall_json(semantic_ws, query, "--mode", "bm25")["results"] == []
    out = recall_json(semantic_ws, query, "--mode", "vector")
    assert out["mode"] == "vector"
    assert out["results"][0]["path"] == "bank/world.md"
    assert "gateway lives on the Mac Studio" in out["results"][0]["snippet"]
    hybrid = recall_json(semantic_ws, query, "--explain")
    assert hybrid["mode"] == "hybrid"
    top = hybrid["results"][0]
    assert top["path"] == "bank/world.md"
    assert set(top["explain"]) - {"ranked_first"} == {"bm25_rank", "bm25_score", "vector_rank", "vector_similarity",
                                                      "fused", "text_weight", "vector_weight", "keyword_evidence",
                                                      "answer_probability", "floor_signals", "text_score",
                                                      "vector_score"}
    # no keyword holds it: the vectors decide, by the fused order or their clear lead (in standard deviations
    # of the candidates' cosines, which the loopback server's few hashed vectors may not show)
    assert top["explain"].get("ranked_first") in (None, "vector_lead")
    assert top["explain"]["vector_rank"] == 1 and top["explain"]["bm25_rank"] is None
    assert not any("BM25" in w for w in hybrid["warnings"])


@pytest.mark.slow
def test_keyword_hits_survive_fusion(semantic_ws):
    out = recall_json(semantic_ws, "espresso")
    assert out["results"][0]["path"] == "bank/world.md" and "espresso" in out["results"][0]["snippet"]


@pytest.mark.slow
@pytest.mark.parametrize("query", ["espresso machine", "which computer runs the relay"])
def test_explain_fused_is_the_weighted_sum_it_shows(semantic_ws, query):
    # every hybrid hit's fused score can be recomputed from its explain: text_weight x text_score +
    # vector_weight x vector_score (the vector part is the centred, stretched similarity, not the plain cosine)
    out = recall_json(semantic_ws, query, "--explain")
    assert out["mode"] == "hybrid" and out["results"]
    for hit in out["results"]:
        e = hit["explain"]
        assert e["fused"] == pytest.approx(e["text_weight"] * e["text_score"] + e["vector_weight"] * e["vector_score"],
                                           abs=2e-3)
        assert (e["text_score"] > 0) == (e["bm25_rank"] is not None)  # a text part only where the keywords found it
    text = run(["-C", str(semantic_ws), "recall", query, "--explain"]).stdout
    e = out["results"][0]["explain"]
    assert f"fused {e['fused']} = text {e['text_weight']} x {e['text_score']} + vector" in text


@pytest.mark.slow
def test_cache_means_unchanged_text_is_never_embedded_twice(semantic_ws, server):
    calls = len(server.embedding_calls())
    res = run(["-C", str(semantic_ws), "index", "--full", "--json"])
    out = json.loads(res.stdout)
    assert out["embeddings"]["embedded"] == 0 and out["embeddings"]["from_cache"] > 0
    assert len(server.embedding_calls()) == calls
    write(semantic_ws, "memory/2025-11-30.md", "# 2025-11-30\n\n- A new note about a flight.\n")
    commit_all(semantic_ws)
    out = json.loads(run(["-C", str(semantic_ws), "index", "--json"]).stdout)
    assert out["embeddings"]["embedded"] == 1 and out["embeddings"]["pending"] == 0


@pytest.mark.slow
def test_model_change_reembeds_and_keeps_bm25_meanwhile(semantic_ws, server):
    use_server(server, 'query_prefix = "query: "\n')
    out = recall_json(semantic_ws, "espresso", "--mode", "hybrid")
    assert out["results"] and out["mode"] == "bm25"
    assert any("different embedding model" in w or "not embedded" in w for w in out["warnings"])
    res = run(["-C", str(semantic_ws), "embed", "--json"])
    report = json.loads(res.stdout)
    assert report["reembedded_all"] and report["pending"] == 0
    assert recall_json(semantic_ws, "which computer runs the relay")["mode"] == "hybrid"


@pytest.mark.slow
def test_server_dying_mid_index_loses_nothing(ws, server):
    for i in range(40):
        write(ws, f"memory/2025-09-{i % 28 + 1:02d}-{i}.md", f"# n{i}\n\n- note number {i} about topic {i}\n")
    commit_all(ws)
    use_server(server, "batch_size = 8\n")
    server.die_after = 2
    res = run(["-C", str(ws), "index", "--json"])
    assert res.exit_code == 0
    out = json.loads(res.stdout)
    assert out["embeddings"]["error"] and 0 < out["embeddings"]["pending"]
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    assert conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0] > 0  # done batches were kept
    conn.close()
    hits = recall_json(ws, "note number 17")
    assert hits["results"] and any("not embedded" in w and "the last embedding run failed" in w
                                   for w in hits["warnings"]), hits["warnings"]
    res = run(["-C", str(ws), "embed"])  # still down: an error the user can act on
    assert res.exit_code == 1 and res.stderr.startswith("zmem: embedding stopped: ") and "\nhint: " in res.stderr
    server.die_after = None  # the server is back
    res = run(["-C", str(ws), "embed", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["pending"] == 0


def test_a_key_named_by_api_key_env_is_the_only_key_sent(ws, server, monkeypatch):
    """A custom endpoint never gets the OpenAI key when the variable the config names is unset."""
    use_server(server)
    monkeypatch.delenv("ZMEM_TEST_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-secret")
    res = run(["-C", str(ws), "embed"])
    assert res.exit_code == 1 and "api_key_env names ZMEM_TEST_KEY, which is not set" in res.stderr
    assert not server.embedding_calls()
    user_config('[embeddings]\nprovider = "openai"\nbase_url = "http://[::1"\n')  # unparseable
    for args in (["status"], ["doctor"], ["embed"]):
        res = run(["-C", str(ws), *args])
        assert res.exit_code in (0, 1) and "base_url 'http://[::1' is not a valid URL" in res.output + res.stderr, args


def test_a_provider_that_cannot_run_is_named_by_embed_index_and_recall(ws):
    user_config('[embeddings]\nprovider = "local"\nmodel_path = "/nonexistent/model.gguf"\n')
    res = run(["-C", str(ws), "embed"])
    assert res.exit_code == 1 and "no model file at /nonexistent/model.gguf" in res.stderr.splitlines()[0]
    assert res.stderr.splitlines()[1].startswith("hint: ")
    out = json.loads(run(["-C", str(ws), "index", "--json"]).stdout)
    assert "no model file" in out["embeddings"]["error"]
    warnings = recall_json(ws, "gateway")["warnings"]
    assert any("no model file" in w for w in warnings)
    assert not any("no embedding provider configured" in w for w in warnings), warnings  # it is configured


def test_untrusted_zmem_toml_cannot_choose_an_endpoint(ws, server):
    (ws / "zmem.toml").write_text(f'[embeddings]\nprovider = "openai"\nbase_url = "{server.base_url}"\n')
    out = recall_json(ws, "gateway")
    assert any("zmem trust" in w for w in out["warnings"])
    assert server.embedding_calls() == []
    assert run(["-C", str(ws), "trust"]).exit_code == 0
    assert run(["-C", str(ws), "index"]).exit_code == 0
    assert server.embedding_calls()
    with open(ws / "zmem.toml", "a") as f:  # a changed file needs trusting again
        f.write("# changed\n")
    assert any("zmem trust" in w for w in recall_json(ws, "gateway")["warnings"])


def test_in_process_fallback_matches_sqlite_vec(semantic_ws):
    from zmem.store.vectors import VectorStore
    from helpers.embed_server import concept_vector
    conn = db.connect(semantic_ws / ".zmem" / "index.sqlite")
    store = VectorStore(conn)
    assert store.vec_loaded, store.detail
    q = concept_vector("which computer runs the relay")
    fast = store.search(q, 5)
    store.vec_loaded = False
    slow = store.search(q, 5)
    assert [h[0] for h in fast] == [h[0] for h in slow] and fast
    assert [h[2:] for h in fast] == [h[2:] for h in slow]  # same best windows
    assert all(abs(a[1] - b[1]) < 1e-5 for a, b in zip(fast, slow))
    conn.close()


def test_partitioned_parallel_scan_matches_exact_search_and_old_indexes_upgrade(ws, server):
    """vec0 is scanned as partitions, each in its own thread on its own connection; the merged
    answer is the exact one (the in-process search), inside a transaction too (where a second
    connection could not see new vectors). An index made before the partitions still answers, and
    is rebuilt with them by the next embedding run or vector write."""
    from zmem.store.vectors import SCAN_PARTS, VectorStore
    from helpers.embed_server import concept_vector
    words = ["gateway", "espresso", "Lisbon", "backup", "router", "garden", "piano", "invoice", "tram", "cat"]
    for i in range(30):
        write(ws, f"memory/2025-10-{i + 1:02d}.md",
              f"# 2025-10-{i + 1:02d}\n\n- {words[i % 10]} {words[(i * 3) % 10]} note {i} about {words[(i * 7) % 10]}.\n")
    commit_all(ws)
    use_server(server)
    assert run(["-C", str(ws), "index", "--json"]).exit_code == 0
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    store = VectorStore(conn)
    assert store._partitioned() and SCAN_PARTS > 1
    assert {r[0] for r in conn.execute("SELECT part FROM chunk_vec")} == set(range(SCAN_PARTS))
    q = concept_vector("the relay box and the piano in Lisbon")

    def exact(k):
        store.vec_loaded = False
        try:
            return store.search(q, k)
        finally:
            store.vec_loaded = True

    def same(a, b):
        return [h[0] for h in a] == [h[0] for h in b] and all(abs(x[1] - y[1]) < 1e-5 for x, y in zip(a, b))

    assert len(exact(12)) == 12 and same(store.search(q, 12), exact(12))
    conn.execute("BEGIN")
    assert same(store.search(q, 12), exact(12))
    conn.execute("ROLLBACK")
    # the layout of indexes made before the partitions
    conn.execute("DROP TABLE chunk_vec")
    conn.execute(f"CREATE VIRTUAL TABLE chunk_vec USING vec0(embedding float[{store.dims()}] distance_metric=cosine)")
    conn.execute("INSERT INTO chunk_vec(rowid, embedding) SELECT id, vector FROM chunk_vectors")
    assert not store._partitioned() and same(store.search(q, 12), exact(12))
    assert run(["-C", str(ws), "index", "--json"]).exit_code == 0  # nothing to embed: still upgraded
    assert store._partitioned() and same(store.search(q, 12), exact(12))
    conn.execute("DROP TABLE chunk_vec")
    conn.execute(f"CREATE VIRTUAL TABLE chunk_vec USING vec0(embedding float[{store.dims()}] distance_metric=cosine)")
    conn.execute("INSERT INTO chunk_vec(rowid, embedding) SELECT id, vector FROM chunk_vectors")
    cid = conn.execute("SELECT id FROM chunks ORDER BY id LIMIT 1").fetchone()[0]
    conn.execute("BEGIN")
    store.add([(cid, 1, 1, q)])
    conn.execute("COMMIT")
    assert store._partitioned() and same(store.search(q, 12), exact(12))
    assert store.search(q, 1)[0][0] == cid
    assert conn.execute("SELECT count(*) FROM chunk_vec").fetchone()[0] == store.count()
    conn.close()


def test_vector_matrix_matches_sqlite_vec_and_follows_changes(semantic_ws):
    """A long-running process's in-memory matrix gives what vec0 gives, and reloads when the
    stored vectors change (another process embedded a new note)."""
    pytest.importorskip("numpy")
    from zmem.store.vectors import VectorMatrix, VectorStore
    from helpers.embed_server import concept_vector
    matrix = VectorMatrix()
    q = concept_vector("which computer runs the relay")
    conn = db.connect(semantic_ws / ".zmem" / "index.sqlite")
    scan, fast = VectorStore(conn), VectorStore(conn, matrix)
    assert scan.vec_loaded and fast.matrix is matrix
    assert [h[0] for h in scan.search(q, 5)] == [h[0] for h in fast.search(q, 5)]
    assert all(abs(a[1] - b[1]) < 1e-5 for a, b in zip(scan.search(q, 5), fast.search(q, 5)))
    ids = [h[0] for h in scan.search(q, 5)]
    assert {c: [w[:2] for w in ws] for c, ws in scan.windows_of(ids, q).items()} == \
        {c: [w[:2] for w in ws] for c, ws in fast.windows_of(ids, q).items()}
    key = matrix.key
    write(semantic_ws, "memory/2025-12-02.md", "# 2025-12-02\n\n- The proxy box moved to the attic.\n")
    commit_all(semantic_ws)
    assert run(["-C", str(semantic_ws), "index", "--json"]).exit_code == 0
    again = VectorStore(conn, matrix)
    assert matrix.key != key
    assert [h[0] for h in again.search(q, 8)] == [h[0] for h in VectorStore(conn).search(q, 8)]
    conn.close()


def test_similarities_in_sql_and_in_process_agree(semantic_ws):
    from zmem.store.vectors import VectorStore
    from helpers.embed_server import concept_vector
    conn = db.connect(semantic_ws / ".zmem" / "index.sqlite")
    store = VectorStore(conn)
    q = concept_vector("which computer runs the relay")
    sql = "SELECT chunk_id, start_line, {sim} FROM chunk_vectors ORDER BY id"
    fast = store.similarities(sql, "vector", (), q)
    store.vec_loaded = False
    slow = store.similarities(sql, "vector", (), q)
    assert [r[:2] for r in fast] == [r[:2] for r in slow] and fast
    assert all(abs(a[2] - b[2]) < 1e-5 for a, b in zip(fast, slow))
    conn.close()


def test_auto_and_gemini_selection(server, monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    assert make_embedder({"provider": "auto"}) is None
    monkeypatch.setenv("GEMINI_API_KEY", "g-key")
    assert make_embedder({"provider": "auto"}) is None  # a key in the environment alone names no endpoint
    assert make_embedder({"provider": "auto", "api_key_env": "GEMINI_API_KEY", "api": "native"}).provider == "gemini"
    e = make_embedder({"provider": "gemini", "base_url": server.base_url, "model": "text-embedding-004"})
    e.embed(["hi"])
    assert server.embedding_calls()[-1]["headers"]["authorization"] == "Bearer g-key"
    monkeypatch.setenv("OPENAI_API_KEY", "o-key")
    assert make_embedder({"provider": "auto", "api_key_env": "OPENAI_API_KEY"}).provider == "openai"
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    assert make_embedder({"provider": "auto", "model_path": str(model)}).provider == "local"
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(EmbeddingError) as err:
        make_embedder({"provider": "openai"})
    assert "OPENAI_API_KEY" in err.value.hint


@pytest.mark.llama
@pytest.mark.slow
def test_fallback_provider_is_used_only_when_the_primary_fails(ws, server, tmp_path):
    pytest.importorskip("llama_cpp")
    from helpers.tiny_bert import make_tiny_bert
    from zmem.embedders.modelimport import import_model
    model = import_model(make_tiny_bert(tmp_path / "tiny"), tmp_path / "tiny.gguf")["out"]
    server.require_key = "the-right-key"
    use_server(server, f'fallback = "local"\nmodel_path = "{model}"\n')  # sends sk-test-123: rejected
    out = json.loads(run(["-C", str(ws), "index", "--json"]).stdout)["embeddings"]
    assert out["provider"] == "local" and out["pending"] == 0 and out["error"] is None
    res = recall_json(ws, "gateway", "--explain")
    assert res["mode"] == "hybrid" and any("fallback" in w for w in res["warnings"])
    status = json.loads(run(["-C", str(ws), "status", "--json"]).stdout)["embeddings"]
    assert status["vectors_by"].startswith("local ") and not status["current"]  # says who made them
    assert status["fallback_made"] and "the primary provider openai failed" in status["last_error"]
    write(ws, "memory/2025-12-03.md", "# 2025-12-03\n\n- A new note while the primary is down.\n")
    commit_all(ws)
    for _ in range(2):  # the failing primary does not drop the fallback's vectors, run after run
        out = json.loads(run(["-C", str(ws), "embed", "--json"]).stdout)
        assert out["provider"] == "local" and not out["reembedded_all"] and out["pending"] == 0, out
    os.environ["ZMEM_TEST_KEY"] = "the-right-key"  # the primary works again: it re-embeds everything
    out = json.loads(run(["-C", str(ws), "embed", "--json"]).stdout)
    assert out["provider"] == "openai" and out["reembedded_all"] and out["pending"] == 0


def test_a_failing_re_embed_is_named_and_the_old_vectors_counted(semantic_ws, server):
    """The configured model changed but cannot run (here: it answers the wrong dimensions): recall
    says re-embedding failed and why, not that vectors are 'being re-embedded' or missing."""
    use_server(server, "dimensions = 8\n")  # the fake server answers 16
    res = run(["-C", str(semantic_ws), "embed", "--json"])
    out = json.loads(res.stdout)
    total = json.loads(run(["-C", str(semantic_ws), "status", "--json"]).stdout)["chunks"]
    assert out["error"] and out["pending"] == total  # every chunk still needs this model's vectors
    warnings = recall_json(semantic_ws, "gateway")["warnings"]
    assert any("re-embedding them failed" in w and "dimensions" in w for w in warnings), warnings
    assert not any("no vectors yet" in w or "being re-embedded" in w for w in warnings), warnings
    use_server(server)  # the first model again: its vectors are current, nothing was dropped
    status = json.loads(run(["-C", str(semantic_ws), "status", "--json"]).stdout)["embeddings"]
    assert status["current"] and status["vectors"] > 0


def test_cache_is_bounded_least_recently_used_first(ws, server):
    use_server(server, "")
    with open(Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml", "a") as f:
        f.write("[cache]\nmax_entries = 3\n")
    for i in range(6):
        write(ws, f"memory/2025-08-{i + 1:02d}.md", f"# {i}\n\n- distinct note {i}\n")
    commit_all(ws)
    assert run(["-C", str(ws), "index"]).exit_code == 0
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    assert conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0] == 3
    assert conn.execute("SELECT count(*) FROM chunks WHERE id NOT IN (SELECT chunk_id FROM chunk_vectors)").fetchone()[0] == 0
    conn.close()


@pytest.mark.slow
def test_commit_hook_embeds_in_the_background(tmp_path, server):
    from helpers.workspace import zmem_proc
    root = tmp_path / "hooked"
    assert zmem_proc("init", str(root)).returncode == 0
    use_server(server, "")
    write(root, "memory/2025-12-11.md", "# x\n\n- the relay box lives in the office\n")
    commit_all(root)

    def embedded() -> bool:
        conn = db.connect(root / ".zmem" / "index.sqlite")
        try:
            chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            return chunks and conn.execute("SELECT count(*) FROM chunks WHERE id NOT IN "
                                           "(SELECT chunk_id FROM chunk_vectors)").fetchone()[0] == 0
        finally:
            conn.close()
    assert wait_for(embedded, 30, interval=0.1) and server.embedding_calls()


def test_as_of_recall_is_hybrid_through_the_cached_vectors_of_past_versions(semantic_ws, server):
    """A retracted line is found by meaning as the memory stood before: its window's vector comes
    from the embedding cache (embedded when it was current), nothing is embedded again."""
    commit_sha = git(semantic_ws, "rev-parse", "HEAD")
    write(semantic_ws, "bank/world.md", "# World\n\n- Ana drinks espresso every morning.\n")  # gateway line retracted
    commit_all(semantic_ws, "retract the gateway host")
    assert run(["-C", str(semantic_ws), "index", "--json"]).exit_code == 0
    calls = len(server.embedding_calls())
    query = "which computer runs the relay"
    now = recall_json(semantic_ws, query, "--mode", "vector")
    assert not any("gateway lives on the Mac Studio" in r["snippet"] for r in now["results"])
    then = recall_json(semantic_ws, query, "--as-of", commit_sha, "--explain")
    assert then["mode"] == "hybrid" and then["as_of"]["commit"] == commit_sha
    top = next(r for r in then["results"] if r["path"] == "bank/world.md")
    assert "gateway lives on the Mac Studio" in top["snippet"]
    assert top["citation"].startswith(f"bank/world.md@{commit_sha[:10]}#L")
    assert top["explain"]["bm25_rank"] is None and top["explain"]["vector_rank"] is not None
    assert not any("no stored vector" in w for w in then["warnings"]), then["warnings"]
    assert len(server.embedding_calls()) == calls + 2  # the two queries; no document was embedded
    assert recall_json(semantic_ws, query, "--as-of", commit_sha, "--mode", "bm25")["results"] == []
    # a version whose text was never embedded is still found by keywords, and recall says so
    conn = db.connect(semantic_ws / ".zmem" / "index.sqlite")
    conn.execute("DELETE FROM embedding_cache")
    conn.commit()
    conn.close()
    pruned = recall_json(semantic_ws, "gateway lives", "--as-of", commit_sha)
    assert any("gateway lives on the Mac Studio" in r["snippet"] for r in pruned["results"])
    assert any("have no stored vector" in w for w in pruned["warnings"])


# --- failing endpoints: a catch-up gives up within give_up_after, the chunks stay pending ------------


def _failing_index(ws, server, fault: tuple | None) -> tuple[dict, str, int]:
    """`zmem index --json` (a real process) with every request to the endpoint failing as fault says
    (None: the server is closed, connections are refused); (JSON, stderr, chunks)."""
    for i in range(12):
        write(ws, f"memory/2025-10-{i + 1:02d}.md", f"# 2025-10-{i + 1:02d}\n\n- note {i} about the heron.\n")
    commit_all(ws)
    use_server(server)
    if fault is None:
        server.close()
    else:
        server.always = fault
    proc = zmem_proc("-C", str(ws), "index", "--json")  # its timeout (120 s) is only a safety limit
    assert proc.returncode == 0, proc.stderr
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    conn.close()
    return json.loads(proc.stdout), proc.stderr, chunks


def _left_pending(out: dict, err: str, chunks: int) -> None:
    emb = out["embeddings"]
    assert emb["error"] and "gave up" in emb["error"] and emb["pending"] == chunks > 0, emb
    assert f"{chunks} chunks await embedding: `zmem embed` retries" in err, err


@pytest.mark.slow
def test_index_gives_up_on_a_hanging_endpoint_after_a_few_seconds(ws, server):
    """Before: 5 requests of 30 s each (168 s in all); now one request, cut at give_up_after (5 s)."""
    out, err, chunks = _failing_index(ws, server, ("hang",))
    _left_pending(out, err, chunks)
    assert "cannot reach" in out["embeddings"]["error"]
    calls = server.embedding_calls()
    assert len(calls) == 1 and len(calls[0]["body"]["input"]) == 1, calls  # a single text, until it answers


@pytest.mark.parametrize("fault, most", [(("429", 3), 2), (("500",), 4)])
@pytest.mark.slow
def test_index_gives_up_on_429_and_500_within_its_budget(ws, server, fault, most):
    """Retry-After 3 s: one wait fits in 5 s, a second does not (before: 4 waits, 12 s); 500: the
    backoff 0.5 + 1 + 2 s fits, the next 4 s does not (before: 5 requests, 7.5 s)."""
    out, err, chunks = _failing_index(ws, server, fault)
    _left_pending(out, err, chunks)
    assert 1 <= len(server.embedding_calls()) <= most, len(server.embedding_calls())


@pytest.mark.slow
def test_index_gives_up_on_a_refused_connection_and_embed_catches_up_later(ws, server):
    out, err, chunks = _failing_index(ws, server, None)
    _left_pending(out, err, chunks)
    with EmbeddingServer() as back:  # the provider is back (on another port: the config follows it)
        use_server(back)
        res = run(["-C", str(ws), "embed", "--json"])
        assert res.exit_code == 0 and json.loads(res.stdout)["pending"] == 0


@pytest.mark.slow
def test_give_up_after_bounds_one_embedder_in_all(server):
    e = OpenAIEmbedder("fake", base_url=server.base_url)
    e.give_up_after = 1.0
    server.always = ("hang",)
    with pytest.raises(EmbeddingError) as err:
        e.embed(["a", "b", "c"])
    assert err.value.unreachable and "gave up after 1 attempts" in err.value.message
    assert len(server.embedding_calls()) == 1
    server.always = None  # answering now: the full batch size again, with the configured timeout
    e.give_up_after = 30.0
    e.batch_size = 2
    assert len(e.embed(["a", "b", "c", "d", "e"])) == 5
    assert [len(c["body"]["input"]) for c in server.embedding_calls()[1:]] == [1, 2, 2]


def test_recall_remembers_a_refused_connection_like_a_timeout(semantic_ws, server):
    """Each recall used to try the dead endpoint again (~1.5 s: importing openai, connecting)."""
    import socket
    import sys
    port = server.httpd.server_address[1]
    attempts = []

    def audit(event, args):
        if event == "socket.connect" and isinstance(args[1], tuple) and args[1][1:2] == (port,):
            attempts.append(args[1])
    sys.addaudithook(audit)  # stays for the session; counts connections to this test's port only
    server.close()
    with pytest.raises(ConnectionRefusedError):  # nothing listens there any more
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    attempts.clear()
    first = recall_json(semantic_ws, "which computer runs the relay")
    assert first["mode"] == "bm25" and any("query embedding failed" in w and "cannot reach" in w
                                           for w in first["warnings"]), first["warnings"]
    assert len(attempts) == 1, attempts
    second = recall_json(semantic_ws, "which computer runs the relay")
    assert second["mode"] == "bm25" and any("could not be reached" in w for w in second["warnings"])
    assert len(attempts) == 1, attempts  # not tried again


def test_a_recall_for_many_hits_asks_sqlite_vec_for_no_more_neighbours_than_it_allows(semantic_ws):
    # --k 300 in hybrid asks for 300 x 4 candidates, 4 windows each: over sqlite-vec's 4096, which used to
    # end in "the index could not be used ... run `zmem index --full`" (that would not have helped)
    for mode in ("hybrid", "vector"):
        res = recall_json(semantic_ws, "where is the gateway", "--mode", mode, "--k", "300")
        assert res["mode"] == mode and res["results"], res
        assert res["results"][0]["path"] == "bank/world.md"
    from zmem.store.vectors import KNN_LIMIT, VectorStore
    from helpers.embed_server import concept_vector
    conn = db.connect(semantic_ws / ".zmem" / "index.sqlite")
    store = VectorStore(conn)
    assert store.vec_loaded, store.detail
    q = concept_vector("where is the gateway")
    many = store.start_search(q, KNN_LIMIT)()  # asks for 4 x 4096 windows: all there are, by chunk
    store.vec_loaded = False
    assert [h[0] for h in many] == [h[0] for h in store.search(q, KNN_LIMIT)]
    conn.close()


def test_a_recall_for_more_neighbours_than_sqlite_vec_answers_scores_every_window(semantic_ws, monkeypatch):
    # beyond sqlite-vec's limit a knn query returns only the nearest KNN_LIMIT windows, so a recall for many
    # hits listed fewer chunks than the index holds, silently; the windows are now scored in one scan instead
    from zmem.store import vectors
    from helpers.embed_server import concept_vector
    conn = db.connect(semantic_ws / ".zmem" / "index.sqlite")
    chunks = conn.execute("SELECT count(DISTINCT chunk_id) FROM chunk_vectors").fetchone()[0]
    monkeypatch.setattr(vectors, "KNN_LIMIT", 2)  # the 2 nearest windows hold at most 2 chunks
    assert chunks > 2
    res = recall_json(semantic_ws, "where is the gateway", "--mode", "vector", "--k", "1000")
    assert len(res["results"]) == chunks, (len(res["results"]), chunks)
    store = vectors.VectorStore(conn)
    assert store.vec_loaded, store.detail
    q = concept_vector("where is the gateway")
    scanned = store.search(q, chunks)
    store.vec_loaded = False  # the same search in Python, exact
    exact = store.search(q, chunks)
    assert [h[0] for h in scanned] == [h[0] for h in exact]
    assert all(abs(a[1] - b[1]) < 1e-5 for a, b in zip(scanned, exact))
    conn.close()
