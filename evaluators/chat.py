"""The chat-model seam the LLM judge needs, declared here so that the judge depends on nothing above
it. `app/llm.py` implements it over OpenAI-compatible endpoints and the application passes it in."""

from __future__ import annotations

from typing import Protocol, TypeVar

from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)


class LLMError(Exception):
    """The model gave no usable reply; `reason` is short enough for a note in a transcript."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class StructuredChatModel(Protocol):
    """A chat model that replies as an instance of a pydantic schema, or raises LLMError.
    `prompt_budget` is how many tokens a prompt may take in its window (None when unknown)."""

    name: str

    @property
    def prompt_budget(self) -> int | None: ...

    def complete_structured(self, *, system: str, user: str, schema: type[T]) -> T: ...


CHARS_PER_TOKEN = 3.0  # English runs ~4 characters a token, code and symbols fewer: err on the long side


def estimate_tokens(*texts: str) -> int:
    """A tokenizer-free upper estimate of a prompt's length in tokens, for any model's tokenizer."""
    return int(sum(len(t) for t in texts) / CHARS_PER_TOKEN) + 16 * len(texts)  # + chat template
