"""First contact: `interviewer serve` on a fresh data directory with the default model, no ingest.

Run from the repository root:  .venv/bin/python bench/bench_first_start.py

Prints when the port opened (and the serve process's CPU time then), when the first question was served (a
session asked for as soon as the port opened, again after each 503), when /readyz first answered 200 (target:
within 60 s on 2 cores), the serve process's CPU time until then (a figure that does not depend on what else the
machine runs),
the /readyz states seen on the way, and one session's answer latencies against a second session's:
ready should mean the first candidate is served at full speed. Then, on the data directory serve indexed,
a terminal candidate's start: a one-question `interviewer interview` shown its question and quitting, median
wall and CPU time of three runs (no code sent, so no sandbox and no torch: 20.9 s -> 8.4 s wall when they
started with every run, load 9 on 2 cores); `--serve-only` leaves that part out. Asserts nothing.
"""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
ANSWERS = [
    "Autograd records the operations on tensors that require grad in a graph; backward applies the chain rule.",
    "I am not sure, something with gradients.",
    "Each result keeps a grad_fn, and backward walks those nodes in reverse to the leaves.",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_ready(base: str, proc: subprocess.Popen, started: float) -> dict[str, object]:
    """Launch to port open (and the serve process's CPU time then), to the first question served (a session created
    as soon as the port opened, come back after each 503), and to /readyz 200, with the /readyz states on the way."""
    seen: dict[str, object] = {"states": []}
    states: list[str] = seen["states"]  # type: ignore[assignment]
    while proc.poll() is None:
        try:
            reply = httpx.get(f"{base}/readyz", timeout=5)
        except httpx.TransportError:
            time.sleep(0.2)
            continue
        if "opened" not in seen:
            seen.update(opened=time.monotonic() - started, cpu_open=cpu_seconds(proc.pid))
        state = reply.json().get("detail", "ready")
        if not states or states[-1] != state:
            states.append(state)
        if "first_question" not in seen:
            created = httpx.post(f"{base}/v1/sessions", json={"num_questions": 1}, timeout=120)
            if created.status_code == 201:
                seen["first_question"] = time.monotonic() - started
            continue
        if reply.status_code == 200:
            seen["ready"] = time.monotonic() - started
            return seen
        time.sleep(0.2)
    raise SystemExit(f"serve exited with {proc.returncode}")


def session_latencies(client: httpx.Client) -> list[float]:
    t0 = time.perf_counter()
    session = client.post("/v1/sessions", json={"num_questions": len(ANSWERS), "topics": ["autograd"]}).json()
    times, prompt = [time.perf_counter() - t0], session["prompt"]
    for answer in ANSWERS:
        if prompt is None:
            break
        t0 = time.perf_counter()
        reply = client.post(f"/v1/sessions/{session['id']}/answers", json={"text": answer, "turn": prompt["turn"]})
        times.append(time.perf_counter() - t0)
        prompt = reply.raise_for_status().json()["prompt"]
    return times


def terminal_start(env: dict[str, str], runs: int = 3) -> tuple[float, float]:
    """Median wall and CPU seconds of a one-question terminal interview that quits at its first question."""
    walls, cpus = [], []
    for _ in range(runs):
        before, started = os.times(), time.monotonic()
        subprocess.run([sys.executable, "-c", "from app.cli import main; main()", "interview", "--questions", "1"],
                       env=env, cwd=ROOT, input=":quit\n", text=True, capture_output=True, check=True)
        after = os.times()
        walls.append(time.monotonic() - started)
        cpus.append(after.children_user + after.children_system - before.children_user - before.children_system)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    print(f"load average before start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="first-start-", ignore_cleanup_errors=True) as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("INTERVIEWER_")}
        env.update(INTERVIEWER_DATA_DIR=f"{tmp}/data", INTERVIEWER_AUTH_DISABLED="true")
        port = free_port()
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-c", "from app.cli import main; main()", "serve", "--port", str(port)],
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            seen = wait_ready(base, proc, started)
            cpu = cpu_seconds(proc.pid)
            print(f"port open after {seen['opened']:.1f} s ({seen['cpu_open']:.1f} s CPU); first question after "
                  f"{seen['first_question']:.1f} s; ready (/readyz 200) after {seen['ready']:.1f} s (target 60 s)")
            print(f"serve process CPU time until ready: {cpu:.1f} s; /readyz states: {' -> '.join(seen['states'])}")
            with httpx.Client(base_url=base, timeout=60) as client:
                for name in ("first session", "second session"):
                    create, *answers = session_latencies(client)
                    print(f"{name}: create {create * 1000:.0f} ms, answers "
                          + ", ".join(f"{t * 1000:.0f}" for t in answers) + " ms")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        if "--serve-only" in sys.argv:
            return
        wall, cpu = terminal_start(env)
        print(f"terminal interview, one question shown then :quit (indexed data dir): median {wall:.1f} s wall, "
              f"{cpu:.1f} s CPU")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
