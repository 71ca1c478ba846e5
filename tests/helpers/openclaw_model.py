"""A scripted model for real OpenClaw agent turns: an OpenAI-compatible chat completions server on
loopback (a real HTTP server in a thread) that records every request body and answers from a script.

OpenClaw reaches it as a custom provider (`models.providers.<id>` with `api: openai-completions` and
this server's baseUrl), so a turn driven by `openclaw agent` runs the gateway's whole agent loop —
system prompt, plugin prompt sections and hooks, tool calls and their results — and the test reads
what the model was sent. A reply is a tool call (name, arguments) or a final text; both are sent as
the server-sent events a streaming request asks for, or as one JSON answer."""
from __future__ import annotations

import json
import threading
from typing import Callable

from helpers.embed_server import JsonHandler, LoopbackServer

MODEL_ID = "scripted-1"
# decides the reply to a request body: ("tool", name, arguments) | ("text", text)
Script = Callable[[dict], tuple]


def last_user_text(body: dict) -> str:
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            return content_text(m)
    return ""


def content_text(message: dict) -> str:
    c = message.get("content")
    if isinstance(c, list):
        return "\n".join(p.get("text", "") for p in c if isinstance(p, dict))
    return c or ""


def system_text(body: dict) -> str:
    return "\n".join(content_text(m) for m in body.get("messages", []) if m.get("role") in ("system", "developer"))


def tool_results(body: dict) -> list[str]:
    return [content_text(m) for m in body.get("messages", []) if m.get("role") == "tool"]


def tool_names(body: dict) -> list[str]:
    return [t.get("function", {}).get("name") for t in body.get("tools") or []]


class ScriptedModel(LoopbackServer):
    def __init__(self, script: Script):
        self.script = script
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.calls = 0
        self.prompt_tokens = 100  # the usage every answer reports: a large one makes OpenClaw flush and compact
        outer = self

        class Handler(JsonHandler):
            def do_GET(self):  # model listing, if a client asks
                self._send(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no such endpoint {self.path}"}})
                with outer.lock:
                    outer.requests.append(body)
                    outer.calls += 1
                    n = outer.calls
                reply = outer.script(body)
                if body.get("stream"):
                    return self._stream(body, reply, n)
                if reply[0] == "tool":
                    message = {"role": "assistant", "content": None, "tool_calls": [_call(reply, n)]}
                    finish = "tool_calls"
                else:
                    message, finish = {"role": "assistant", "content": reply[1]}, "stop"
                self._send(200, {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0,
                                 "model": body.get("model", MODEL_ID), "usage": _usage(outer.prompt_tokens),
                                 "choices": [{"index": 0, "finish_reason": finish, "message": message}]})

            def _stream(self, body, reply, n):
                def chunk(delta, finish=None, usage=None):
                    c = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0,
                         "model": body.get("model", MODEL_ID),
                         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                    if usage:
                        c["usage"] = usage
                    return f"data: {json.dumps(c)}\n\n"

                if reply[0] == "tool":
                    parts = [chunk({"role": "assistant", "content": None, "tool_calls": [{"index": 0, **_call(reply, n)}]}),
                             chunk({}, "tool_calls", _usage(outer.prompt_tokens))]
                else:
                    parts = [chunk({"role": "assistant", "content": reply[1]}), chunk({}, "stop", _usage(outer.prompt_tokens))]
                raw = ("".join(parts) + "data: [DONE]\n\n").encode()
                self._send_raw(200, raw, "text/event-stream")

        self.serve(Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def provider(self, *, context_window: int = 128000) -> dict:
        """OpenClaw's models.providers entry for this server."""
        return {"baseUrl": self.url, "apiKey": "loopback-no-key", "api": "openai-completions",
                "models": [{"id": MODEL_ID, "name": "Scripted loopback model", "reasoning": False, "input": ["text"],
                            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                            "contextWindow": context_window, "maxTokens": 4096}]}


def _call(reply: tuple, n: int) -> dict:
    return {"id": f"call_{n}", "type": "function",
            "function": {"name": reply[1], "arguments": json.dumps(reply[2])}}


def _usage(prompt_tokens: int) -> dict:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": 10, "total_tokens": prompt_tokens + 10}
