"""The question bank in Chroma: upsert by content hash, hybrid (embedding + BM25) search with filters."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import chromadb
from chromadb.config import Settings as ChromaSettings
from langchain_chroma import Chroma
from langchain_core.embeddings import Embeddings

from knowledge.bank_index import RankingIndex
from knowledge.embeddings import Embedder
from knowledge.errors import SearchError
from knowledge.glossary import load_glossary
from knowledge.lexical import BM25Index
from knowledge.schema import Framework, Kind, Question, Topic

FILTER_CHOICES: dict[str, tuple[str, ...]] = {
    "framework": tuple(f.value for f in Framework),
    "topic": tuple(t.value for t in Topic),
    "difficulty": ("1", "2", "3"),
    "kind": tuple(k.value for k in Kind),
}
# Entries embedded and written per step of an ingest, so a progress bar moves (the model batches
# by 16 anyway; a whole bank in one call is no faster).
UPSERT_CHUNK = 16
# Fusion weight of the lexical signal: names like `zero_grad` or `state_dict` are decisive and
# an embedding of a short query can miss them.
LEXICAL_WEIGHT = 0.2
# Where a query gets the glossary's synonyms added: "off", "lexical" (BM25 only) or "both" (the
# embedded query too). Chosen by bench/bench_search.py, which prints the three side by side.
EXPAND_QUERIES = "both"
# Seeds ask many questions twice, once per framework; a query that names one framework means it.
FRAMEWORK_NUDGE = 0.1
_FRAMEWORK_WORDS = {
    Framework.TENSORFLOW.value: re.compile(r"\b(tensorflow|tf|keras|gradienttape|savedmodel)\b", re.I),
    Framework.PYTORCH.value: re.compile(r"\b(pytorch|torch|nn\.module|autograd)\b", re.I),
}


def framework_named(query: str) -> str | None:
    """The one framework a query names, if exactly one."""
    named = [name for name, pattern in _FRAMEWORK_WORDS.items() if pattern.search(query)]
    return named[0] if len(named) == 1 else None


class _LangChainAdapter(Embeddings):
    """Lets LangChain's Chroma wrapper use our embedding seam."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._embedder.embed_batch(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._embedder.embed(text).tolist()


@dataclass(frozen=True)
class SearchHit:
    id: str
    question: str
    topic: str
    difficulty: int
    framework: str
    kind: str
    score: float
    # The entry holds a word of the query (stop words aside, glossary synonyms counted): a keyword match,
    # where the rest of a ranking is related in meaning only.
    shares_words: bool = False


@dataclass(frozen=True)
class UpsertReport:
    added: int
    updated: int
    unchanged: int
    removed: int

    @property
    def embedded(self) -> int:
        return self.added + self.updated


def chroma_client(*, path: str | None = None, host: str = "", port: int = 8000) -> Any:
    """Embedded PersistentClient by default; an HTTP client when a server host is configured."""
    settings = ChromaSettings(anonymized_telemetry=False)
    try:
        if host:
            return chromadb.HttpClient(host=host, port=port, settings=settings)
        return chromadb.PersistentClient(path=path or "data/chroma", settings=settings)
    except Exception as exc:  # chromadb raises bare Exception/ValueError for unreachable servers
        if host:
            raise SearchError(f"Chroma server at {host}:{port} is not reachable: {exc}") from exc
        raise SearchError(f"cannot open the Chroma store at {path}: {exc}") from exc


def collection_name(base: str, embedder: Embedder) -> str:
    """One collection per embedding model, so vectors of different sizes never mix."""
    name = re.sub(r"[^a-zA-Z0-9._-]+", "-", f"{base}-{embedder.name}").strip("-._")
    return name[:120]


class QuestionStore:
    """Chroma-backed store of bank entries with metadata for filtered retrieval."""

    def __init__(self, *, client: Any, embedder: Embedder, base_name: str = "question_bank") -> None:
        self._embedder = embedder
        self._client = client
        try:
            self._chroma = Chroma(
                collection_name=collection_name(base_name, embedder),
                embedding_function=_LangChainAdapter(embedder),
                client=client,
                collection_metadata={"hnsw:space": "cosine"},
            )
        except Exception as exc:
            raise SearchError(f"cannot open the Chroma collection: {exc}") from exc
        self._index: RankingIndex | None = None
        self._writing = threading.Lock()  # a search never caches a half-written bank

    def close(self) -> None:
        """Let go of the Chroma client. An embedded client's database connections and index files stay open in
        a process-wide cache of chromadb's until its last client is closed: a program that opens stores one after
        another (a CLI command each, `interviewer` run in-process) kept ~13 descriptors open per data folder.
        Stores of the same folder share one such system, which stays open while any of them is."""
        close = getattr(self._client, "close", None)
        if callable(close):
            close()  # chromadb's own: idempotent

    def __enter__(self) -> QuestionStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- ingest -----------------------------------------------------------------------------
    def stored_hashes(self) -> dict[str, str]:
        got = self._chroma.get(include=["metadatas"])
        return {i: (m or {}).get("hash", "") for i, m in zip(got["ids"], got["metadatas"], strict=True)}

    def upsert(
        self, questions: Sequence[Question], *, on_embedded: Callable[[int, int], None] | None = None
    ) -> UpsertReport:
        """Embed only entries that are new or changed; drop entries no longer in the bank.
        `on_embedded(done, total)` is told after each chunk, for a progress bar."""
        with self._writing:
            report = self._upsert(questions, on_embedded)
            self._index = None
        return report

    def _upsert(
        self, questions: Sequence[Question], on_embedded: Callable[[int, int], None] | None
    ) -> UpsertReport:
        stored = self.stored_hashes()
        changed = [q for q in questions if stored.get(q.id) != q.content_hash()]
        wanted = {q.id for q in questions}
        stale = [i for i in stored if i not in wanted]
        for start in range(0, len(changed), UPSERT_CHUNK):
            chunk = changed[start : start + UPSERT_CHUNK]
            vectors = self._embedder.embed_batch([q.embedding_text() for q in chunk])
            self._chroma._collection.upsert(
                ids=[q.id for q in chunk],
                embeddings=vectors.tolist(),
                documents=[q.lexical_text() for q in chunk],
                metadatas=[_metadata(q) for q in chunk],
            )
            if on_embedded:
                on_embedded(start + len(chunk), len(changed))
        if stale:
            self._chroma.delete(ids=stale)
        added = sum(1 for q in changed if q.id not in stored)
        return UpsertReport(
            added=added,
            updated=len(changed) - added,
            unchanged=len(questions) - len(changed),
            removed=len(stale),
        )

    def count(self) -> int:
        return int(self._chroma._collection.count())

    # --- search -----------------------------------------------------------------------------
    def search(self, query: str, *, k: int = 5, filters: dict[str, Any] | None = None) -> list[SearchHit]:
        """Best k entries for a query, fusing cosine similarity with BM25 over the same texts."""
        return self.search_many([query], k=k, filters=filters)[0]

    def search_many(
        self, queries: list[str], *, k: int = 5, filters: dict[str, Any] | None = None
    ) -> list[list[SearchHit]]:
        """`search` for each query, with the queries embedded in one batch: a server's warm-up looks up
        ~560 rubric points, and one at a time the model spent ~3.7 of its ~6 s on them (~1.5 s together)."""
        if any(not query or not query.strip() for query in queries):
            raise SearchError("empty query: give some words to search for")
        if k < 1:
            raise SearchError("k must be at least 1")
        where = build_where(filters or {})
        glossary = load_glossary()
        expanded = [glossary.expand(q) if EXPAND_QUERIES != "off" else q for q in queries]
        vectors = self._embedder.embed_batch(expanded if EXPAND_QUERIES == "both" else queries)
        return [
            self._fused(q, wide, vector.tolist(), k=k, where=where)
            for q, wide, vector in zip(queries, expanded, vectors, strict=True)
        ]

    def _fused(
        self, query: str, expanded: str, vector: list[float], *, k: int, where: dict[str, Any] | None
    ) -> list[SearchHit]:
        index = self._ranking_index()
        cosines = index.cosines(vector)
        lexical = index.lexical.scores(expanded)
        named = framework_named(query)  # the words typed, not the synonyms added
        hits = []
        for i in index.matching(where):
            meta = index.metadatas[i]
            fused = (1 - LEXICAL_WEIGHT) * float(cosines[i]) + LEXICAL_WEIGHT * lexical.get(meta["id"], 0.0)
            if named and meta["framework"] != Framework.GENERAL.value:
                fused += FRAMEWORK_NUDGE if meta["framework"] == named else -FRAMEWORK_NUDGE
            hits.append(
                SearchHit(
                    id=meta["id"],
                    question=meta["question"],
                    topic=meta["topic"],
                    difficulty=int(meta["difficulty"]),
                    framework=meta["framework"],
                    kind=meta["kind"],
                    score=round(fused, 4),
                    shares_words=meta["id"] in lexical,
                )
            )
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits[:k]

    def catalog(self, filters: dict[str, Any] | None = None) -> list[SearchHit]:
        """Every stored entry matching the filters (metadata only, no ranking)."""
        try:
            got = self._chroma.get(where=build_where(filters or {}), include=["metadatas"])
        except SearchError:
            raise
        except Exception as exc:
            raise SearchError(f"Chroma lookup failed: {exc}") from exc
        return [
            SearchHit(
                id=m["id"], question=m["question"], topic=m["topic"], difficulty=int(m["difficulty"]),
                framework=m["framework"], kind=m["kind"], score=0.0,
            )
            for m in got["metadatas"]
        ]

    def _ranking_index(self) -> RankingIndex:
        with self._writing:
            if self._index is None:
                self._index = self._read_index()
            return self._index

    def _read_index(self) -> RankingIndex:
        try:
            got = self._chroma.get(include=["documents", "embeddings", "metadatas"])
        except Exception as exc:
            raise SearchError(f"Chroma lookup failed: {exc}") from exc
        return RankingIndex(
            ids=got["ids"], vectors=got["embeddings"], metadatas=got["metadatas"], documents=got["documents"]
        )

    def _lexical_index(self) -> BM25Index:
        return self._ranking_index().lexical


def _metadata(question: Question) -> dict[str, Any]:
    return {
        "id": question.id,
        "question": question.question,
        "topic": question.topic.value,
        "framework": question.framework.value,
        "difficulty": question.difficulty,
        "kind": question.kind.value,
        "hash": question.content_hash(),
    }


def build_where(filters: dict[str, Any]) -> dict[str, Any] | None:
    """Translate filters to a Chroma `where`, rejecting unknown names and values with the choices."""
    clauses = []
    for name, value in filters.items():
        if value is None:
            continue
        if name not in FILTER_CHOICES:
            raise SearchError(f"unknown filter {name!r}: use one of {', '.join(FILTER_CHOICES)}")
        values = value if isinstance(value, list | tuple | set) else [value]
        for item in values:
            if str(item) not in FILTER_CHOICES[name]:
                choices = ", ".join(FILTER_CHOICES[name])
                raise SearchError(f"unknown {name} {item!r}: choose one of {choices}")
        typed = [int(v) if name == "difficulty" else str(v) for v in values]
        if not typed:
            continue
        clauses.append({name: typed[0]} if len(typed) == 1 else {name: {"$in": typed}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def open_store(
    *, data_dir: str, host: str = "", port: int = 8000, base_name: str = "question_bank", embedder: Embedder
) -> QuestionStore:
    """The store the settings describe: embedded under data_dir, or a Chroma server."""
    client = chroma_client(path=f"{data_dir}/chroma", host=host, port=port)
    try:
        if host:
            try:
                client.heartbeat()
            except Exception as exc:
                raise SearchError(f"Chroma server at {host}:{port} is not reachable: {exc}") from exc
        return QuestionStore(client=client, embedder=embedder, base_name=base_name)
    except BaseException:
        client.close()  # not left open in chromadb's cache by a store that never came to be
        raise
