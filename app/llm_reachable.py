"""Whether the configured model server answers, for /readyz: a cheap GET {base_url}/models, remembered briefly.

The interviewer works without the model (every call falls back offline with a note), so this never makes the
API unready; it says, before the first answer is scored, that the model is down or misconfigured and what to fix.
"""

from __future__ import annotations

import threading
import time

import httpx

from app.llm_failures import NOT_AN_API, WRONG_KEY

# Long enough that a monitor polling /readyz every second does not query the model server each time, short
# enough that a server started (or stopped) after the API shows within a few polls.
REMEMBER_S = 15.0
# /readyz waits at most this long for the model server (a hung one must not make readiness hang).
PROBE_TIMEOUT_S = 2.0

_seen: dict[tuple[str, str], tuple[float, bool, str]] = {}
_lock = threading.Lock()


def model_reachable(base_url: str, api_key: str, model: str) -> tuple[bool, str]:
    """(reachable and serving `model`, what was found), from a probe at most REMEMBER_S old."""
    key = (base_url, model)
    with _lock:  # one probe at a time: concurrent polls share its answer rather than each asking
        cached = _seen.get(key)
        if cached is not None and time.monotonic() - cached[0] < REMEMBER_S:
            return cached[1], cached[2]
        ok, detail = _probe(base_url, api_key, model)
        _seen[key] = (time.monotonic(), ok, detail)
        return ok, detail


def _probe(base_url: str, api_key: str, model: str) -> tuple[bool, str]:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        reply = httpx.get(base_url.rstrip("/") + "/models", headers=headers, timeout=PROBE_TIMEOUT_S)
    except httpx.TimeoutException:
        return False, f"the model server did not answer within {PROBE_TIMEOUT_S:g} s"
    except httpx.HTTPError:
        return False, "the model server is unreachable (connection failed): is it running at INTERVIEWER_LLM_BASE_URL?"
    if reply.status_code in (401, 403):
        return False, WRONG_KEY
    if reply.headers.get("content-type", "").startswith("text/html"):
        return False, NOT_AN_API
    if reply.status_code != 200:  # some proxies have no /models: the server answers, which is what is known
        return True, f"the model server answers (GET /models: HTTP {reply.status_code})"
    try:
        served = [str(e["id"]) for e in reply.json().get("data") or [] if isinstance(e, dict) and "id" in e]
    except (ValueError, AttributeError, KeyError, TypeError):
        return False, NOT_AN_API
    if served and model not in served and f"{model}:latest" not in served:
        return False, f"the model server does not serve {model!r} (check INTERVIEWER_LLM_MODEL)"
    return True, "reachable"
