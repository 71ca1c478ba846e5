"""The OpenAI-compatible provider's own HTTP client (zmem.embedders.jsonhttp, no SDK) against a real
loopback server: what users see when an endpoint answers HTML, rejects the key, is overloaded, is not
there or does not resolve; and that a fresh hybrid recall never imports the openai SDK."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from email.utils import formatdate

import pytest

from helpers.workspace import run, use_server
from zmem.embedders import jsonhttp
from zmem.embedders.base import EmbeddingError
from zmem.embedders.openai import OpenAIEmbedder


def embedder(server, **kw) -> OpenAIEmbedder:
    e = OpenAIEmbedder("fake", base_url=server.base_url, api_key="sk-test", **kw)
    e.backoff_base = 0.01
    return e


def test_an_html_page_instead_of_json_is_named_and_not_retried(server):
    server.faults = [("html", 200)]
    with pytest.raises(EmbeddingError) as err:
        embedder(server).embed(["hello"])
    assert err.value.message == (f"{server.base_url} did not answer with JSON but an HTML page "
                                 "(Sign in - Corp Proxy)"), err.value.message
    assert "base_url" in err.value.hint and not err.value.unreachable
    assert len(server.embedding_calls()) == 1  # a proxy's login page will not change by asking again


def test_an_html_error_page_says_what_it_is(server):
    server.always = ("html", 404)
    with pytest.raises(EmbeddingError) as err:
        embedder(server).embed(["hello"])
    assert "answered 404: an HTML page (Sign in - Corp Proxy)" in err.value.message
    assert len(server.embedding_calls()) == 1


def test_401_carries_the_servers_message_and_is_not_retried(server):
    server.require_key = "sk-right"
    with pytest.raises(EmbeddingError) as err:
        embedder(server).embed(["hello"])
    assert err.value.message == f"{server.base_url} rejected the API key (401: invalid api key)"
    assert "environment variable" in err.value.hint
    assert len(server.requests) == 1


def test_the_cli_shows_one_line_and_a_hint_not_a_traceback(ws, server):
    server.require_key = "sk-right"
    use_server(server)  # sends sk-test-123
    res = run(["-C", str(ws), "embed"])
    assert res.exit_code == 1, res.output
    lines = res.stderr.strip().splitlines()
    assert lines[-2].startswith("zmem: embedding stopped: ") and "(401: invalid api key)" in lines[-2], lines
    assert lines[-1].startswith("hint: ") and "Traceback" not in res.stderr


def test_503_with_retry_after_waits_that_long_then_succeeds(server):
    server.faults = [("status", 503, 0.4)]
    t = time.monotonic()
    assert len(embedder(server).embed(["hello"])) == 1
    assert time.monotonic() - t >= 0.4  # the server's Retry-After, not the 0.01 s backoff
    assert len(server.embedding_calls()) == 2


def test_retry_after_as_an_http_date():
    later = formatdate(time.time() + 60, usegmt=True)
    assert 55 <= jsonhttp.retry_after({"retry-after": later}) <= 60
    assert jsonhttp.retry_after({"retry-after": "soon"}) is None
    assert jsonhttp.retry_after({"retry-after": "2"}) == 2.0


def test_5xx_retries_run_out_with_the_servers_message(server):
    server.always = ("status", 502, None)
    e = embedder(server)
    e.max_retries = 2
    with pytest.raises(EmbeddingError) as err:
        e.embed(["hello"])
    assert "(502: status 502 as scripted) (gave up after 2 retries)" in err.value.message
    assert not err.value.unreachable and len(server.embedding_calls()) == 3


def test_a_refused_port_is_unreachable(server):
    server.close()
    e = embedder(server)
    e.max_retries = 1
    with pytest.raises(EmbeddingError) as err:
        e.embed(["hello"])
    assert f"cannot reach {server.base_url}: connection refused" in err.value.message
    assert err.value.unreachable and err.value.hint


def test_an_unknown_host_is_unreachable():
    e = OpenAIEmbedder("fake", base_url="http://zmem-test.invalid/v1")  # .invalid never resolves
    e.max_retries = 0
    with pytest.raises(EmbeddingError) as err:
        e.embed(["hello"])
    assert "cannot reach http://zmem-test.invalid/v1: unknown host" in err.value.message and err.value.unreachable


def test_base_url_query_and_credentials_reach_the_server_properly(server):
    port = server.httpd.server_address[1]
    e = OpenAIEmbedder("fake", base_url=f"http://u:p%40ss@127.0.0.1:{port}/v1?api-version=2024")
    assert len(e.embed(["hello"])) == 1
    call = server.embedding_calls()[0]
    assert call["path"] == "/v1/embeddings?api-version=2024"
    assert call["headers"]["authorization"] == "Basic dTpwQHNz"  # u:p@ss
    assert "p%40ss" not in e.fingerprint()


@pytest.mark.slow
def test_fresh_hybrid_recall_never_imports_the_openai_sdk(semantic_ws, server):  # noqa: F811
    """`import openai` was 1.3-1.5 s of a 2.0 s fresh hybrid recall. -X importtime lists every module
    the process imported; the query must still be embedded through the endpoint."""
    before = len(server.embedding_calls())
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "zmem", "-C", str(semantic_ws), "recall",
                           "which computer runs the relay", "--mode", "hybrid", "--json"],
                          capture_output=True, text=True, env=os.environ, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["mode"] == "hybrid"
    queries = [c["body"]["input"] for c in server.embedding_calls()[before:]]
    assert ["which computer runs the relay"] in queries, queries
    imported = {line.rpartition("|")[2].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "urllib.request" in imported  # the import list is real: the stdlib client made the call
    assert not {m for m in imported if m == "openai" or m.startswith(("openai.", "httpx"))}


def test_reflect_llm_speaks_chat_completions_and_retries_5xx_with_the_servers_message():
    """`reflect --llm` used the SDK too; it shares the stdlib client now."""
    from types import SimpleNamespace

    from helpers.chat_server import ChatServer
    from zmem.errors import ZmemError
    from zmem.reflect.summarize import ChatSettings, Summarizer
    fact = SimpleNamespace(day="2025-11-24", kind="W", confidence=None, text="Lives in Lisbon.")
    with ChatServer() as chat:
        s = Summarizer(ChatSettings("tiny-chat", chat.url, "sk-chat", {}, 10.0))
        s.backoff_base = 0.01
        assert s.summary("Peter", [fact]) == "Entity: Peter has 1 known facts."
        chat.fail = True
        with pytest.raises(ZmemError) as err:
            s.summary("Peter", [fact])
    assert err.value.message == "the chat model failed: 500: boom" and err.value.hint
    assert len(chat.requests) == 1 + 3  # two retries after the first 500
