"""A thin HTTP client for the interviewer API; every failure becomes one ApiError with a readable message."""

from __future__ import annotations

import os
from typing import Any

import httpx
from pydantic_settings import BaseSettings, SettingsConfigDict

# Code answers run hidden checks in the sandbox; give them room before calling the API unresponsive.
TIMEOUT = httpx.Timeout(60.0, connect=5.0)
# Beyond the longest step the API reports (GET /readyz `step_within_s`): the reply's own trip and the database.
STEP_MARGIN_S = 15.0
# What each API address reported, so the page (a new client on every rerun) asks once per process.
_STEP_S: dict[str, float] = {}


class ApiError(Exception):
    """What went wrong, in words fit for st.error: the API's problem `detail`, or why it was unreachable."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ApiClient:
    """Calls the API at `base_url`, sending `Authorization: Bearer <key>` when a key is given."""

    def __init__(self, base_url: str, api_key: str | None = None, *, transport: httpx.BaseTransport | None = None):
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=TIMEOUT, transport=transport)
        self._timeout_known = False

    def _wait_as_long_as_the_api_may_take(self) -> None:
        """With an LLM a step can take minutes (three model calls at the configured timeout each); the API
        says how long in /readyz, read once per API address, so an answer is not given up on while it is judged.
        If it cannot be read, the default stands."""
        self._timeout_known = True
        step_s = _STEP_S.get(self.base_url)
        if step_s is None:
            try:
                body = self._http.get("/readyz", timeout=httpx.Timeout(10.0, connect=5.0)).json()
                step_s = _STEP_S[self.base_url] = float(body["step_within_s"])
            except Exception:  # an API without the field, or unreachable now: the request itself will say so
                return
        if step_s + STEP_MARGIN_S > (TIMEOUT.read or 0.0):
            self._http.timeout = httpx.Timeout(step_s + STEP_MARGIN_S, connect=TIMEOUT.connect)

    def get(self, path: str, **params: Any) -> Any:
        return self._send("GET", path, params=params or None).json()

    def get_every_page(self, path: str, **params: Any) -> list[Any]:
        """Every item of a list the API sends a page at a time, following each reply's `Link: rel="next"`."""
        items: list[Any] = []
        url: str | None = path
        while url:
            response = self._send("GET", url, params=params or None)
            items += response.json()
            url, params = response.links.get("next", {}).get("url"), {}  # the next link carries the query
        return items

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._send("POST", path, json=body).json()

    def put(self, path: str, body: dict[str, Any]) -> Any:
        return self._send("PUT", path, json=body).json()

    def get_bytes(self, path: str, **params: Any) -> bytes:
        return self._send("GET", path, params=params or None).content

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        if method == "POST" and not self._timeout_known:  # actions run model calls; reads do not wait for them
            self._wait_as_long_as_the_api_may_take()
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise ApiError(f"the API at {self.base_url} did not answer in time; try again") from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise ApiError(f"cannot reach the API at {self.base_url}: {exc or type(exc).__name__}") from None
        if response.status_code >= 300:  # a redirect is no answer (the API redirects a path with a trailing /)
            raise ApiError(problem_detail(response), status=response.status_code)
        return response


def problem_detail(response: httpx.Response) -> str:
    """The problem+json `detail` when the API sent one, else the status line."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        return str(body["detail"])
    return f"the API answered {response.status_code} {response.reason_phrase}"


class _FrontEndSettings(BaseSettings):
    """The one setting the front end reads, from the same INTERVIEWER_* variables and .env file as the
    API's settings, without importing the application (the front end is only its HTTP client)."""

    model_config = SettingsConfigDict(
        env_prefix="INTERVIEWER_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    api_url: str = "http://127.0.0.1:8000"


def api_url() -> str:
    """INTERVIEWER_API_URL (environment or .env), or the API's default address."""
    try:
        return _FrontEndSettings().api_url
    except Exception:  # an unreadable .env must not stop the UI from finding the API
        return os.environ.get("INTERVIEWER_API_URL", "http://127.0.0.1:8000")
