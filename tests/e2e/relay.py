"""A loopback HTTP relay in front of the API that signs every request with the key of the test running now.

The browser tests share one API and one Streamlit server for the whole run (each start-up takes tens of seconds on
a busy machine), yet each test must be a user of its own: the questions a user was asked are not asked again, and
the pages offer the user's latest session. Streamlit reads its API address once, at start-up, and sends no key, so
it is pointed at this relay, and the relay adds `Authorization: Bearer <key>` of the current test's user. The tests'
own calls to the API go through it too. Tests run one at a time, so one current key is enough.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

# Headers of one hop, not to be passed on; the length is set again for the body as decoded by httpx.
HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
       "transfer-encoding", "upgrade", "content-length", "content-encoding"}


class KeyedRelay:
    def __init__(self, upstream: str, port: int) -> None:
        self.upstream = upstream.rstrip("/")
        self.key = ""
        # A session's GET waits while an answer is scored (its code run in the sandbox): no short limit here; the
        # callers have their own.
        self.client = httpx.Client(timeout=httpx.Timeout(600.0))
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self.server.daemon_threads = True
        self.server.relay = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{port}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="api-relay", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.client.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _relay(self) -> None:
        relay: KeyedRelay = self.server.relay  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        # The Host header goes on as sent, so that what the API builds from it names the relay.
        headers = {name: value for name, value in self.headers.items() if name.lower() not in HOP}
        headers["Authorization"] = f"Bearer {relay.key}"
        try:
            response = relay.client.request(self.command, relay.upstream + self.path, headers=headers, content=body)
        except httpx.HTTPError as exc:
            self.send_error(502, f"the relay could not reach the API: {type(exc).__name__}")
            return
        content = response.content
        self.send_response(response.status_code)
        for name, value in response.headers.multi_items():
            if name.lower() not in HOP and name.lower() not in ("date", "server"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _relay

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass  # the API logs the requests
