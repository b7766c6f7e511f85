"""What an OpenAI-compatible server says about itself, asked once: the models it serves and, where it
tells, its context window. Servers differ (OpenAI, Ollama, vLLM, llama.cpp, llama-cpp-python), so
every field is optional and a server that answers nothing here is simply not checked."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx

# Where servers report the context window in GET /models: vLLM `max_model_len`, llama.cpp's server
# `meta.n_ctx_train` (the trained window; its --ctx-size may be smaller and then shows in errors),
# LM Studio-style `context_length`.
_WINDOW_KEYS = ("max_model_len", "context_length", "context_window", "n_ctx")


@dataclass(frozen=True)
class ServerFacts:
    models: tuple[str, ...] | None = None  # None: the server did not list its models
    context_tokens: int | None = None

    def serves(self, model: str) -> bool:
        # Ollama lists "name:latest" and accepts the bare name for it
        return self.models is None or model in self.models or f"{model}:latest" in self.models


# A server that did not answer GET /models is not asked again for this long: a hung one held each answer for
# the probe's timeout twice (the judge's window, then the model check) before its call waited out its own.
RETRY_AFTER_S = 30.0


class ServerProbe:
    """GET {base_url}/models once per process; a server that cannot be reached is asked again later."""

    def __init__(self, *, base_url: str, api_key: str, model: str, timeout_s: float) -> None:
        self._url = base_url.rstrip("/") + "/models"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._model = model
        self._timeout_s = min(timeout_s, 10.0)
        self._facts: ServerFacts | None = None
        self._failed_at = -RETRY_AFTER_S
        self._lock = threading.Lock()

    def facts(self) -> ServerFacts:
        with self._lock:
            if self._facts is None:
                if time.monotonic() - self._failed_at < RETRY_AFTER_S:
                    return ServerFacts()
                try:
                    reply = httpx.get(self._url, headers=self._headers, timeout=self._timeout_s)
                except httpx.HTTPError:
                    self._failed_at = time.monotonic()
                    return ServerFacts()  # unreachable now: the chat call will say so; ask again later
                self._facts = _read(reply, self._model)
            return self._facts


def _read(reply: httpx.Response, model: str) -> ServerFacts:
    if reply.status_code != 200:
        return ServerFacts()  # no /models here (some proxies): nothing to check against
    try:
        entries = reply.json().get("data") or []
        ids = tuple(str(e["id"]) for e in entries if isinstance(e, dict) and "id" in e)
    except (ValueError, AttributeError, KeyError, TypeError):
        return ServerFacts()
    mine = next((e for e in entries if isinstance(e, dict) and e.get("id") == model), None)
    return ServerFacts(models=ids or None, context_tokens=_window(mine) if mine else None)


def _window(entry: dict[str, Any]) -> int | None:
    for where in (entry, entry.get("meta") or {}):
        for key in _WINDOW_KEYS:
            value = where.get(key) if isinstance(where, dict) else None
            if isinstance(value, int) and value > 0:
                return value
        if isinstance(where, dict) and isinstance(where.get("n_ctx_train"), int):
            return int(where["n_ctx_train"])
    return None
