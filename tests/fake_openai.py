"""A real OpenAI-compatible HTTP server on 127.0.0.1 with scripted replies, for the LLM seam's tests.

The real `openai` client (through langchain-openai) talks to it over a socket, so timeouts, retries,
status codes and response parsing are exercised for real. Each request consumes the next scripted
reply; every request body is recorded for assertions (prompt text, temperature, model name).

Replies take the shape the request asks for: `response_format` (langchain-openai's default
`json_schema` structured output) or no format at all get the text in `message.content`; a request
with `tools` (the `function_calling` method) gets it as the arguments of one tool call.

A request with `stream: true` gets the same reply as server-sent events, a few characters a chunk, the
way our client asks for every reply. `generating(text, token_s=...)` models a local server's one busy
slot: a streamed reply stops at the first chunk the client no longer reads; an unstreamed one is
worked out whole before anything is sent, however early the client gave up (`wait_idle` says when the
server is free again).

Two server traits vary the way real servers do: `models` (answered on GET /models, with an optional
context window as vLLM reports it) and `refuse_json_schema` (a 500 naming response_format for a
`json_schema` request, as llama-cpp-python answers; such requests are recorded, not scripted).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

# Waits in the LLM tests are on events, never on the machine's speed: a call whose reply must come gets a timeout no
# loaded machine reaches (a 0.5-1 s timeout failed sound replies at a load of 20 on 2 cores), and one that must time out
# is sent a reply that never comes while the test runs (the fake's stop wakes it at the end). A bound on how long a
# call took is then a fraction of that reply's delay: it proves the call did not wait for it, however busy the machine.
REPLIES_WITHIN_S = 60.0
NEVER_S = 300.0
DID_NOT_WAIT_S = NEVER_S / 5


@dataclass(frozen=True)
class Reply:
    """One scripted reply: message text, a refusal, or an HTTP error, optionally after a delay."""

    content: str = ""
    status: int = 200
    refusal: str | None = None
    delay_s: float = 0.0
    finish_reason: str = "stop"
    respond: Callable[[str], str] | None = None  # builds the content from the request's last message
    drip_s: float = 0.0  # send the headers, then a space (a comment when streamed) this often `drips` times
    drips: int = 0
    token_s: float = 0.0  # one chunk of a streamed reply this often; an unstreamed one after them all
    unstreamed: bool = False  # sent whole as JSON even when the request asks to stream (a server that cannot)
    page: bool = False  # sent as a 200 text/html page (a web site or a proxy at the base URL)


def content(value: Any, *, delay_s: float = 0.0) -> Reply:
    """A normal reply; dicts and lists are sent as JSON text, strings verbatim."""
    text = value if isinstance(value, str) else json.dumps(value)
    return Reply(content=text, delay_s=delay_s)


def echo(reword: Callable[[str], str]) -> Reply:
    """A reply made from the request: `reword` gets the last user message (the line to reword, say)."""
    return Reply(content="", respond=reword)


def broken_json(text: str = '{"points": [{"point_id": "subclass-static-methods", "verdict": ') -> Reply:
    return Reply(content=text)


def unstreamed(value: Any) -> Reply:
    """A normal reply, but sent as one JSON body to a request with `stream: true`."""
    return Reply(content=value if isinstance(value, str) else json.dumps(value), unstreamed=True)


def web_page(html: str = "<html><body>proxy error</body></html>") -> Reply:
    """A 200 HTML page instead of an API reply: the base URL points at a site or a proxy."""
    return Reply(content=html, page=True)


def slow(value: Any = "too late", *, delay_s: float = 5.0) -> Reply:
    """A reply that arrives after `delay_s`, beyond a client timeout set lower than that."""
    return content(value, delay_s=delay_s)


def dripping(value: Any, *, every_s: float, drips: int) -> Reply:
    """A reply that trickles in: each read is quick, the whole takes every_s * drips."""
    text = value if isinstance(value, str) else json.dumps(value)
    return Reply(content=text, drip_s=every_s, drips=drips)


def generating(text: str, *, token_s: float) -> Reply:
    """A reply a local server works out a chunk every `token_s`, as llama-cpp-python generates tokens."""
    return Reply(content=text, token_s=token_s)


def http_error(status: int = 500, message: str = "The server had an error") -> Reply:
    return Reply(content=message, status=status)


def refusal(message: str = "I'm sorry, I can't help with that.") -> Reply:
    return Reply(refusal=message)


def cut_off(text: str = '{"points": [{"point_id": "subclass-static-methods", "verdict": "cov') -> Reply:
    """A reply that stopped at the request's max_tokens."""
    return Reply(content=text, finish_reason="length")


def filtered(text: str = '{"points": [{"point_id": "subclass-static-methods", "verdict": "cov') -> Reply:
    """A reply the server's content filter stopped partway."""
    return Reply(content=text, finish_reason="content_filter")


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def prompt_text(self) -> str:
        """All message contents joined, for substring assertions."""
        return "\n".join(str(m.get("content", "")) for m in self.messages)


class FakeOpenAI:
    """The server; use as a context manager or through the `fake_openai` fixture."""

    def __init__(
        self, *, models: list[str] | None = None, context_tokens: int | None = None, refuse_json_schema: bool = False
    ) -> None:
        self.models = models
        self.context_tokens = context_tokens
        self.refuse_json_schema = refuse_json_schema
        self.requests: list[RecordedRequest] = []
        self.most_in_flight = 0  # the most requests the server was answering at one moment
        self._in_flight = 0
        self._working = 0  # chat requests being answered, delays and generation included
        self._idle = threading.Condition()
        self._replies: list[Reply] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}/v1"

    def script(self, replies: list[Reply | str | dict[str, Any]]) -> None:
        """Replace the queue of replies; plain strings and dicts become content replies."""
        with self._lock:
            self._replies = [r if isinstance(r, Reply) else content(r) for r in replies]

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._replies)

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping on a slow reply
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self, path: str, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(RecordedRequest(path=path, body=body))
            if not self._replies:
                return http_error(500, "fake_openai: no scripted reply left")
            reply = self._replies.pop(0)
        if reply.respond is not None:
            return content(reply.respond(self.requests[-1].messages[-1]["content"]), delay_s=reply.delay_s)
        return reply

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no chat request is being answered; False if one still was after `timeout_s`."""
        with self._idle:
            return self._idle.wait_for(lambda: self._working == 0, timeout_s)

    @contextmanager
    def _answering(self) -> Iterator[None]:
        with self._idle:
            self._working += 1
        try:
            yield
        finally:
            with self._idle:
                self._working -= 1
                self._idle.notify_all()

    def _delay(self, seconds: float) -> None:
        with self._lock:
            self._in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self._in_flight)
        self._stopping.wait(seconds)
        with self._lock:
            self._in_flight -= 1


def _completion(body: dict[str, Any], reply: Reply, number: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
    finish = reply.finish_reason
    if reply.refusal is not None:
        message.update(content=None, refusal=reply.refusal)
    elif body.get("tools"):
        name = _tool_name(body)
        message["content"] = None
        message["tool_calls"] = [
            {
                "id": f"call_fake_{number}",
                "type": "function",
                "function": {"name": name, "arguments": reply.content},
            }
        ]
        finish = "tool_calls" if finish == "stop" else finish
    return {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


# A token or so a chunk, as servers stream, but a long reply in at most MAX_CHUNKS: the client's work on each chunk
# (0.5 s for a 10,000-character reply in 4-character chunks) would otherwise eat into a test's 1 s timeout.
CHUNK_CHARS = 4
MAX_CHUNKS = 100


def _chunks(body: dict[str, Any], reply: Reply, number: int) -> Iterator[dict[str, Any]]:
    """The reply as `chat.completion.chunk` events, as an OpenAI-compatible server streams it."""
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": f"chatcmpl-fake-{number}", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    size = max(CHUNK_CHARS, -(-len(reply.content) // MAX_CHUNKS))
    pieces = [reply.content[i : i + size] for i in range(0, len(reply.content), size)]
    finish = reply.finish_reason
    yield chunk({"role": "assistant", "content": ""})
    if reply.refusal is not None:
        yield chunk({"refusal": reply.refusal})
    elif body.get("tools"):
        call = {"index": 0, "id": f"call_fake_{number}", "type": "function",
                "function": {"name": _tool_name(body), "arguments": ""}}
        yield chunk({"tool_calls": [call]})
        for piece in pieces:
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        finish = "tool_calls" if finish == "stop" else finish
    else:
        for piece in pieces:
            yield chunk({"content": piece})
    yield chunk({}, finish)


def _tool_name(body: dict[str, Any]) -> str:
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        return str(choice.get("function", {}).get("name", ""))
    return str(body["tools"][0]["function"]["name"])


def _handler_for(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            if self.path.rstrip("/") not in ("/v1/models", "/models") or fake.models is None:
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            window = {"max_model_len": fake.context_tokens} if fake.context_tokens else {}
            self._send(200, {"object": "list", "data": [{"id": m, "object": "model", **window} for m in fake.models]})

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            length = int(self.headers.get("Content-Length", 0))
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                self._send(400, {"error": {"message": "request body is not JSON", "type": "invalid_request"}})
                return
            if fake.refuse_json_schema and (body.get("response_format") or {}).get("type") == "json_schema":
                with fake._lock:
                    fake.requests.append(RecordedRequest(path=self.path, body=body))
                message = "Input should be 'text' or 'json_object' at body.response_format.type"
                self._send(500, {"error": {"message": message, "type": "internal_server_error"}})
                return
            reply = fake._next(self.path, body)
            with fake._answering():
                self._answer(body, reply, len(fake.requests))

        def _answer(self, body: dict[str, Any], reply: Reply, number: int) -> None:
            if reply.delay_s:
                fake._delay(reply.delay_s)
            if reply.status != 200:
                # retry-after-ms keeps the openai client's retry back-off short in tests.
                error = {"error": {"message": reply.content, "type": "server_error", "code": None}}
                self._send(reply.status, error, {"retry-after-ms": "10"})
                return
            if reply.page:
                data = reply.content.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            if body.get("stream") and not reply.unstreamed:
                self._stream(body, reply, number)
                return
            if reply.token_s:  # worked out whole first, as llama-cpp-python does an unstreamed reply
                fake._stopping.wait(reply.token_s * len(list(_chunks(body, reply, number))))
            self._send(200, _completion(body, reply, number), drip=reply)

        def _stream(self, body: dict[str, Any], reply: Reply, number: int) -> None:
            """Server-sent events; the first write that fails (the client gone) ends the reply."""
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                events = [b": ping\n\n"] * reply.drips + [
                    f"data: {json.dumps(c)}\n\n".encode() for c in _chunks(body, reply, number)
                ]
                for i, event in enumerate([*events, b"data: [DONE]\n\n"]):
                    self.wfile.write(event)
                    self.wfile.flush()
                    pause = reply.drip_s if i < reply.drips else reply.token_s
                    if pause and fake._stopping.wait(pause):
                        return
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up: stop generating, as llama-cpp-python does for a stream

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None,
                  drip: Reply | None = None) -> None:
            data = json.dumps(payload).encode()
            spaces = drip.drips if drip else 0
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(spaces + len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                for _ in range(spaces):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    if fake._stopping.wait(drip.drip_s if drip else 0):
                        return
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to answer

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (signature fixed by base)
            pass

    return Handler


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running fake server; `.script([...])` the replies, then point a client at `.base_url`."""
    with FakeOpenAI() as server:
        yield server
