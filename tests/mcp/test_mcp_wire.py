"""Every request line `zmem mcp` reads gets an answer: a real server process written raw lines —
not JSON, JSON that is no message, a lone surrogate escape as a Node client sends when it cuts a
string inside an emoji — answers each at once (a JSON-RPC error, or the request read leniently)
instead of leaving the client to wait for its timeout."""
from __future__ import annotations

import json

import pytest

from helpers.mcp_raw import RawServer
from zmem.mcp.wire import error_for, lenient

pytest.importorskip("mcp")


@pytest.fixture
def raw(ws):
    server = RawServer(ws)
    assert server.initialize()["id"] == 1
    yield server
    server.kill()


@pytest.mark.slow  # a real zmem mcp process (~1-2 s)
def test_a_line_that_is_not_json_is_answered_with_a_parse_error_and_the_server_goes_on(raw):
    raw.send("this is not json {")
    assert raw.answer() == {"jsonrpc": "2.0", "id": None,
                            "error": {"code": -32700, "message": "Parse error: the request line is not JSON"}}
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
    assert raw.answer() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert raw.close() == 0


@pytest.mark.slow  # a real zmem mcp process (~1-2 s)
def test_json_that_is_no_message_is_an_invalid_request_with_its_id(raw):
    raw.send('{"id": 5, "hello": "world"}')
    got = raw.answer()
    assert got["id"] == 5 and got["error"]["code"] == -32600
    raw.send("[1, 2, 3]")
    got = raw.answer()
    assert got["id"] is None and got["error"]["code"] == -32600


@pytest.mark.slow  # a real zmem mcp process (~1-2 s)
def test_a_lone_surrogate_escape_is_read_leniently_and_the_request_answered(raw):
    # what JSON.stringify writes for a string cut between the two halves of an emoji
    raw.send('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory_search",'
             '"arguments":{"query":"gateway Mac Studio \\ud83d"}}}')
    got = raw.answer()
    assert got["id"] == 3 and not got["result"].get("isError"), got
    hits = json.loads(got["result"]["content"][0]["text"])["results"]
    assert hits and "Mac Studio" in hits[0]["snippet"]
    # a whole pair is an emoji, as ever; a lone low half is read leniently too
    raw.send('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"memory_get",'
             '"arguments":{"path":"memory/2025-11-24.md\\udc00"}}}')
    got = raw.answer()
    assert got["id"] == 4 and got["result"]["isError"] and "\ufffd" in got["result"]["content"][0]["text"]


def test_lenient_replaces_only_lone_surrogates():
    pair = '{"q": "smile \\ud83d\\ude00"}\n'
    assert lenient(pair) == pair
    assert json.loads(lenient('{"q": "cut \\ud83d", "\\udc00k": ["\\uD800x"]}\n')) == \
        {"q": "cut \ufffd", "\ufffdk": ["\ufffdx"]}
    assert lenient("not json \\ud800\n") == "not json \\ud800\n"
    assert error_for("not json") == (None, -32700, "Parse error: the request line is not JSON")
    assert error_for('{"id": true}')[0] is None and error_for('{"id": "a"}')[:2] == ("a", -32600)


@pytest.mark.slow  # a real zmem mcp process (~1-2 s)
def test_a_request_whose_id_is_null_or_a_fraction_is_answered_not_taken_for_a_notification(raw):
    # the SDK reads {"id": null|1.5|true, "method": …} as a notification, which nobody answers
    for rid in ("null", "1.5", "true", "{}"):
        raw.send('{"jsonrpc": "2.0", "id": %s, "method": "tools/list"}' % rid)
        got = raw.answer()
        assert got["id"] is None and got["error"]["code"] == -32600, (rid, got)
        assert "id must be a string or an integer" in got["error"]["message"]
    raw.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 99, "reason": "x"}}))  # a real notification: no answer
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}))
    assert raw.answer() == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert raw.close() == 0


@pytest.mark.slow  # a real zmem mcp process (~1-2 s)
def test_requests_piped_before_the_end_of_input_are_all_answered(ws):
    # `printf REQUESTS | zmem mcp`: the SDK cancelled what was still running when stdin ended
    import subprocess
    import sys
    from helpers.mcp_raw import INIT
    lines = [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "memory_search", "arguments": {"query": "gateway"}}},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "memory_context", "arguments": {"budget": 2000}}},
             {"jsonrpc": "2.0", "id": "last", "method": "ping"}]
    proc = subprocess.run([sys.executable, "-m", "zmem", "-C", str(ws), "mcp"], capture_output=True, timeout=120,
                          input="".join(json.dumps(m) + "\n" for m in lines).encode())
    assert proc.returncode == 0, proc.stderr
    answers = {json.loads(line)["id"]: json.loads(line) for line in proc.stdout.splitlines()}
    assert set(answers) == {1, 2, 3, "last"}, proc.stdout
    assert not answers[2]["result"].get("isError") and not answers[3]["result"].get("isError")
