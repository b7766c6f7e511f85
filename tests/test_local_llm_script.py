"""scripts/local_llm.py: the command that starts the local model server (no model is loaded here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import local_llm  # noqa: E402


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed")
def test_the_server_does_not_cut_off_a_reply_when_another_request_arrives(monkeypatch: pytest.MonkeyPatch) -> None:
    # llama-cpp-python's own CLI parser reads the command, so a renamed flag or a wrong value fails here.
    from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
    from llama_cpp.server.settings import ServerSettings

    monkeypatch.setattr(local_llm, "model_path", lambda: Path("/nonexistent/model.gguf"))
    command = local_llm.server_command(18900)
    import argparse

    parser = argparse.ArgumentParser()
    add_args_from_model(parser, ServerSettings)
    known, _ = parser.parse_known_args(command[3:])
    settings = parse_model_from_args(ServerSettings, known)
    assert settings.interrupt_requests is False
