"""Length-prefixed frames between the trusted parent, the sandbox worker and its children.

A frame is a 4-byte big-endian length, a JSON header, then binary blobs whose sizes the
header lists. Everything read from the sandbox is untrusted, so every size is bounded.
This module is bound into the jail, so it imports nothing beyond the standard library.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Sequence
from typing import Any

_LENGTH = struct.Struct(">I")
MAX_HEADER = 1 << 20


class FrameError(Exception):
    """A malformed or oversized frame."""


def encode(meta: dict[str, Any], blobs: Sequence[bytes] = ()) -> bytes:
    raw = json.dumps({**meta, "blobs": [len(b) for b in blobs]}).encode()
    return _LENGTH.pack(len(raw)) + raw + b"".join(blobs)


class FrameDecoder:
    """Incremental decoder: feed bytes as they arrive, take whole frames out."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buffer = bytearray()

    def feed(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > self.limit + MAX_HEADER + _LENGTH.size:
            raise FrameError(f"frame larger than {self.limit} bytes")

    def buffered(self) -> bool:
        """Bytes already read but not yet taken out as a frame."""
        return bool(self.buffer)

    def frame(self) -> tuple[dict[str, Any], list[bytes]] | None:
        if len(self.buffer) < _LENGTH.size:
            return None
        (size,) = _LENGTH.unpack_from(self.buffer)
        if size > MAX_HEADER:
            raise FrameError("frame header too large")
        start = _LENGTH.size + size
        if len(self.buffer) < start:
            return None
        try:
            meta = json.loads(bytes(self.buffer[_LENGTH.size:start]))
            sizes = [int(n) for n in meta["blobs"]]
        except (ValueError, KeyError, TypeError, RecursionError) as exc:  # "[[[[..." nests past the stack
            raise FrameError(f"bad frame header: {type(exc).__name__}") from exc
        if not isinstance(meta, dict) or any(n < 0 for n in sizes) or sum(sizes) > self.limit:
            raise FrameError("bad or oversized frame")
        end = start + sum(sizes)
        if len(self.buffer) < end:
            return None
        blobs, offset = [], start
        for n in sizes:
            blobs.append(bytes(self.buffer[offset:offset + n]))
            offset += n
        del self.buffer[:end]
        return meta, blobs

    def read(self, fd: int) -> tuple[dict[str, Any], list[bytes]] | None:
        """Blocking read of the next frame from `fd`; None at end of file."""
        while (frame := self.frame()) is None:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return None
            self.feed(chunk)
        return frame


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
