"""`zmem mcp`'s stdin and stdout: every request line gets an answer. The SDK's stdio transport
drops a line that is not a JSON-RPC message (it logs it at debug level), and a lone surrogate
escape such as "\\ud800" (what a Node client sends when it cuts a string inside an emoji) makes the
whole line invalid for its JSON parser: either way the client waits for its timeout. Here a lone
surrogate is read leniently (it becomes U+FFFD and the request is answered), and a line that still
is not a message is answered with a JSON-RPC error: -32700 (parse error) for what is not JSON,
-32600 (invalid request) for JSON that is not a message, with the request's id when the line has one
and null when it has none."""
from __future__ import annotations

import json
import re
from collections import deque

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE = re.compile("[\ud800-\udfff]")


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


def error_for(line: str | None) -> tuple[object, int, str]:
    """(id, code, message) of the JSON-RPC error answering a line the transport could not read as a
    message (line None: the transport did not say which)."""
    try:
        message = json.loads(line) if line is not None else None
    except (ValueError, RecursionError):
        return None, -32700, "Parse error: the request line is not JSON"
    if line is None:
        return None, -32700, "Parse error: a request line could not be read as a JSON-RPC message"
    rid = message.get("id") if isinstance(message, dict) else None
    if isinstance(rid, bool) or not isinstance(rid, (str, int)):
        rid = None
    return rid, -32600, "Invalid Request: the line is JSON but not a JSON-RPC 2.0 message"


def bad_id(line: str | None) -> tuple[object, int, str] | None:
    """The JSON-RPC error answering a line the transport read as a notification although it has an
    "id" (null, a fraction, a boolean, an object: MCP's ids are strings or integers, and the SDK
    then takes the line for a notification, which nobody answers); None for a real notification."""
    try:
        message = json.loads(line) if line is not None else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or "id" not in message:
        return None
    return None, -32600, "Invalid Request: id must be a string or an integer"


class LenientLines:
    """The wire's stdin (a binary file) as text lines for the SDK's transport, each passed through
    lenient(). The transport turns every line into exactly one item (a message, or the exception
    saying why it is none), in order: `lines` keeps each line handed out until take() is called for
    its item, so that the error answering a bad line carries that line's id."""

    def __init__(self, raw):
        self.raw = raw
        self.lines: deque[str] = deque()

    def readline(self) -> str:
        data = self.raw.readline()
        line = lenient(data.decode("utf-8", "replace"))
        if line:
            self.lines.append(line)
        return line

    def take(self) -> str | None:
        """The line the transport's next item came from."""
        return self.lines.popleft() if self.lines else None

    def close(self) -> None:  # the wire is not ours to close
        pass


QUIET_END = 300.0  # seconds the answers to the last requests may take once input has ended


def _request_id(item):
    message = getattr(item, "message", None)
    root = getattr(message, "root", message)
    if type(root).__name__ != "JSONRPCRequest":
        return None
    return getattr(root, "id", None)


def _cancelled_id(item):
    message = getattr(item, "message", None)
    root = getattr(message, "root", message)
    if type(root).__name__ != "JSONRPCNotification" or getattr(root, "method", None) != "notifications/cancelled":
        return None
    params = getattr(root, "params", None) or {}
    return params.get("requestId") if isinstance(params, dict) else None


class AnsweredWrites:
    """The server's write stream, noting which requests got their answer (a response or an error)."""

    def __init__(self, inner, pending: set):
        self.inner, self.pending = inner, pending

    async def send(self, item) -> None:
        await self.inner.send(item)
        message = getattr(item, "message", None)
        root = getattr(message, "root", message)
        if type(root).__name__ in ("JSONRPCResponse", "JSONRPCError"):
            self.pending.discard(getattr(root, "id", None))

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self):
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self.inner.__aexit__(*exc)


def _is_notification(item) -> bool:
    message = getattr(item, "message", None)
    return type(getattr(message, "root", message)).__name__ == "JSONRPCNotification"


class AnsweringReader:
    """The transport's read stream as the server reads it, but an item that is an exception (a line
    that is not a message) is answered here with a JSON-RPC error on the write stream instead of
    reaching the server, which would only log it."""

    def __init__(self, inner, write, lines: LenientLines, answer):
        self.inner, self.write, self.source, self.answer = inner, write, lines, answer
        self.pending: set = set()  # ids of requests handed to the server and not answered yet

    def answering(self, write) -> "AnsweredWrites":
        """The write stream for the server: it tells this reader which requests were answered."""
        return AnsweredWrites(write, self.pending)

    @property
    def last_context(self):
        return getattr(self.inner, "last_context", None)

    async def receive(self):
        while True:
            item = await self.inner.receive()
            line = self.source.take()
            if not isinstance(item, Exception):
                if _is_notification(item) and (error := bad_id(line)):
                    await self.write.send(self.answer(*error))
                    continue
                if (rid := _request_id(item)) is not None:
                    self.pending.add(rid)
                elif (cancelled := _cancelled_id(item)) is not None:
                    self.pending.discard(cancelled)  # a cancelled request gets no answer: not waited for
                return item
            await self.write.send(self.answer(*error_for(line)))

    def __aiter__(self):
        return self

    async def __anext__(self):
        from anyio import EndOfStream
        try:
            return await self.receive()
        except EndOfStream:
            # the end of input (`printf … | zmem mcp`): the SDK cancels the requests still running when the
            # read stream ends, so the last requests of a piped batch were never answered; end only
            # once every request read has its answer (or after QUIET_END seconds)
            import anyio
            with anyio.move_on_after(QUIET_END):
                while self.pending:
                    await anyio.sleep(0.01)
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()
