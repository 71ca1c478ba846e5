"""A real HTTP server on loopback that speaks the OpenAI chat completions API, for `reflect --llm`."""
from __future__ import annotations

import json

from helpers.embed_server import JsonHandler, LoopbackServer


class ChatServer(LoopbackServer):
    """The chat completions API: the summary names the entity and counts the facts it was given."""

    def __init__(self):
        self.requests: list[dict] = []
        self.fail = False
        outer = self

        class Handler(JsonHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                if outer.fail or not self.path.endswith("/chat/completions"):
                    return self._send(500, {"error": {"message": "boom"}})
                facts = body["messages"][-1]["content"].count("\n- ")
                text = f"{body['messages'][-1]['content'].splitlines()[0]} has {facts} known facts."
                self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": text}}]})

        self.serve(Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
