"""One lock per key (a session, a user), for as long as someone holds or waits on it.

Striped locks (a fixed table indexed by key modulo its size) made unrelated sessions and users wait on each other:
with a local LLM, a step holds its lock for minutes. A weak table keeps one lock per key and drops it once no
request references it, so it stays as small as the work in flight."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable


class KeyedLocks:
    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[Hashable, threading.Lock] = weakref.WeakValueDictionary()
        self._guard = threading.Lock()

    def lock(self, key: Hashable) -> threading.Lock:
        """The key's lock; callers must keep the returned object referenced while they use it."""
        with self._guard:
            found = self._locks.get(key)
            if found is None:
                found = self._locks[key] = threading.Lock()
            return found
