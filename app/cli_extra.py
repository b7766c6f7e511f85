"""Commands of other domains: bulk grading and code checks."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer

from app.cli_output import emit_json, err, open_bank_search, progress
from app.errors import BadOptionError, UserFacingError

INPUT_HELP = ("JSONL lines: answer, and question_id or question; reference_answer (a text, or a list of acceptable "
              "ones) grades against it instead of the bank, and a question_id beside it is your own label.")
OUTPUT_HELP = ("JSONL: each input line with score, points, feedback added (a field of yours of the same name is kept "
               "under given); - for standard output.")
EXAMPLES_HELP = ("JSONL of answers you graded yourself, as --input's lines plus grade (and grade_max, 5 if not given): "
                 "each question with examples is graded at your standard.")



def jsonl_line(record: dict) -> str:
    """A record as one JSON line that no reader splits: U+2028, U+2029 and U+0085 end a line for Python's
    splitlines() and for JavaScript, so they are escaped (inside JSON strings, the only place they can be)."""
    text = json.dumps(record, ensure_ascii=False)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\u0085", "\\u0085")

def grade(
    input_path: Annotated[Path, typer.Option("--input", help=INPUT_HELP)],
    output_path: Annotated[Path, typer.Option("--output", help=OUTPUT_HELP)],
    examples_path: Annotated[Path | None, typer.Option("--examples", help=EXAMPLES_HELP)] = None,
) -> None:
    """Grade every line of a JSONL file; bad lines get an `error` field and the run goes on."""
    from app.config import get_settings
    from app.errors import one_line
    from app.grade_lines import count_lines
    from app.graded_examples import ExampleError
    from app.grading import BulkGrader
    from app.services import rubric_scorer_for
    from knowledge.loader import bank_index

    settings = get_settings()
    for name, path in (("input", input_path), ("examples", examples_path)):
        if path is not None and not path.is_file():
            raise UserFacingError(f"{name} file {path} " + ("is not a regular file (it is read twice: save it first)"
                                                            if path.exists() else "does not exist"))
        if path is not None and _starts_utf16(path):
            # Windows PowerShell's `>` writes UTF-16: every line would fail as "not valid UTF-8"
            raise UserFacingError(f"{name} file {path} is UTF-16 text: save it as UTF-8")
    to_stdout = str(output_path) == "-"
    output_path = output_path if to_stdout else output_path.resolve()  # written through a symlink, not over it
    if not to_stdout and (not output_path.parent.is_dir() or output_path.is_dir()):  # said before any grading
        raise UserFacingError(f"output {output_path}: " + ("is a folder" if output_path.is_dir() else
                                                           f"folder {output_path.parent} does not exist"))
    for name, path in (("input", input_path), ("examples", examples_path)):
        if not to_stdout and path is not None and path.resolve() == output_path:  # yours, not ours to replace
            raise UserFacingError(f"output {output_path} is the {name} file: write the graded lines elsewhere")
    where = "standard output" if to_stdout else str(output_path)
    bank = bank_index(settings.bank_dir)

    opened: list[Any] = []  # the bank search, once a line needed it: closed when the run ends

    def open_store() -> Any:
        """The bank search, indexed first if it never was (a few seconds, once): a file of free question
        texts should not fail line by line on a machine where `interviewer ingest` was never run. A
        search that cannot be opened leaves matching off; ids and reference answers still work."""
        try:
            opened.append(open_bank_search(settings))
            return opened[-1]
        except Exception as exc:
            err.print(f"Question matching is off: the bank search could not be opened ({one_line(exc)}).")
            return None

    grader = BulkGrader(evaluator=rubric_scorer_for(settings), bank=bank, store=None, open_store=open_store,
                        max_answer_chars=settings.max_answer_chars)
    line_numbers: list[int] = []  # each example's line in its file: blank lines are skipped, not counted
    if examples_path is not None:
        try:
            questions = grader.learn_standards(_json_lines(examples_path, line_numbers))
        except ExampleError as exc:
            raise UserFacingError(f"{examples_path}: {_example_at(exc.index, line_numbers)}: {exc.why}") from None
        err.print(f"Grading at your standard on {questions} question(s), from {examples_path}.")
    lines = graded = failed = 0

    def one_line_done(line_failed: bool) -> None:  # told of every line but a blank one
        nonlocal graded, failed
        graded += not line_failed
        failed += line_failed
        bar.advance(task)

    try:
        with input_path.open("rb") as source, _output(None if to_stdout else output_path) as sink, progress() as bar:
            task = bar.add_task("Grading", total=count_lines(source))
            for record in grader.grade_stream(iter(source), on_line=one_line_done):
                sink.write(jsonl_line(record) + "\n")
                lines += 1
    finally:
        for store in opened:
            store.close()
    err.print(graded_summary(lines=lines, graded=graded, failed=failed) + f" Output: {where}")
    for index, why in grader.unused_examples().items():  # never left out without a word
        err.print(f"{examples_path}: {_example_at(index, line_numbers)} set no standard: {why}", highlight=False,
                  markup=False)
    if failed and not graded:  # nothing came of the run: a script must not take its output for grades
        sys.exit(1)


def graded_summary(*, lines: int, graded: int, failed: int) -> str:
    """What became of the file's lines: graded, failed (with an `error`), and skipped as blank, which are neither (a
    blank line was counted as graded)."""
    blank = lines - graded - failed
    said = [f"{failed} with errors"] + [f"{blank} blank line{'s' * (blank != 1)} skipped"] * bool(blank)
    return f"Graded {graded} of {lines} lines; {'; '.join(said)}."


@contextmanager
def _output(path: Path | None) -> Iterator[TextIO]:
    """Where graded lines go: standard output (None), a pipe or a device as they come, a regular file whole
    or not at all (a temporary file renamed over it, removed on Ctrl-C or a full disk). UTF-8 whatever the
    locale; half a surrogate pair from an input line is written back as the JSON escape it came as."""
    if path is None:
        with open(sys.stdout.fileno(), "w", encoding="utf-8", errors="backslashreplace", closefd=False) as out:
            yield out
        return
    whole = path.is_file() or not path.exists()
    written = path.with_name(path.name + ".tmp") if whole else path
    try:
        sink = written.open("w", encoding="utf-8", errors="backslashreplace")
    except OSError as exc:
        raise UserFacingError(f"output {path}: cannot be written ({exc.strerror})") from None
    try:
        with sink:
            yield sink
    except BaseException:
        if whole:
            written.unlink(missing_ok=True)
        raise
    if whole:
        written.replace(path)


def _starts_utf16(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(2) in (b"\xff\xfe", b"\xfe\xff")


def _json_lines(path: Path, line_numbers: list[int]) -> Iterator[Any]:
    """The file's non-blank lines as JSON values, each one's line number appended to `line_numbers`; a bad one is
    an ExampleError."""
    from app.grade_lines import LineError, load_json_line
    from app.graded_examples import ExampleError

    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            line_numbers.append(number)
            try:
                yield load_json_line(raw)
            except LineError as exc:
                raise ExampleError(len(line_numbers) - 1, str(exc)) from None


def _example_at(index: int, line_numbers: list[int]) -> str:
    """The words "example N", and its line when blank lines above make that another number (editors show lines)."""
    line = line_numbers[index] if index < len(line_numbers) else index + 1
    return f"example {index + 1}" + (f" (line {line})" if line != index + 1 else "")


def check(
    question_id: Annotated[str, typer.Argument(help="A code task's bank id.")],
    files: Annotated[list[Path], typer.Argument(help="Python files to check.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (the default output).")] = True,
) -> None:
    """Run code files against a code task's hidden checks in the sandbox; one JSON object per file.

    Exits 1 when a file did not pass every check, so a CI job or a hook can gate on it. Exits 2, running no
    file, when the task is not a code task in the bank or any one file is no code to check (missing, a folder,
    unreadable, empty, not UTF-8 text), naming each such file in one line: a job set up wrong is not taken for
    code that failed."""
    # The first paragraph is the command's line in `interviewer --help`, where its line breaks are printed as they
    # are: it stays on one line of source.
    from app.config import get_settings
    from evaluators.code.runner import CodeRunner
    from evaluators.run_points import judge_run
    from knowledge.loader import bank_index

    settings = get_settings()
    sources = read_code_files(files, settings.max_code_chars)  # before the bank is read: said at once
    question = bank_index(settings.bank_dir).get(question_id)
    if question is None or question.code is None:
        raise BadOptionError(f"no question with id {question_id!r} in the bank" if question is None else
                             f"question {question_id!r} is not a code question: nothing to run")
    with CodeRunner.from_settings(settings) as runner:
        results = runner.check_sources(question_id, sources)
    # The score a session gives the run: by the rubric points its checks verify.
    results = [{**r, "score": judge_run(question, r)[1]} for r in results]
    emit_json(results)
    if any(r["status"] != "passed" for r in results):  # as `pytest` and `bank validate` do
        sys.exit(1)


def read_code_files(files: list[Path], max_chars: int) -> list[tuple[str, str]]:
    """Each file's (name, text), read once: a pipe (bash's `<(...)`) cannot be read twice. A file that is no
    code to check (missing, a folder, unreadable, empty, not UTF-8) is a BadOptionError naming every such file,
    so `check` exits 2 with one line, not 1 as if code had run and failed (review s55: a non-UTF-8 file was
    "error" with four checks "not_run" and exit 1, and /dev/null or a folder was "file not found")."""
    sources: list[tuple[str, str]] = []
    missing: list[str] = []
    problems: list[str] = []
    # UTF-8 takes at most 4 bytes a character: past this many bytes (and a byte-order mark) the file is longer
    # than any submission may be, which the runner says in its result as for any long one; the cap keeps a
    # device that never ends (/dev/zero) from being read for ever.
    cap = 4 * max_chars + 3
    for path in files:
        try:
            with path.open("rb") as file:
                raw = file.read(cap + 1)
        except FileNotFoundError:
            missing.append(str(path))
            continue
        except IsADirectoryError:
            problems.append(f"{path} is a folder, not a code file")
            continue
        except OSError as exc:
            problems.append(f"{path} cannot be read ({exc.strerror or exc})")
            continue
        if raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # Windows PowerShell's `>` writes UTF-16
            problems.append(f"{path} is UTF-16 text: save it as UTF-8")
            continue
        try:
            # A byte-order mark (Notepad's) is no code; an over-long file may be cut mid-character.
            source = raw.decode("utf-8-sig", errors="replace" if len(raw) > cap else "strict")
        except UnicodeDecodeError as exc:
            problems.append(f"{path} is not UTF-8 text (byte {exc.start + 1}): save it as UTF-8")
            continue
        if not source.strip():
            problems.append(f"{path} is empty: no code to check")
            continue
        sources.append((str(path), source))
    if missing:
        problems.insert(0, f"file not found: {', '.join(missing)}")
    if problems:
        raise BadOptionError("; ".join(problems))
    return sources


def register(app: typer.Typer) -> None:
    """Attach the commands of this module to the root app."""
    app.command()(grade)
    app.command()(check)
    from app import cli_interview, cli_sessions

    cli_interview.register(app)
    cli_sessions.register(app)
    from app import cli_server

    cli_server.register(app)
