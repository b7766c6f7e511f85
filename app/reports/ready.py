"""When a session's scores may be shown: an interview-mode session keeps them, and its report, until it is over.

The refusal for the API's report, transcript and progress routes and the terminal's report alike: each had its own
copy of the test, and the API and the terminal their own words for the refusal. The rule itself is stated once, in
app.interview.models (the engine keeps those scores out of later sessions' review by it too).
"""

from __future__ import annotations

from app.errors import ConflictError
from app.interview.models import scores_withheld
from app.store.records import SessionRecord

__all__ = ["REPORT_WAITS", "require_report_ready", "scores_withheld"]

REPORT_WAITS = "an interview-mode report is ready once the session is completed"


def require_report_ready(session: SessionRecord, *, how_to_go_on: str = "") -> None:
    """A ConflictError (409 in the API, one line in the terminal) while the session's report is withheld; each caller
    may add how its candidate goes on (`interviewer interview --resume ID` in the terminal)."""
    if scores_withheld(session):
        raise ConflictError(f"{REPORT_WAITS}: {how_to_go_on}" if how_to_go_on else REPORT_WAITS)
