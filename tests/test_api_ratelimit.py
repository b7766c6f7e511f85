"""Per-user runs at once and checks per minute, counted across the API processes of one server in files."""

# ruff: noqa: F811 - pytest fixtures imported from tests.api_fixtures are redefined as arguments
from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

from app.api.ratelimit import InFlightLimit, SlidingWindowLimiter
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


def test_two_workers_share_a_users_checks_per_minute(tmp_path: Path) -> None:
    """Each worker counted the minute's checks in its own memory: on `serve --workers 2` with a limit of 5, 10 of 60
    checks sent in a minute ran. Counted in the user's file, the limit holds whichever worker runs the check."""
    now = [1000.0]
    first, second = (SlidingWindowLimiter(3, slots_dir=tmp_path, name="code-check", clock=lambda: now[0])
                     for _ in range(2))
    allowed = []
    for limit in (first, second, first):
        allowed.append(limit.acquire(7))
        now[0] += 10
    assert allowed == [None, None, None]
    assert second.acquire(7) == 30.0 and first.acquire(7) == 30.0  # the first check leaves the minute in 30 s
    assert second.acquire(8) is None  # another user counts apart
    now[0] = 1060.0
    assert second.acquire(7) is None and first.acquire(7) == 10.0


def test_a_count_file_torn_or_ahead_of_the_clock_is_read_safely(tmp_path: Path) -> None:
    """A worker killed mid-write leaves a torn tail; a clock set back leaves times ahead of now: neither may stop a
    user's checks for longer than the window."""
    now = [1000.0]
    limit = SlidingWindowLimiter(2, slots_dir=tmp_path, name="code-check", clock=lambda: now[0])
    assert limit.acquire(7) is None
    times = tmp_path / "code-check-7-times"
    times.write_bytes(times.read_bytes() + struct.pack("<d", 5000.0) + b"\x01\x02\x03")  # ahead, then torn
    assert limit.acquire(7) is None and limit.acquire(7) == 60.0
    now[0] += 60
    assert limit.acquire(7) is None


def test_a_second_worker_refuses_a_check_past_the_users_minute(api, alice, bank) -> None:
    """The limit of 5 a minute spent on one worker (an app on the same data directory); another worker refused
    nothing before."""
    from fastapi.testclient import TestClient

    from app.config import Settings
    from app.main import create_app

    worker = create_app(Settings(data_dir=api.app.state.settings.data_dir, code_checks_per_minute=5))
    worker.dependency_overrides.update(api.app.dependency_overrides)  # the same database, bank and sandbox
    other = TestClient(worker)
    task = next(q for q in bank if q.code is not None)
    body = {"question_id": task.id, "code": PASSING_MARK}
    assert [alice.post("/v1/code/check", json=body).status_code for _ in range(5)] == [200] * 5
    reply = other.post("/v1/code/check", json=body, headers=api.as_user("alice"))
    assert "the limit is 5 per 60 s" in assert_problem(reply, 429)["detail"]
    assert 1 <= int(reply.headers["retry-after"]) <= 60
    assert other.post("/v1/code/check", json=body, headers=api.as_user("bob")).status_code == 200
