"""The bank topic a document heading names ("## Autograd", "Fine-tuning Questions"), so a draft under it starts
with its topic filled in. Only a heading whose subject is exactly one topic counts: "Training and Optimization
Techniques" names two subjects and is left to the curator."""

from __future__ import annotations

from functools import lru_cache

from ingest.formats import LEVELS
from knowledge.glossary import load_glossary
from knowledge.lexical import tokenize
from knowledge.schema import Topic

# Words a heading wraps its subject in: "Section 2: Autograd Interview Questions", "Autograd Basics".
_WRAPPING = frozenset(
    tokenize("interview interviews question questions answers q top level section part basics fundamentals "
             "essentials overview concepts")
) | frozenset(LEVELS)
_PYTORCH_WORDS = frozenset({"pytorch", "torch"})
# TensorFlow's words for an idea. The bank files TensorFlow questions under tensorflow-core, not under the topic
# the glossary pairs the word with (GradientTape is a synonym of autograd for search), so such a heading names
# tensorflow-core when it says so and no topic otherwise.
_TENSORFLOW_TERMS = tuple(
    tuple(tokenize(term)) for term in ("tensorflow", "keras", "tf", "gradienttape", "gradient tape")
)


def _mentions_tensorflow(words: tuple[str, ...]) -> bool:
    return any(words[i : i + len(term)] == term for term in _TENSORFLOW_TERMS for i in range(len(words)))


@lru_cache(maxsize=1)
def _topic_names() -> dict[tuple[str, ...], str]:
    """Each topic's words (both spellings, "optimisation" and "optimization") and its glossary synonyms."""
    glossary = load_glossary()
    names: dict[tuple[str, ...], str] = {}
    for topic in Topic:
        phrase = topic.value.replace("-", " ")
        synonyms = [s for s in glossary.synonyms(phrase) if not _mentions_tensorflow(tuple(tokenize(s)))]
        for term in (phrase, phrase.replace("isation", "ization"), *synonyms):
            names.setdefault(tuple(tokenize(term)), topic.value)
    return names


def heading_topic(heading: str) -> str | None:
    """The topic the heading names, or None. "PyTorch Autograd Questions" names autograd, "TensorFlow Core"
    tensorflow-core; "Autograd in TensorFlow" names none (the bank would file it under tensorflow-core)."""
    words = tuple(w for w in tokenize(heading) if w not in _WRAPPING and not w.isdigit())
    names = _topic_names()
    if words in names:
        return names[words]
    if _mentions_tensorflow(words):
        return None
    return names.get(tuple(w for w in words if w not in _PYTORCH_WORDS))
