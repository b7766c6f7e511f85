"""Per-user runs at once, counted across the API processes of one server by locks on files in the data directory."""

# ruff: noqa: F811 - pytest fixtures imported from tests.api_fixtures are redefined as arguments
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from app.api.ratelimit import InFlightLimit
from tests.api_fixtures import PASSING_MARK, alice, api, assert_problem, scorer  # noqa: F401

REPO = Path(__file__).resolve().parents[1]


def test_two_workers_share_a_users_runs_at_once(tmp_path: Path) -> None:
    """Each worker's limit counted in its own memory, so two workers let a user run twice the cap."""
    first, second = (InFlightLimit(2, slots_dir=tmp_path, name="grading") for _ in range(2))
    code_checks = InFlightLimit(1, slots_dir=tmp_path, name="code-check")
    assert first.start(7) and second.start(7)
    assert not first.start(7) and not second.start(7)  # two running, wherever they were started
    assert first.start(8) and code_checks.start(7)  # another user, another kind of run
    second.finish(7)
    assert first.start(7) and not second.start(7)
    first.finish(99)  # nothing held for that key: nothing to let go


def test_a_worker_that_dies_frees_the_slots_it_held(tmp_path: Path) -> None:
    """A lease in the database would need an expiry to free a crashed worker's slot; the kernel drops its locks."""
    hold = ("import sys; from pathlib import Path; from app.api.ratelimit import InFlightLimit; "
            "limit = InFlightLimit(1, slots_dir=Path(sys.argv[1]), name='grading'); "
            "print(limit.start(7), flush=True); sys.stdin.read()")
    worker = subprocess.Popen([sys.executable, "-c", hold, str(tmp_path)], cwd=REPO, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "True"
        here = InFlightLimit(1, slots_dir=tmp_path, name="grading")
        assert not here.start(7)
    finally:
        worker.kill()
        worker.wait(10)
    assert here.start(7)


def test_a_slot_folder_that_cannot_be_written_is_a_503_that_says_so(api, alice, bank) -> None:
    """A read-only data directory, or a file where run-slots goes, was a bare 500 on every grade and code check."""
    data_dir = api.app.state.settings.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "run-slots").write_text("not a folder")
    task = next(q for q in bank if q.code is not None)
    for path, body in (("/v1/grade", {"question_id": "zero-grad", "answer": "It resets the gradients."}),
                       ("/v1/code/check", {"question_id": task.id, "code": PASSING_MARK})):
        refused = assert_problem(alice.post(path, json=body), 503)
        assert "data directory cannot be written" in refused["detail"] and str(data_dir) not in refused["detail"]
