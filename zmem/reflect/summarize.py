"""Optional prose summaries of an entity for `zmem reflect --llm`: one chat completion per entity
page from an OpenAI-compatible endpoint ([llm] settings; a local model through llama.cpp's server).
Off by default; without it reflect does everything else the same. The request goes over the standard
library (zmem.embedders.jsonhttp), as embeddings do: no SDK."""
from __future__ import annotations

import os
from dataclasses import dataclass

from zmem.errors import ZmemError

SYSTEM = ("You maintain an agent's memory. Summarize what is known about one entity in 2 to 4 plain sentences, "
          "using only the facts given, newest facts winning over older ones. No lists, no headings, no speculation.")
MAX_FACTS = 60


@dataclass
class ChatSettings:
    model: str
    base_url: str | None
    api_key: str | None
    headers: dict
    timeout: float

    @staticmethod
    def from_config(cfg) -> ChatSettings:
        """From the [llm] settings of a Config, as trusted."""
        from zmem.workspace.config import trust_error
        table = cfg.llm
        model = table.get("model")
        if not isinstance(model, str) or not model:
            message = "`zmem reflect --llm` needs a chat model"
            raise trust_error(cfg, "llm.model", message) or ZmemError(  # zmem.toml may name one, untrusted
                message, hint='add [llm] model = "…" (and base_url, api_key_env) to ~/.config/zmem/config.toml')
        env = table.get("api_key_env", "OPENAI_API_KEY")
        headers = table.get("headers", {})
        timeout = table.get("timeout", 60.0)
        if not isinstance(headers, dict) or not isinstance(timeout, (int, float)) or not isinstance(env, str):
            raise ZmemError("[llm] headers must be a table, timeout a number and api_key_env a name",
                            hint="see docs/facts.md, Opinions and `zmem reflect`")
        base_url = table.get("base_url")
        return ChatSettings(model, base_url if isinstance(base_url, str) else None, os.environ.get(env),
                            {str(k): str(v) for k, v in headers.items()}, float(timeout))


class Summarizer:
    retries = 2  # 429, 5xx and no answer are retried, with backoff or as Retry-After says
    backoff_base = 0.5

    def __init__(self, settings: ChatSettings):
        self.settings = settings

    def summary(self, name: str, facts: list) -> str:
        """A short prose summary of the facts (FactRow) about `name`; ZmemError when the model fails."""
        s = self.settings
        lines = [f"- {f.day or 'undated'} ({f.kind}{f', confidence {f.confidence:.2f}' if f.confidence is not None else ''}): "
                 f"{f.text}" for f in facts[:MAX_FACTS]]
        body = {"model": s.model, "temperature": 0,
                "messages": [{"role": "system", "content": SYSTEM},
                             {"role": "user", "content": f"Entity: {name}\nFacts, newest first:\n" + "\n".join(lines)}]}
        answer = self._post(body)
        try:
            text = (answer["choices"][0]["message"]["content"] or "").strip()
        except (KeyError, IndexError, TypeError, AttributeError):
            raise ZmemError("the chat model's answer has no choices[0].message.content",
                            hint="check [llm] base_url points at an OpenAI-compatible chat endpoint") from None
        if not text:
            raise ZmemError("the chat model returned an empty summary", hint="try another [llm] model")
        return " ".join(text.split())

    def _post(self, body: dict):
        import time

        from zmem.embedders import jsonhttp
        s = self.settings
        headers = {"authorization": f"Bearer {s.api_key}"} if s.api_key else {}
        headers.update(s.headers)
        url = jsonhttp.join_url(s.base_url or "https://api.openai.com/v1", "chat/completions")
        for attempt in range(self.retries + 1):
            wait = None
            try:
                return jsonhttp.post_json(url, body, headers=headers, timeout=s.timeout)
            except jsonhttp.HTTPStatusError as e:
                if e.status != 429 and e.status < 500 or attempt == self.retries:
                    raise ZmemError(f"the chat model failed: {e.status}: {e.message}", hint=HINT) from None
                wait = e.retry_after()
            except jsonhttp.Unreachable as e:
                if attempt == self.retries:
                    raise ZmemError(f"the chat model failed: cannot reach {url}: {e}", hint=HINT) from None
            except (jsonhttp.TLSError, jsonhttp.NotJSON) as e:
                raise ZmemError(f"the chat model failed: {url} answered {e}", hint=HINT) from None
            time.sleep(min(wait if wait is not None else self.backoff_base * 2 ** attempt, 30.0))


HINT = "check [llm] model, base_url and the API key; reflect without --llm still works"
