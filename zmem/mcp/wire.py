"""`zmem mcp`'s stdin and stdout: newline-delimited JSON-RPC 2.0, one request at a time, every
request line answered. The SDK's stdio transport is not used: it hands each line, each tool call and
each answer to another thread or task (an anyio stream, a worker thread for a sync tool, a thread per
write), which cost a warm memory_search ~5-10 ms on a loaded two-core machine, more than the rest of
the server; tools run one at a time under the workspace lock anyway. Here the main thread reads a
line, answers it and writes the answer; a request piped before the end of input is answered before
the server exits (`printf … | zmem mcp`).

A lone surrogate escape such as "\\ud800" (what a Node client sends when it cuts a string inside an
emoji) is read leniently: it becomes U+FFFD and the request is answered. A line that still is not a
message is answered with a JSON-RPC error: -32700 (parse error) for what is not JSON, -32600
(invalid request) for JSON that is not a message, with the request's id when the line has one and
null when it has none (or when the id is not a string or an integer, which MCP requires).
Notifications and responses from the client get no answer.

ZMEM_TRACE=<file>: one JSON line per request with when it was read, when its tool started and
ended, and when its answer was ready to write (milliseconds of CLOCK_MONOTONIC, which every process of the
machine reads alike), for bench/bench_openclaw.py."""
from __future__ import annotations

import json
import logging
import os
import re
import time

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE = re.compile("[\ud800-\udfff]")

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603


class RpcError(Exception):
    """A request answered with a JSON-RPC error instead of a result."""

    def __init__(self, code: int, message: str, data=None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def lenient(line: str) -> str:
    """A request line with its lone surrogate escapes ("\\ud800" without its pair) as U+FFFD, in a
    form every JSON parser reads; any other line as it is (a pair such as "\\ud83d\\ude00" is fine)."""
    if not _SURROGATE_ESCAPE.search(line):
        return line  # nearly every line: one regex search
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return line  # not JSON: answered as such
    fixed = _replace_lone(message)
    return json.dumps(fixed, ensure_ascii=False) + "\n" if fixed != message else line


def _replace_lone(value):
    if isinstance(value, str):
        return _LONE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_lone(v) for v in value]
    if isinstance(value, dict):
        return {_replace_lone(k): _replace_lone(v) for k, v in value.items()}
    return value


def error_for(line: str) -> tuple[object, int, str]:
    """(id, code, message) of the JSON-RPC error answering a line that is not a message."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None, PARSE_ERROR, "Parse error: the request line is not JSON"
    rid = message.get("id") if isinstance(message, dict) else None
    return (rid if _valid_id(rid) else None), INVALID_REQUEST, \
        "Invalid Request: the line is JSON but not a JSON-RPC 2.0 message"


def _valid_id(rid) -> bool:
    return isinstance(rid, (str, int)) and not isinstance(rid, bool)


def read_message(line: str):
    """What a request line asks: ("request", id, method, params), ("ignore",) for a notification
    or a response from the client, or ("error", id, code, message) for a line that is no message."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return ("error", *error_for(line))
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return ("error", *error_for(line))
    method = message.get("method")
    if method is None:
        if "id" in message and ("result" in message or "error" in message):
            return ("ignore",)  # an answer to a request of ours (none are sent): nobody waits for it
        return ("error", *error_for(line))
    if not isinstance(method, str):
        return ("error", *error_for(line))
    if "id" not in message:
        return ("ignore",)  # a notification (initialized, cancelled: calls run one at a time, none is pending)
    if not _valid_id(message["id"]):  # null, a fraction, a boolean, an object: not an MCP id
        return ("error", None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    return ("request", message["id"], method, message.get("params"))


def _encode(message: dict) -> bytes:
    # a lone surrogate in a file name or a tool's text must not stop the server: written as "?"
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace") + b"\n"


def serve(inp, out, handle, trace: str | None = None) -> None:
    """Answer each request line of inp (a binary file) on out (a binary file) until inp ends.
    handle(method, params, record) returns a request's result (a dict) or raises RpcError; record
    is a dict it may note its tool's timing in (None unless tracing)."""
    log = open(trace, "a", buffering=1, encoding="utf-8") if trace else None
    try:
        for raw in inp:
            read = time.monotonic() * 1000 if log else 0.0
            kind, *rest = read_message(lenient(raw.decode("utf-8", "replace")))
            if kind == "ignore":
                continue
            record = {"src": "mcp", "pid": os.getpid(), "read": read} if log else None
            if kind == "error":
                rid, code, text = rest
                answer = {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": text}}
            else:
                rid, method, params = rest
                try:
                    answer = {"jsonrpc": "2.0", "id": rid, "result": handle(method, params, record)}
                except RpcError as e:
                    error = {"code": e.code, "message": e.message}
                    if e.data is not None:
                        error["data"] = e.data
                    answer = {"jsonrpc": "2.0", "id": rid, "error": error}
                except Exception:  # noqa: BLE001 - a bug answers this request, and the server goes on
                    logging.getLogger("zmem.mcp").exception("zmem mcp: %s failed", method)
                    answer = {"jsonrpc": "2.0", "id": rid, "error": {"code": INTERNAL_ERROR, "message":
                              "Internal error: a bug in zmem; the server's stderr has the traceback"}}
                if record is not None:
                    record.update(id=rid, method=method)
            line = _encode(answer)
            if log:  # taken before the write: once the client has the line, this process may wait for a CPU
                record["reply"] = time.monotonic() * 1000
            try:
                out.write(line)
                out.flush()
            except BrokenPipeError:
                return  # the client is gone: nobody reads the answers
            if log:
                log.write(json.dumps(record) + "\n")
    finally:
        if log:
            log.close()
