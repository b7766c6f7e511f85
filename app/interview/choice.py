"""Recording a chosen question for a user whose other sessions (in other processes) choose at the same time."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from app.errors import ChoiceOutdatedError

T = TypeVar("T")


def until_recorded(choose: Callable[[int], T], asked: Callable[[], int]) -> T:
    """`choose(n)` with `n` the user's questions asked as read before the choice, again for as long as the store
    refuses it because another question was given since. Each refusal means another session got its question,
    so however many start at once every choice ends (a fixed number of tries failed the ninth of nine sessions
    started together); a refusal with no question given since the last one is not a race, and is raised."""
    refused = None
    while True:
        seen = asked()
        try:
            return choose(seen)
        except ChoiceOutdatedError:
            if seen == refused:
                raise
            refused = seen
