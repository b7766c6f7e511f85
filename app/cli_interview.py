"""`interviewer interview`: a mock interview in the terminal, answers read from stdin."""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer
from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.text import Text

from app.errors import UserFacingError
from app.text_input import as_text
from evaluators.run_points import failure_said

HELP = (
    "Type your answer; finish it with a line containing only '.' (or end of input). "
    "Commands on their own line: :hint  :skip  :repeat  :idk (I don't know)  :end (finish now, with a report)  "
    ":quit (pause). "
    "Code: a ```python fenced block in the answer, or ':code PATH' to send a file."
)
# A command is one word on the first line (":hint", or a mistyped ":hnt"); ":) it computes..." is an answer.
_COMMAND = re.compile(r":[A-Za-z]\S*")
_CODE_LINE = re.compile(r":code(\s.*)?")


def read_answer(stream: TextIO, warn: Callable[[str], None]) -> tuple[str, str | None, str | None] | None:
    """(command, text, code) from the next answer block; None at end of input. A `:code PATH` line's file is
    the code answer, read when the line is: one that cannot be read is said to `warn` there and then, and only
    that line is left out, so the words typed around it are kept and a command after it is still a command.
    Fenced blocks stay in the words, as the app's words box has them: the engine decides when they run
    (`app.interview.fenced`)."""
    lines: list[str] = []
    code_parts: list[str] = []
    for raw in stream:
        # Windows line ends too; bytes that are not UTF-8 (read as lone surrogates) are kept as U+FFFD.
        line = as_text(raw.rstrip("\r\n"))
        if _CODE_LINE.fullmatch(line.strip()):
            try:
                code_parts.append(read_code_file(line.strip()[5:].strip()))
            except UserFacingError as exc:
                warn(str(exc))
            continue
        if not lines and not code_parts and _COMMAND.fullmatch(line.strip()):
            return line.strip()[1:].lower(), None, None
        if line.strip() == ".":
            break
        lines.append(line)
    else:
        if not lines and not code_parts:
            return None
    return "answer", "\n".join(lines).strip() or None, "\n\n".join(code_parts).strip() or None


def _over_limit(value: str | None, limit: int, what: str) -> str | None:
    return f"The {what} is {len(value)} characters; the limit is {limit}." if value and len(value) > limit else None


def read_code_file(given: str) -> str:
    """The code in the file a `:code PATH` line names; a UserFacingError saying why it cannot be read."""
    kept = "; that line was left out, the rest of the answer is kept"
    if not given:
        raise UserFacingError(f":code needs a file: `:code PATH`{kept}")
    path = _pasted_path(given)
    if path.is_dir():
        raise UserFacingError(f"{path} is a folder, not a code file{kept}")
    if not path.is_file():
        raise UserFacingError(f"code file {path} " + ("is not a regular file" if path.exists() else "was not found")
                              + kept)
    try:
        return path.read_text(encoding="utf-8-sig")  # Notepad's byte-order mark dropped
    except (OSError, UnicodeDecodeError) as exc:
        cause = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else exc.strerror
        raise UserFacingError(f"code file {path} cannot be read ({cause}){kept}") from None


def _pasted_path(given: str) -> Path:
    """The path as typed, or, when no such file is there, as a shell reads it: a file dragged into a terminal is
    pasted quoted ('/home/me/my code.py') or with its spaces escaped (my\\ code.py), and was "not found"."""
    path = Path(given).expanduser()
    if path.exists():
        return path
    try:
        words = shlex.split(given)
    except ValueError:  # an unmatched quote: keep it as typed
        return path
    return Path(words[0]).expanduser() if len(words) == 1 else path


_FENCE = re.compile(r" {0,3}(```|~~~)")
# Inline code is kept as written; elsewhere a character Markdown reads as emphasis (or an escape) is escaped.
_CODE_OR_EMPHASIS = re.compile(r"(`+).+?\1|[\\*_]")


def bank_markdown(text: str) -> Markdown:
    """Bank text (a model answer, a code contract) as Markdown whose code names survive: its code is fenced or
    in backticks, but a name written bare in prose (`__init__`, `C*H*W`) would be read as emphasis and lose its
    underscores or stars, so those are escaped outside code."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            line = _CODE_OR_EMPHASIS.sub(lambda m: m.group(0) if m.group(1) else "\\" + m.group(0), line)
        lines.append(line)
    return Markdown("\n".join(lines))


def show_prompt(console: Console, prompt: Any) -> None:
    title = f"{prompt.kind.value.replace('_', '-')} · {prompt.topic} · difficulty {prompt.difficulty}"
    console.print(Panel(Text(prompt.text), title=f"Question {prompt.number} of {prompt.total}", subtitle=title))
    for note in prompt.notes:  # why this question: fewer than asked for, another level, review
        console.print(Text(note), style="cyan")
    if prompt.code_contract and prompt.kind.value == "question":
        console.print(bank_markdown(prompt.code_contract))


def show_outcome(console: Console, outcome: Any) -> None:
    if outcome.message:
        console.print(outcome.message, style="yellow")
    evaluation = outcome.evaluation
    if not evaluation:
        return
    console.print(f"Score {evaluation['score']} / 5", style="bold")
    for note in evaluation.get("notes") or []:  # an LLM judge's reply not used, or verdicts of its dropped
        console.print(Text(f" scoring: {note}"), style="dim")
    for note in evaluation.get("penalties") or []:  # what this turn was charged: hints, lateness, a fix
        console.print(Text(f" penalty: {note}"), style="yellow")
    for point in evaluation.get("points", []):
        mark = {"covered": ("✔", "green"), "partial": ("~", "yellow")}.get(point["verdict"], ("✘", "red"))
        if point.get("beyond_score"):  # the code's run alone earned full marks: it cost nothing
            mark = ("·", "dim")
        unneeded = " (not needed for the score, worth saying in an interview)" if point.get("beyond_score") else ""
        console.print(Text.assemble(" ", mark, f" {point['description']}{unneeded}"), highlight=False)
    for wrong in evaluation.get("misconceptions", []):
        lead = " your code has" if wrong.get("from_code") else ""  # a line of the code is not the candidate's words
        console.print(Text.assemble(" ", ("wrong:", "red"), f"{lead} \"{wrong['quote']}\" - {wrong['correction']}"),
                      highlight=False)
    if outcome.code_result:
        result = outcome.code_result
        passed, total = result.get("passed_checks"), result.get("total_checks")
        console.print(f" code checks: {passed}/{total} ({result.get('status')})")
        for check in result.get("checks") or []:  # say why now, not only in the report at the end
            if not check.get("passed"):
                # On one line, as the report says it (torch's comparison report is many); the description is
                # printed already, so it is not said again in place of a check's own words.
                said = failure_said({**check, "description": ""})
                why = f": {said}" if said else ""
                console.print(Text.assemble(" ", ("✘", "red"), f" {check.get('description')}{why}"), highlight=False)
    # Given up on the question or on its follow-up: the model answer, where the mode shows it (practice).
    gave_up = {evaluation.get("gate"), evaluation.get("follow_up")} & {"skip", "dont_know"}
    if gave_up and evaluation.get("model_answer"):
        console.print(Panel(bank_markdown(evaluation["model_answer"]), title="Model answer"))


def run_interview(
    engine: Any, user_id: int, config: Any, stream: TextIO, console: Console, *, max_chars: int = 20_000,
    max_code_chars: int = 50_000, drafts: Any = None,
) -> str:
    """The session's questions in the terminal; its id. `drafts` (the repository) keeps an answer interrupted
    while it is scored."""
    session, prompt = engine.start(user_id=user_id, config=config)
    console.print(HELP, style="dim")
    actions = {"hint": engine.hint, "skip": engine.skip, "repeat": engine.repeat, "idk": engine.dont_know,
               "end": engine.finish}
    while prompt is not None:
        show_prompt(console, prompt)
        block = read_answer(stream, warn=lambda why: console.print(Text(why, style="red")))
        if block is None or block[0] == "quit":
            console.print("Session paused; it can be resumed through the API.")
            return str(session.id)
        command, text, code = block
        # The API's limits (INTERVIEWER_MAX_ANSWER_CHARS, _MAX_CODE_CHARS), here too: a `:code` of a large file
        # was stored whole and printed line by line in the report.
        if over := _over_limit(text, max_chars, "answer") or _over_limit(code, max_code_chars, "code"):
            console.print(f"{over} Nothing was sent: answer again, shorter.", style="red")
            continue
        if command == "answer" and not (text or "").strip() and not (code or "").strip():
            console.print("An answer needs text or code (or :skip / :idk); nothing was sent.", style="red")
            continue
        try:
            if command == "answer":
                with _kept_if_interrupted(console, drafts, session_id=str(session.id), user_id=user_id,
                                          turn=prompt.turn, text=text, code=code):
                    outcome = engine.answer(session_id=session.id, user_id=user_id, text=text, code=code)
            elif command in actions:
                outcome = actions[command](session_id=session.id, user_id=user_id)
            else:
                console.print(Text.assemble((f"unknown command :{command}", "red"), f". {HELP}"))
                continue
        except UserFacingError as exc:
            console.print(str(exc), style="red")
            continue
        show_outcome(console, outcome)
        if outcome.status == "completed":
            break
        prompt = outcome.prompt
    return str(session.id)


@contextmanager
def _kept_if_interrupted(
    console: Console, drafts: Any, *, session_id: str, user_id: int, turn: int, text: str | None, code: str | None
) -> Iterator[None]:
    """Ctrl-C while an answer is scored (an LLM judge can take minutes on a CPU) left the answer nowhere: the
    turn is recorded only once scored. It is kept as the prompt's draft, which the API returns with the session."""
    try:
        yield
    except KeyboardInterrupt:
        try:
            kept = drafts is not None and drafts.save_draft(session_id, user_id=user_id, turn=turn, text=text,
                                                            code=code) is not None
        except UserFacingError:  # scored and recorded just before the interrupt: nothing to keep
            kept = False
        if kept:
            console.print(f"Interrupted while scoring: the answer was not scored; it is kept as the draft of this "
                          f"prompt, and session {session_id} is paused (it can be resumed through the API).")
        raise


def _one_of(*choices: str) -> Any:
    """An option's check at parsing, so a value out of range is a usage error (exit 2, with the usage)."""

    def check(value: str) -> str:
        if value not in choices:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(choices)}")
        return value

    return check


def _topic_list(given: list[str] | None) -> list[str] | None:
    """--topics, repeated or comma-separated, as a list; a name not in the taxonomy is a usage error naming the
    topics there are (the session's own check said "invalid topics.0: Input should be ..." and exit 1)."""
    from knowledge.schema import Topic

    topics = [t.strip() for value in given or [] for t in value.split(",") if t.strip()]
    for name in topics:
        try:
            Topic(name)  # as the session reads it: "Optimization" is optimisation
        except ValueError:
            raise typer.BadParameter(f"{name!r} is not a topic; the topics are {', '.join(t.value for t in Topic)}") \
                from None
    return topics or None


def interview(
    topics: Annotated[list[str] | None, typer.Option(
        "--topics", help="Topics to draw from (repeatable, or comma-separated).", callback=_topic_list)] = None,
    questions: Annotated[int, typer.Option("--questions", min=1, max=30, help="Number of questions.")] = 5,
    difficulty: Annotated[str, typer.Option(
        help="1, 2, 3 or adaptive.", callback=_one_of("1", "2", "3", "adaptive"))] = "adaptive",
    mode: Annotated[str, typer.Option(
        help="practice or interview.", callback=_one_of("practice", "interview"))] = "practice",
    seed: Annotated[int | None, typer.Option(help="Random seed for a reproducible session.")] = None,
) -> None:
    """Run a mock interview in the terminal and print the report at the end."""
    from app.cli_output import console as make_console
    from app.cli_output import open_bank_search
    from app.config import get_settings
    from app.interview.models import SessionConfig
    from app.services import code_runner_for, engine_for, repository_for

    settings = get_settings()
    level: str | int = int(difficulty) if difficulty in ("1", "2", "3") else difficulty
    config = SessionConfig.model_validate(
        {"topics": topics,
         "num_questions": questions, "mode": mode, "seed": seed, "difficulty": level}
    )
    repo = repository_for(settings)
    started: list[Any] = []  # the sandboxed runner, once a code answer needed it

    def start_runner() -> Any | None:
        # Not at start: its warm pool took 7 of a one-question run's 21 s (and its module imports torch),
        # and most terminal sessions send no code.
        started.append(code_runner_for(settings))
        return started[-1]

    out = make_console()
    try:
        engine = engine_for(settings, repo=repo, store=open_bank_search(settings), runner=start_runner)
        user_id = repo.get_or_create_user("local").id
        # Bytes that are not UTF-8 arrive as lone surrogates whatever the locale (read_answer shows them as
        # U+FFFD), rather than stopping the interview with a UnicodeDecodeError.
        sys.stdin.reconfigure(errors="surrogateescape")  # type: ignore[union-attr]  # a TextIOWrapper
        session_id = run_interview(engine, user_id, config, sys.stdin, out, max_chars=settings.max_answer_chars,
                                   max_code_chars=settings.max_code_chars, drafts=repo)
        print_report(out, repo, session_id, user_id, settings)
    finally:
        for runner in started:
            if runner is not None:
                runner.close()


def print_report(console: Console, repo: Any, session_id: str, user_id: int, settings: Any) -> None:
    session = repo.get_session(session_id, user_id)
    if session.config.get("mode") == "interview" and session.status != "completed":
        console.print("An interview-mode report is ready once the session is completed.")
        return
    try:
        from app.reports import build_report
        from knowledge.loader import bank_index
    except ImportError:
        console.print(f"Scores: {session.state.get('question_scores')}")
        return
    report = build_report(session=session, turns=repo.turns(session_id), bank=bank_index(settings.bank_dir))
    console.print(terminal_report(report))


def terminal_report(report: Any) -> Markdown:
    """The Markdown report, its model answers and contracts reflowed as the in-session panel shows them: the bank
    breaks its prose near 95 characters, and a terminal wrapping those lines again at its own width left a
    line of a word or two after each (the Markdown file keeps them: its code blocks are not wrapped)."""
    from app.reports import render
    from app.reports.wording import reflowed

    def each_paragraph_a_line(text: str | None) -> str | None:
        return reflowed(text) if text else text

    questions = [entry.model_copy(update={"model_answer": each_paragraph_a_line(entry.model_answer),
                                          "contract": each_paragraph_a_line(entry.contract)})
                 for entry in report.questions]
    body, _ = render(report.model_copy(update={"questions": questions}), "markdown")
    return Markdown(body.decode("utf-8"))


def register(app: typer.Typer) -> None:
    app.command()(interview)
