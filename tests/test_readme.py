"""The README against the code: its commands, options, settings and routes must exist.

A new user copies these lines; a renamed option or an undocumented variable only shows up when one of them
fails, so they are read here from the README itself rather than listed again.
"""

from __future__ import annotations

import re
from pathlib import Path

import typer

from app import cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
# A variable the code reads, not the tail of another name (the wheel cache's TORCH_INTERVIEWER_WHEELS).
VARIABLE = re.compile(r"(?<![A-Z0-9_])INTERVIEWER_[A-Z0-9_]*[A-Z0-9]")
CODE_DIRS = ("app", "ui", "evaluators", "knowledge", "ingest", "scripts")


def command_block() -> list[str]:
    """The `interviewer ...` lines of the README's Command line section, without their comments."""
    section = README.split("## Command line", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in section.splitlines() if line.startswith("interviewer ")]


def test_every_readme_command_and_option_exists() -> None:
    if "grade" not in typer.main.get_command(cli.app).commands:  # as `interviewer` itself does on start
        cli._register_optional_commands()
    root = typer.main.get_command(cli.app)
    lines = command_block()
    assert len(lines) >= 10
    for line in lines:
        words = line.split()[1:]
        command = root
        while words and words[0] in getattr(command, "commands", {}):
            command = command.commands[words.pop(0)]
        assert command is not root, line
        options = {name for param in command.params for name in (*param.opts, *param.secondary_opts)}
        for word in words:
            if word.startswith("--"):
                assert word in options, f"{line}: {command.name} has no {word}"


def variables_read() -> set[str]:
    """Every INTERVIEWER_ variable the code reads: the settings' fields, and what scripts and the UI read."""
    from app.config import Settings

    read = {f"INTERVIEWER_{name.upper()}" for name in Settings.model_fields}
    for folder in CODE_DIRS:
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in {".py", ".sh"}:
                read.update(VARIABLE.findall(path.read_text(encoding="utf-8")))
    return read


def documented_variables(known: set[str]) -> set[str]:
    """Every variable the README names, with a settings row's `/ _TAIL` shorthand spelt out: in
    "`INTERVIEWER_CHROMA_HOST` / `_PORT`" the second is INTERVIEWER_CHROMA_PORT (the longest of the first
    name's prefixes that makes a known variable; none makes one: the README names one the code lacks)."""
    named = set(VARIABLE.findall(README))
    for row in re.findall(r"^\| (`INTERVIEWER_[^|]*) \|", README, flags=re.MULTILINE):
        first, *tails = re.findall(r"`([A-Z0-9_]+)`", row)
        parts = first.split("_")
        for tail in tails:
            spelt = ["_".join(parts[:k]) + tail for k in range(len(parts) - 1, 0, -1)]
            named.add(next((name for name in spelt if name in known), spelt[-1]))
    return named


def test_every_variable_the_code_reads_is_documented() -> None:
    known = variables_read()
    documented = documented_variables(known)
    assert known - documented == set()
    assert documented - known == set()


def test_every_readme_route_exists() -> None:
    from app.config import Settings
    from app.main import create_app

    routes = {re.sub(r"\{[^}]*\}", "{}", path) for path in create_app(Settings(embedder="hash")).openapi()["paths"]}
    for mention in set(re.findall(r"(?<![\w.])(/v1/[\w{}/-]*\w\}?|/healthz|/readyz)", README)):
        route = re.sub(r"\{[^}]*\}", "{}", mention)
        assert any(known == route or known.startswith(route + "/") for known in routes), mention
