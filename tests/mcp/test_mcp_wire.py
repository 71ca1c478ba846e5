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


def test_read_message_sorts_requests_notifications_answers_and_what_is_no_message():
    from zmem.mcp.wire import read_message
    assert read_message('{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}') == \
        ("request", "a", "tools/list", {})
    assert read_message('{"jsonrpc":"2.0","method":"notifications/initialized"}') == ("ignore",)
    assert read_message('{"jsonrpc":"2.0","id":3,"result":{}}') == ("ignore",)  # an answer from the client
    assert read_message('{"jsonrpc":"1.0","id":3,"method":"ping"}')[1:3] == (3, -32600)
    assert read_message('{"jsonrpc":"2.0","id":3,"method":7}')[1:3] == (3, -32600)
    assert read_message('{"jsonrpc":"2.0","id":false,"method":"ping"}')[1:3] == (None, -32600)
    assert read_message("[")[1:3] == (None, -32700)


def test_serve_answers_each_line_in_order_and_traces_when_asked(tmp_path):
    import io

    from zmem.mcp.wire import METHOD_NOT_FOUND, RpcError, serve

    def handle(method, params, record):
        if method == "boom":
            raise ValueError("a bug")
        if method == "tools/call":
            if record is not None:
                record.update(tool=params["name"], start=1.0, end=2.0)
            return {"echo": params["name"]}
        raise RpcError(METHOD_NOT_FOUND, "Method not found", method)

    lines = ['{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_get"}}',
             '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}',
             "not json", '{"jsonrpc":"2.0","id":"x","method":"no/such"}', '{"jsonrpc":"2.0","id":9,"method":"boom"}']
    out = io.BytesIO()
    trace = tmp_path / "trace.jsonl"
    serve(io.BytesIO(("\n".join(lines) + "\n").encode()), out, handle, str(trace))
    answers = [json.loads(line) for line in out.getvalue().decode().splitlines()]
    assert answers == [{"jsonrpc": "2.0", "id": 1, "result": {"echo": "memory_get"}},
                       {"jsonrpc": "2.0", "id": None, "error": {"code": -32700,
                                                                "message": "Parse error: the request line is not JSON"}},
                       {"jsonrpc": "2.0", "id": "x", "error": {"code": -32601, "message": "Method not found",
                                                               "data": "no/such"}},
                       {"jsonrpc": "2.0", "id": 9, "error": {"code": -32603, "message": "Internal error: a bug in "
                                                             "zmem; the server's stderr has the traceback"}}]
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(r.get("id"), r.get("method"), r.get("tool")) for r in records] == \
        [(1, "tools/call", "memory_get"), (None, None, None), ("x", "no/such", None), (9, "boom", None)]
    assert all(r["src"] == "mcp" and r["read"] <= r["reply"] for r in records)


def test_serve_stops_quietly_when_the_client_no_longer_reads():
    import io

    from zmem.mcp.wire import serve

    class Gone(io.BytesIO):
        def write(self, data):
            raise BrokenPipeError(32, "Broken pipe")

    serve(io.BytesIO(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n' * 3), Gone(), lambda m, p, r: {})


@pytest.mark.slow  # a real zmem mcp process (~1-2 s)
def test_methods_and_tools_it_does_not_have_are_answered_with_what_it_has(raw):
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "completion/complete", "params": {}}))
    assert raw.answer()["error"] == {"code": -32601, "message": "Method not found", "data": "completion/complete"}
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call"}))
    got = raw.answer()
    assert got["error"]["code"] == -32602 and "tool name" in got["error"]["message"]
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "memory_serch"}}))
    got = raw.answer()["result"]
    assert got["isError"] and got["content"][0]["text"].startswith("unknown tool: memory_serch\nhint: zmem's tools are memory_search")
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "resources/list"}))
    assert raw.answer()["result"] == {"resources": []}


@pytest.mark.slow  # a real zmem mcp process (~1-2 s)
def test_zmem_trace_notes_when_each_request_was_read_run_and_answered(ws, tmp_path, monkeypatch):
    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv("ZMEM_TRACE", str(trace))
    server = RawServer(ws)
    try:
        server.initialize()
        server.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                "params": {"name": "memory_search", "arguments": {"query": "gateway"}}}))
        assert not server.answer()["result"].get("isError")
    finally:
        assert server.close() == 0
    records = {r["id"]: r for r in map(json.loads, trace.read_text().splitlines())}
    assert set(records) == {1, 2}  # the initialized notification got no answer and no line
    search = records[2]
    assert search["method"] == "tools/call" and search["tool"] == "memory_search" and search["pid"] == server.proc.pid
    assert search["read"] <= search["start"] <= search["end"] <= search["reply"]
