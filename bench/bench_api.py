"""API load test: many simulated candidates answering text questions against a real server.

Starts `interviewer serve` on a free loopback port with a fresh data directory (offline mode: no
LLM), gives every simulated candidate its own user and key, and measures answer submissions
per second and latency percentiles at each concurrency level. Request counts are bounded.
Prints figures; asserts nothing.

    .venv/bin/python bench/bench_api.py                      # 10, 50, 200 sessions, MiniLM scorer
    .venv/bin/python bench/bench_api.py --levels 50 --answers 10 --workers 2
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
CLI = [sys.executable, "-c", "from app.cli import main; main()"]
WEAK_ANSWER = "I think it is something PyTorch does for you automatically, mostly for speed."


@dataclass
class Level:
    sessions: int
    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    spans: list[tuple[float, float]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """Answers per second from the first submission to the last reply."""
        if not self.spans:
            return 0.0
        return len(self.spans) / (max(e for _, e in self.spans) - min(s for s, _ in self.spans))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def make_keys(data_dir: Path, count: int) -> list[str]:
    """One user and key per simulated candidate, written straight into the server's database."""
    from app.store import open_repository

    repo = open_repository(f"sqlite:///{data_dir / 'interviewer.db'}")
    return [
        repo.create_api_key(repo.get_or_create_user(f"candidate-{i}").id, "bench")[0] for i in range(count)
    ]


def own_words(text: str, rng: random.Random) -> str:
    """Every candidate's answer is different text, as in real use: the server caches sentence
    vectors, and identical answers from simulated candidates would be scored almost for free."""
    sentences = [s for s in text.replace("\n", " ").split(". ") if s.strip()]
    tag = rng.randrange(10**9)
    return ". ".join(f"{s.strip()} (in my case {tag + i})" for i, s in enumerate(sentences))


async def candidate(
    client: httpx.AsyncClient,
    key: str,
    answers: int,
    reference: dict[str, str],
    level: Level,
    rng: random.Random,
    think_s: float,
) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    created = await client.post("/v1/sessions", json={"num_questions": 30}, headers=headers)
    if created.status_code != 201:
        level.errors.append(f"create {created.status_code}")
        return
    sid, prompt = created.json()["id"], created.json()["prompt"]
    for _ in range(answers):
        if prompt is None:
            break
        good = rng.random() < 0.5
        text = own_words(reference.get(prompt["question_id"], WEAK_ANSWER) if good else WEAK_ANSWER, rng)
        await asyncio.sleep(think_s * rng.random())
        start = time.perf_counter()
        try:
            reply = await client.post(f"/v1/sessions/{sid}/answers", json={"text": text, "turn": prompt["turn"]},
                                       headers=headers)
        except httpx.HTTPError as exc:
            level.errors.append(type(exc).__name__)
            continue
        end = time.perf_counter()
        level.latencies_ms.append((end - start) * 1000)
        level.spans.append((start, end))
        if reply.status_code != 200:
            level.errors.append(f"answer {reply.status_code}")
            continue
        prompt = reply.json()["prompt"]


async def run_level(
    base: str, keys: list[str], answers: int, reference: dict[str, str], think_s: float
) -> Level:
    level = Level(sessions=len(keys))
    # Idle connections are dropped before uvicorn's 5 s keep-alive timeout closes them under us.
    limits = httpx.Limits(
        max_connections=len(keys), max_keepalive_connections=len(keys), keepalive_expiry=2.0
    )
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120) as client:
        await asyncio.gather(
            *(
                candidate(client, key, answers, reference, level, random.Random(i), think_s)
                for i, key in enumerate(keys)
            )
        )
    return level


def start_server(env: dict[str, str], port: int, workers: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [*CLI, "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 180
    done_in_a_row = 0
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            # The server embeds every rubric in the background at start-up; a long-running server
            # has long finished, so measure after it. Each worker warms up on its own and any one
            # may answer, so several "done" replies in a row are required.
            ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
            warm = ready.status_code == 200 and ready.json().get("warm_up") == "done"
            done_in_a_row = done_in_a_row + 1 if warm else 0
            if done_in_a_row >= 5 * workers:
                return proc
        except httpx.TransportError:
            done_in_a_row = 0
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("server did not start and warm up in 180 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="10,50,200", help="Concurrent sessions per level.")
    parser.add_argument("--answers", type=int, default=5, help="Answers each candidate submits per level.")
    parser.add_argument("--workers", type=int, default=1, help="Server worker processes.")
    parser.add_argument("--embedder", default="minilm", help="minilm (the real offline scorer) or hash.")
    parser.add_argument(
        "--server-embedding",
        default="",
        help="runners, threads, or both as runners,threads: one server per mode, run in turn "
        "(INTERVIEWER_SERVER_EMBEDDING; default: the server's own default).",
    )
    parser.add_argument("--think-ms", type=float, default=0.0, help="Max random pause before each answer.")
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]

    from knowledge.loader import load_bank

    reference = {q.id: q.reference_answer for q in load_bank()}
    with tempfile.TemporaryDirectory(prefix="bench-api-") as tmp:
        data_dir = Path(tmp) / "data"
        env = {k: v for k, v in os.environ.items() if not k.startswith("INTERVIEWER_")}
        env.update(
            INTERVIEWER_DATA_DIR=str(data_dir),
            INTERVIEWER_EMBEDDER=args.embedder,
            INTERVIEWER_RUNNER_WORKERS="1",
        )
        os.environ.update({k: v for k, v in env.items() if k.startswith("INTERVIEWER_")})
        subprocess.run([*CLI, "ingest"], env=env, cwd=REPO, check=True, capture_output=True)
        modes = args.server_embedding.split(",") if args.server_embedding else [""]
        keys = make_keys(data_dir, sum(levels) * len(modes))  # every run's candidates start afresh
        for run, mode in enumerate(modes):
            mode_env = {**env, "INTERVIEWER_SERVER_EMBEDDING": mode} if mode else env
            port = free_port()
            server = start_server(mode_env, port, args.workers)
            try:
                print(f"server embedding: {mode or 'default'}")
                run_keys = keys[run * sum(levels) : (run + 1) * sum(levels)]
                report(args, levels, run_keys, reference, f"http://127.0.0.1:{port}")
            finally:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=60)


def report(
    args: argparse.Namespace, levels: list[int], keys: list[str], reference: dict[str, str], base: str
) -> None:
    print(
        f"bench_api: {os.cpu_count()} cores, {args.workers} server worker(s), embedder={args.embedder}, "
        f"{args.answers} text answers per session, think time 0-{args.think_ms:g} ms"
    )
    print(
        f"{'sessions':>8} {'answers':>8} {'errors':>6} {'answers/s':>10} "
        f"{'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}"
    )
    offset = 0
    for sessions in levels:
        level = asyncio.run(
            run_level(base, keys[offset : offset + sessions], args.answers, reference, args.think_ms / 1000)
        )
        offset += sessions
        lat = level.latencies_ms
        rate = level.rate
        print(
            f"{sessions:>8} {len(lat):>8} {len(level.errors):>6} {rate:>10.1f} {percentile(lat, 50):>8.1f} "
            f"{percentile(lat, 95):>8.1f} {percentile(lat, 99):>8.1f}"
        )
        if level.errors:
            print("         errors:", ", ".join(sorted(set(level.errors))))


if __name__ == "__main__":
    main()
