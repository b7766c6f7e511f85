"""Vectors of bank texts kept on disk between runs, so a process does not re-embed the rubrics.

Every `interviewer grade` run and every server start used to embed the rubric texts, cues and
claims of each question it met, and the reference sentences its misconception probes learn from
(~7,900 texts for the whole bank, ~11 s on 2 cores), before scoring its first answer. They change
only when the bank does, so they are stored per model, keyed by a hash of the text.
Candidates' answers never go through here (research scripts may pass one to keep their vectors).
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from knowledge.embeddings import Embedder, Tokens

log = logging.getLogger(__name__)


class StoredEmbedder(Embedder):
    """Looks each text up on disk first; embeds only the missing ones and stores them.

    A store that cannot be opened or written (read-only disk, locked file) only costs speed: the
    texts are embedded as if there were no store, and the reason is logged once."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self._inner = inner
        self.name, self.dimensions = inner.name, inner.dimensions
        self._fingerprint = inner.fingerprint  # read once: it may look up package versions
        self._path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._broken = False

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        keys = [_key(self._fingerprint, t) for t in texts]
        found = self._read(list(dict.fromkeys(keys)))
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if missing:
            fresh = self._inner.embed_batch(list(missing.values()))
            found.update(zip(missing, fresh, strict=True))
            self._write({k: found[k] for k in missing})
        if not keys:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        self.dimensions = len(found[keys[0]])
        return np.stack([found[k] for k in keys])

    def read(self, texts: Sequence[str]) -> tuple[np.ndarray, list[Tokens]]:
        """Vectors and each text's word pieces, both stored (a reference answer's pieces cost a model
        pass of ~35 tokens per sentence: ~4 s for the bank's 110 questions on 2 cores, more as it grows); a text missing
        either is read again in one pass that gives both."""
        keys = [_key(self._fingerprint, t) for t in texts]
        piece_keys = [_key(self._fingerprint, f"{t}\0pieces") for t in texts]
        vectors = self._read(list(dict.fromkeys(keys)))
        if vectors:
            self.dimensions = len(next(iter(vectors.values())))
        pieces = {k: _tokens(w, v, self.dimensions)
                  for k, w, v in self._query("SELECT key, words, vectors FROM pieces WHERE key IN ({})", piece_keys)}
        missing = {t: (k, pk) for t, k, pk in zip(texts, keys, piece_keys, strict=True)
                   if k not in vectors or pk not in pieces}
        if missing:
            fresh, fresh_pieces = self._inner.read(list(missing))
            self.dimensions = fresh.shape[1]
            vectors.update((k, v) for (k, _), v in zip(missing.values(), fresh, strict=True))
            pieces.update((pk, t) for (_, pk), t in zip(missing.values(), fresh_pieces, strict=True))
            self._write({k: vectors[k] for k, _ in missing.values()})
            rows = [(pk, " ".join(pieces[pk].words), pieces[pk].vectors.astype(np.float32).tobytes())
                    for _, pk in missing.values()]
            self._execute("INSERT OR REPLACE INTO pieces (key, words, vectors) VALUES (?, ?, ?)", rows)
        if not keys:
            return np.zeros((0, self.dimensions), dtype=np.float32), []
        return np.stack([vectors[k] for k in keys]), [pieces[k] for k in piece_keys]

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and not self._broken:
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self._path, check_same_thread=False, timeout=5)
                db.execute("PRAGMA journal_mode=WAL")  # server workers read while one writes
                db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
                db.execute("CREATE TABLE IF NOT EXISTS pieces (key TEXT PRIMARY KEY, words TEXT, vectors BLOB)")
                self._db = db
            except (sqlite3.Error, OSError) as exc:
                self._give_up(exc)
        return self._db

    def _read(self, keys: list[str]) -> dict[str, np.ndarray]:
        return {k: np.frombuffer(blob, dtype=np.float32) for k, blob in
                self._query("SELECT key, vector FROM vectors WHERE key IN ({})", keys)}

    def _write(self, vectors: dict[str, np.ndarray]) -> None:
        self._execute("INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)",
                      [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in vectors.items()])

    def _query(self, sql: str, keys: list[str]) -> list[tuple]:
        out: list[tuple] = []
        with self._lock:
            db = self._connect()
            if db is None or not keys:
                return out
            try:
                for start in range(0, len(keys), 500):  # SQLite caps the number of bound parameters
                    chunk = keys[start : start + 500]
                    out.extend(db.execute(sql.format(",".join("?" * len(chunk))), chunk))
            except sqlite3.Error as exc:
                self._give_up(exc)
        return out

    def _execute(self, sql: str, rows: list[tuple]) -> None:
        with self._lock:
            db = self._connect()
            if db is None:
                return
            try:
                with db:
                    db.executemany(sql, rows)
            except sqlite3.Error as exc:
                self._give_up(exc)

    def _give_up(self, exc: Exception) -> None:
        if not self._broken:
            log.warning("stored rubric vectors unavailable at %s (%s); embedding them each run", self._path, exc)
        self._broken = True
        self._db = None


def _tokens(words: str, blob: bytes, dimensions: int) -> Tokens:
    names = words.split(" ") if words else []
    vectors = np.frombuffer(blob, dtype=np.float32)
    return Tokens(names, vectors.reshape(len(names), -1) if names else np.zeros((0, dimensions), np.float32))


def _key(fingerprint: str, text: str) -> str:
    """The embedder's fingerprint (model, version, endpoint) is part of the key: vectors of two
    models, or two versions of one, must never mix."""
    return hashlib.sha256(f"{fingerprint}\0{text}".encode()).hexdigest()
