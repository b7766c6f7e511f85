"""Bad command-line arguments are one line and an exit code, said before any slow work; run in-process through
`app.cli.main` (the `interviewer` entry point), which maps errors to exit codes as the installed script does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app import cli


def interviewer(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """Exit code and standard error of `interviewer ARGS`."""
    monkeypatch.setattr("sys.argv", ["interviewer", *args])
    with pytest.raises(SystemExit) as done:
        cli.main()
    return done.value.code or 0, capsys.readouterr().err


@pytest.fixture
def no_bank(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad argument is refused before the bank is read (or indexed): reading it fails the test."""
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the bank was read before the arguments were checked")

    monkeypatch.setattr("knowledge.loader.bank_index", refuse)
    monkeypatch.setattr("knowledge.loader.load_bank", refuse)
    monkeypatch.setattr("knowledge.loader.cached_bank", refuse)
    monkeypatch.setattr("app.services.store_for", refuse)  # the search index, which a first use fills


@pytest.mark.parametrize("make, said", [
    (lambda tmp: Path("/dev/null"), "/dev/null is empty: no code to check"),
    (lambda tmp: tmp, "is a folder, not a code file"),
    (lambda tmp: _write(tmp / "blank.py", b"  \n\n"), "blank.py is empty: no code to check"),
    (lambda tmp: _write(tmp / "u16.py", b"\xff\xfeim\x00p\x00"), "u16.py is UTF-16 text: save it as UTF-8"),
    (lambda tmp: _write(tmp / "latin.py", b"x = 1  # caf\xe9\n"), "latin.py is not UTF-8 text (byte 13)"),
    (lambda tmp: tmp / "gone.py", "file not found:"),
])
def test_check_says_what_is_wrong_with_a_file_and_exits_2(monkeypatch, capsys, tmp_path, no_bank, make, said):
    """Review s55: /dev/null and a folder were "file not found", and a non-UTF-8 file gave a result of four
    "not_run" checks and exit 1, as if code had run and failed; the help promises 2 when nothing was checked."""
    code, stderr = interviewer(monkeypatch, capsys, "check", "relu-autograd-function", str(make(tmp_path)))
    assert code == 2 and said in stderr, stderr
    assert stderr.startswith("error: ") and len(stderr.strip().splitlines()) == 1, stderr


def test_check_names_every_bad_file_in_its_one_line(monkeypatch, capsys, tmp_path, no_bank):
    code, stderr = interviewer(monkeypatch, capsys, "check", "relu-autograd-function", str(tmp_path / "gone.py"),
                               str(tmp_path), "/dev/null")
    assert code == 2 and stderr.startswith("error: file not found: ") and len(stderr.strip().splitlines()) == 1
    assert "is a folder" in stderr and "/dev/null is empty" in stderr, stderr


def test_code_from_a_pipe_is_read_once_and_checked(tmp_path):
    """bash's `interviewer check task <(git show HEAD:x.py)` names a pipe, which is no regular file."""
    from app.cli_extra import read_code_files

    read_end, write_end = os.pipe()
    os.write(write_end, b"\xef\xbb\xbfimport torch\n")  # Notepad's byte-order mark is no code
    os.close(write_end)
    try:
        assert read_code_files([Path(f"/proc/self/fd/{read_end}")], 100) == [
            (f"/proc/self/fd/{read_end}", "import torch\n")]
    finally:
        os.close(read_end)


def test_an_endless_device_is_read_only_as_far_as_a_submission_may_go():
    """/dev/zero is read up to the size limit and handed on as too long (the runner says so), not for ever."""
    from app.cli_extra import read_code_files

    ((_, source),) = read_code_files([Path("/dev/zero")], 1000)
    assert len(source) > 1000


@pytest.mark.parametrize("make, said", [
    (lambda tmp: tmp / "nonexistent.md", "nonexistent.md: cannot read file (No such file or directory)"),
    (lambda tmp: _write(tmp / "notes.md", b"# Notes\n\nNothing asked here.\n"), "notes.md: no questions found"),
])
def test_ingest_says_a_document_is_unusable_before_indexing_the_bank(monkeypatch, capsys, tmp_path, no_bank, make,
                                                                     said):
    """Review s55: `interviewer ingest --docs /nonexistent.md` embedded the bank (and stored its rubric vectors)
    before saying the file was not there."""
    code, stderr = interviewer(monkeypatch, capsys, "ingest", "--docs", str(make(tmp_path)),
                               "--out", str(tmp_path / "drafts.yaml"))
    assert code == 1 and stderr.startswith("error: ") and said in stderr, stderr


@pytest.mark.parametrize("args, said", [
    (["nosuch"], "no session 'nosuch'"),
    ([], "no paused session to resume"),
])
def test_resume_says_there_is_no_such_session_before_indexing_the_bank(monkeypatch, capsys, no_bank, args, said):
    """Review s55: `interviewer interview --resume nosuch` indexed the bank ("indexing its 138 entries...") before
    saying there was no such session."""
    code, stderr = interviewer(monkeypatch, capsys, "interview", "--resume", *args)
    assert code == 1 and stderr.startswith(f"error: {said}") and "index" not in stderr, stderr


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_every_commands_line_in_the_help_is_one_paragraph_without_line_breaks():
    """`interviewer --help` prints each command's first docstring paragraph with its line breaks as they are: check's
    read "... one JSON object per file. Exits 1 / when a file did not pass every check, ... 2 when nothing could be /
    checked", broken mid-sentence (ingest's too). Each first paragraph is one line of source."""
    import inspect

    import typer.main

    cli._register_optional_commands()

    def lines(group: object, name: str) -> list[tuple[str, str]]:
        found = []
        for sub_name, sub in getattr(group, "commands", {}).items():
            found.append((f"{name} {sub_name}", inspect.cleandoc(sub.short_help or sub.help or "").split("\n\n")[0]))
            found += lines(sub, f"{name} {sub_name}")
        return found

    listed = lines(typer.main.get_command(cli.app), "interviewer")
    assert {"interviewer check", "interviewer ingest"} <= {name for name, _ in listed}
    assert [(name, first) for name, first in listed if "\n" in first] == []


@pytest.mark.parametrize(("args", "said"), [
    (("interview", "--resume", "--time-limit-s", "60"), "leave out --time-limit-s"),
    (("interview", "abc123"), "a session id is for resuming one"),
    (("keys", "create", "--name", " "), "--name cannot be empty"),
])
def test_options_that_do_not_go_together_exit_2_as_usage_errors(monkeypatch, capsys, no_bank, args, said):
    """README: a usage error exits 2. `interview --resume ID --time-limit-s 60` (and the other setup options with
    --resume, a session id without it, an empty key --name) exited 1, as if something had failed at run time."""
    code, err = interviewer(monkeypatch, capsys, *args)
    assert (code, said in err) == (2, True), err


def test_check_help_says_one_bad_file_runs_none():
    """README and the help said `check` exits 2 "when none could be checked", but one bad file among good ones
    exits 2 and runs none of them."""
    from app import cli_extra

    assert "any one file" in (cli_extra.check.__doc__ or "") and "running no" in (cli_extra.check.__doc__ or "")
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    assert "none could be checked" not in readme and "running none, when the task is no code task or any file" in readme
