"""One text at a time tokenized by the pieces it can use (zmem.embedders.onnx.PieceEncoder): a large Unigram
tokenizer (multilingual-e5-small's 250,002 pieces take ~0.8 s to build and hold ~280 MB) is not built whole for a
fresh process's query, nor for the queries a watcher embeds.
Real tokenizers and ONNX Runtime on the tiny model with a SentencePiece tokenizer laid out as e5's; the cache is
zmem's real one (under the test's XDG_CACHE_HOME)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from helpers.tiny_bert import make_tiny_bert, with_sentencepiece  # noqa: E402
from zmem.embedders import onnx  # noqa: E402
from zmem.embedders.base import EmbeddingError  # noqa: E402
from zmem.embedders.modelimport import import_onnx  # noqa: E402
from zmem.embedders.onnx import OnnxEmbedder, load_tokenizer, piece_encoder  # noqa: E402

# the pieces' own words, their splits, words no piece holds whole, Chinese, accents, spaces, an empty query
TEXTS = ["query: where is the gateway host", "query: relay way gate ayay", "query: 数据库连接在哪里",
         "query: onde fica o servidor", "query:   two  spaces\tand a tab", "query: ", "query: Café naïve ﬁ",
         "passage: the relay", "query: <s> inside", "query: " + "gateway " * 200]


@pytest.fixture(scope="module")
def sp_model(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("one")
    model = import_onnx(make_tiny_bert(root / "tiny-bert"), root / "tiny.onnx")["out"]
    return with_sentencepiece(Path(model), root / "sp.onnx")


@pytest.fixture
def large(monkeypatch):
    """Every tokenizer.json counts as large (the tiny one is a few kB)."""
    monkeypatch.setattr(onnx, "BIG_TOKENIZER", 0)


def whole(model: Path):
    return load_tokenizer(model, 128, EmbeddingError, "")


def one_text_encoding(model: Path, text: str, max_tokens: int):
    encoder = piece_encoder(model, max_tokens)
    got = None if encoder is None else encoder.encode_batch([text])
    return None if got is None else got[0]


def test_the_one_text_tokenizer_gives_the_whole_ones_ids(sp_model, large):
    full = whole(sp_model)
    rng = random.Random(7)
    letters = "gatewyrlhosqud数据库连接在哪里 "
    texts = TEXTS + ["query: " + "".join(rng.choice(letters) for _ in range(rng.randint(1, 30))) for _ in range(200)]
    for text in texts:
        got, want = one_text_encoding(sp_model, text, 128), full.encode(text)
        assert got is not None, text
        assert (got.ids, got.attention_mask, got.type_ids) == (want.ids, want.attention_mask, want.type_ids), text
    # a special token past the leading ones (<mask>) in the text: the whole tokenizer, which knows it
    assert one_text_encoding(sp_model, "query: <mask> gateway", 128) is None
    # what the token readings use (tokens, offsets, special mask), with and without the special tokens
    encoder = piece_encoder(sp_model, 128)
    for text in TEXTS[:8]:
        for special in (True, False):
            (got,), want = encoder.encode_batch([text], special), full.encode(text, add_special_tokens=special)
            assert (got.ids, got.tokens, got.offsets, got.special_tokens_mask) == \
                (want.ids, want.tokens, want.offsets, want.special_tokens_mask), text
    # several texts by one tokenizer of the pieces any of them can use: each split as alone
    together = encoder.encode_batch(texts[:40])
    assert [e.ids for e in together] == [e.ids for e in full.encode_batch(texts[:40])]


TEXTS_ASKED = ("where is the gateway host", "数据库连接在哪里", "<mask> gateway")


def by_the_whole_tokenizer(model: Path, text: str, kind: str = "query") -> list[float]:
    small = OnnxEmbedder(str(model), threads=1, query_prefix="query: ", document_prefix="passage: ")
    small._pieces = False  # as for a small vocabulary: the whole tokenizer
    return small.embed([text], kind)[0]


def test_a_fresh_query_embeds_as_the_whole_tokenizer_does_without_building_it(sp_model, large):
    for text in TEXTS_ASKED:
        fresh = OnnxEmbedder(str(sp_model), threads=1, query_prefix="query: ", document_prefix="passage: ")
        assert np.allclose(fresh.embed([text], "query")[0], by_the_whole_tokenizer(sp_model, text), atol=1e-6)
        # the whole tokenizer was built only for the text holding a special token past the leading ones
        assert (fresh._tokenizer is None) == (text != "<mask> gateway")
    # a few texts at once (the words recall compares with an entity's relations) by their pieces too; a batch
    # of notes builds the whole tokenizer: the same vectors
    fresh = OnnxEmbedder(str(sp_model), threads=1, query_prefix="query: ", document_prefix="passage: ")
    few = fresh.embed(["relay host", "gateway"], "query")
    assert fresh._tokenizer is None
    notes = [f"relay host {i}" for i in range(3)]
    batch = fresh.embed(notes, "document")
    assert fresh._tokenizer is not None
    assert np.allclose(few[0], by_the_whole_tokenizer(sp_model, "relay host"), atol=1e-5)
    assert np.allclose(batch[0], by_the_whole_tokenizer(sp_model, notes[0], "document"), atol=1e-5)


def test_a_watcher_embeds_its_queries_without_the_whole_tokenizer(sp_model, large):
    # zmem watch loads the model once (QueryEmbedding.preload) and embeds one query per question
    watcher = OnnxEmbedder(str(sp_model), threads=1, query_prefix="query: ", document_prefix="passage: ")
    watcher.load()
    for text in TEXTS_ASKED[:2]:
        assert np.allclose(watcher.embed([text], "query")[0], by_the_whole_tokenizer(sp_model, text), atol=1e-6)
    # and reads the first hits token by token (recall.rerank = "embedding") as the whole tokenizer does
    small = OnnxEmbedder(str(sp_model), threads=1, query_prefix="query: ", document_prefix="passage: ")
    small._pieces = False
    passages = ["the relay host is the gateway", "数据库连接在哪里"]
    for query in ("where is the gateway host", "relay way gate"):
        assert watcher.reads(query) == small.reads(query)
        got, want = watcher.cover(query, passages), small.cover(query, passages)
        assert (got is None) == (want is None) and (got is None or np.allclose(got, want, atol=1e-6))
    assert watcher._tokenizer is None
    # a small vocabulary's whole tokenizer is built as the model loads (fast, and then every text uses it)
    small = OnnxEmbedder(str(sp_model), threads=1, query_prefix="query: ", document_prefix="passage: ")
    small._pieces = False
    small.load()
    assert small._tokenizer is not None


def test_the_pieces_are_read_once_then_from_the_cache(sp_model, large, monkeypatch, tmp_path):
    import shutil

    model = Path(shutil.copytree(sp_model, tmp_path / "sp.onnx"))
    cache = onnx.user_cache_dir() / onnx.GRAPHS
    before = set(cache.glob("vocab-*.sqlite"))
    assert one_text_encoding(model, "query: gateway", 128) is not None
    made = set(cache.glob("vocab-*.sqlite")) - before
    assert len(made) == 1
    with monkeypatch.context() as m:
        m.setattr(onnx, "_read_unigram", lambda path: pytest.fail("read again: the cache was not used"))
        assert one_text_encoding(model, "query: relay", 128) is not None
    # a changed tokenizer.json is read anew, and its old copy removed
    path = model / "tokenizer.json"
    path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert one_text_encoding(model, "query: relay", 128) is not None
    now = set(cache.glob("vocab-*.sqlite")) - before
    assert len(now) == 1 and now != made


def test_embedding_a_batch_of_notes_writes_the_pieces_copy_for_the_first_query(sp_model, large, tmp_path,
                                                                              monkeypatch):
    import shutil

    model = Path(shutil.copytree(sp_model, tmp_path / "sp.onnx"))
    cache = onnx.user_cache_dir() / onnx.GRAPHS
    before = set(cache.glob("vocab-*.sqlite"))
    job = OnnxEmbedder(str(model), threads=1, query_prefix="query: ", document_prefix="passage: ")
    job.embed([f"note {i} about the relay" for i in range(3)], "document")
    assert len(set(cache.glob("vocab-*.sqlite")) - before) == 1
    monkeypatch.setattr(onnx, "_read_unigram", lambda path: pytest.fail("the first query read the JSON again"))
    fresh = OnnxEmbedder(str(model), threads=1, query_prefix="query: ", document_prefix="passage: ")
    fresh.embed(["where is the relay"], "query")


def test_a_broken_copy_of_the_pieces_is_built_again(sp_model, large, tmp_path):
    import shutil

    model = Path(shutil.copytree(sp_model, tmp_path / "sp.onnx"))
    cache = onnx.user_cache_dir() / onnx.GRAPHS
    before = set(cache.glob("vocab-*"))
    want = whole(model).encode("query: gateway relay")
    assert one_text_encoding(model, "query: gateway relay", 128).ids == want.ids
    (copy,) = set(cache.glob("vocab-*.sqlite")) - before
    stale = copy.with_name(copy.name.replace(".sqlite", ".marshal"))  # a copy as zmem wrote it before
    stale.write_bytes(b"old")
    copy.write_bytes(b"not a database")
    assert one_text_encoding(model, "query: gateway relay", 128).ids == want.ids
    assert copy.stat().st_size > len(b"not a database") and not stale.exists()


def test_a_small_or_wordpiece_tokenizer_is_built_whole(sp_model, tmp_path, monkeypatch):
    assert one_text_encoding(sp_model, "query: gateway", 128) is None  # a few kB: fast to build whole
    wordpiece = Path(import_onnx(make_tiny_bert(tmp_path / "tiny-bert"), tmp_path / "wp.onnx")["out"])
    monkeypatch.setattr(onnx, "BIG_TOKENIZER", 0)
    assert one_text_encoding(wordpiece, "where is the gateway", 128) is None  # not a Unigram model
    # and that is remembered: a large vocabulary of another kind is not read again by every fresh process
    monkeypatch.setattr(onnx, "_read_unigram", lambda path: pytest.fail("read again"))
    assert one_text_encoding(wordpiece, "where is the gateway", 128) is None
