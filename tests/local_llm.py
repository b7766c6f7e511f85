"""The real local model server for e2e_llm tests and bench/bench_llm.py: SmolLM2-135M on llama-cpp-python."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from local_llm import CONTEXT_TOKENS, MAX_TOKENS, MODEL_ALIAS  # noqa: E402

__all__ = ["CONTEXT_TOKENS", "MAX_TOKENS", "MODEL_ALIAS", "local_model_server"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def local_model_server(*, log: Path) -> Iterator[str]:
    """Start the server on a free loopback port, yield its base URL (…/v1), stop it afterwards."""
    port = _free_port()
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, str(REPO / "scripts" / "local_llm.py"), "--port", str(port)],
            stdout=sink, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},  # its prints (a closed stream) reach the log as they happen
        )
        base = f"http://127.0.0.1:{port}/v1"
        try:
            deadline = time.monotonic() + 120
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"the model server exited ({proc.returncode}): {log.read_text()[-2000:]}")
                try:
                    if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the model server did not answer within 120 s")
                time.sleep(0.3)
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
