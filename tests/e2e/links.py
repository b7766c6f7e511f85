"""Relays of the app's WebSocket messages that play a bad link between the page and the app: messages cut off, or
held back and delivered together."""

from __future__ import annotations

from typing import Any


class CutLink:
    """From `cut()` on, the page's messages to the app on its connection of the moment are dropped: as what a page
    sends while it unloads, which never arrives. A reload's new connection is not cut."""

    def __init__(self) -> None:
        self.current: Any = None
        self.cut_off: set[int] = set()

    def route(self, socket: Any) -> None:
        app = socket.connect_to_server()
        self.current = socket
        socket.on_message(lambda message: None if id(socket) in self.cut_off else app.send(message))

    def cut(self) -> None:
        self.cut_off.add(id(self.current))


class SlowLink:
    """The app's messages to the page held back on request and then delivered together, as a slow or buffering
    link delivers them: the page then draws a whole run in one step."""

    def __init__(self) -> None:
        self.holding = False
        self.held: list[Any] = []
        self.socket: Any = None

    def route(self, socket: Any) -> None:
        self.socket = socket
        server = socket.connect_to_server()
        server.on_message(lambda message: self.held.append(message) if self.holding else socket.send(message))

    def release_when_quiet(self, page: Any, done: Any) -> None:
        """Once `done()` and no message came for 2 s (the run has finished), deliver what was held."""
        quiet = 0
        while quiet < 4:
            count = len(self.held)
            page.wait_for_timeout(500)  # lets Playwright take in the messages meanwhile
            quiet = quiet + 1 if len(self.held) == count and done() else 0
        self.holding = False
        for message in self.held:
            self.socket.send(message)
        self.held.clear()


class HeldRuns(SlowLink):
    """The app's messages to the page held back while `holding`, then let through a run at a time: the page lags a run
    behind the app, as it does when the app answers faster than the page draws."""

    def end_of_run(self, drawing: str, after: int = 0) -> int | None:
        """Where the first run held (from `after` on) that draws `drawing` ends, or None before it has ended."""
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        drew = False
        for at, message in enumerate(self.held[after:], after):
            if not isinstance(message, bytes):
                continue
            drew = drew or drawing.encode() in message
            if drew and ForwardMsg.FromString(message).WhichOneof("type") == "script_finished":
                return at
        return None

    def release(self, upto: int | None = None) -> None:
        """Deliver what is held, up to and with `upto`, or all of it and stop holding."""
        end = len(self.held) if upto is None else upto + 1
        for message in self.held[:end]:
            self.socket.send(message)
        del self.held[:end]
        self.holding = upto is not None
