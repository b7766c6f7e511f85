"""`interviewer interview`: a mock interview in the terminal, new or resumed, answers read from stdin."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TextIO

import typer
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.markdown import Markdown
from rich.padding import Padding
from rich.panel import Panel
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from app.cli_answers import over_limit, read_answer
from app.cli_sessions import print_report, resume_command, session_to_resume, unfinished_note
from app.cli_user import UserOption
from app.config import LOCAL_USER
from app.errors import BadOptionError, UserFacingError
from app.interview.turns import late, time_left_s
from evaluators.run_points import failure_said

HELP = (
    "Type your answer; finish it with a line containing only '.' (or end of input). "
    "Commands on their own line: :hint  :skip  :repeat  :idk (I don't know)  :end (finish now, with a report)  "
    ":quit (pause). "
    "Code: a ```python fenced block in the answer, or ':code PATH' to send a file."
)

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
    if said := time_limit_said(prompt):
        console.print(said)
    if prompt.code_contract and prompt.kind.value == "question":
        console.print(bank_markdown(prompt.code_contract))


def time_limit_said(prompt: Any) -> Text | None:
    """The prompt's time limit as it is shown, in the app's words: how long is left, or that time is up (on a prompt
    shown again, or resumed, after it passed). No countdown: the terminal shows it once with the prompt."""
    limit = prompt.time_limit_s
    if not limit:
        return None
    if prompt.asked_at is None:  # not said when it was asked: the limit alone
        return Text(f"Time limit: {limit} s on this question: an answer after that scores half.", style="cyan")
    if late(prompt.asked_at, limit):
        return Text(f"Time is up ({limit} s): an answer given now scores half.", style="yellow")
    left = int(time_left_s(prompt.asked_at, limit) or 0)
    return Text(f"Time limit: {limit} s on this question, {left // 60}:{left % 60:02d} left: an answer after that "
                "scores half.", style="cyan")


class _Unpadded:
    """A renderable printed without the spaces rich pads its lines with to the terminal's width: invisible there,
    they went into a log or a copy, and a terminal that reflows its text when narrowed wrapped them onto blank lines."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in console.render_lines(self.renderable, options, pad=False):
            while line and not line[-1].control and not line[-1].text.rstrip(" "):
                line.pop()
            if line and not line[-1].control:
                line[-1] = Segment(line[-1].text.rstrip(" "), line[-1].style)
            yield from line
            yield Segment.line()


def _item(mark: str | tuple[str, str], said: str, style: str = "") -> _Unpadded:
    """One line of feedback led by its mark ("✔", "wrong:", "penalty:"), the lines it wraps onto starting under its
    words: printed as one Text, they went back to the terminal's margin, under the mark. rich wraps a grid's cells
    each in its own column, so the words' column gives the hanging indent (rich pads the column's lines to its
    width: `_Unpadded`)."""
    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")  # a name longer than the line is cut at its end, not at "…"
    grid.add_row(Text.assemble(mark, style=style), Text(said, style=style))
    return _Unpadded(Padding(grid, (0, 0, 0, 1), expand=False))


def show_outcome(console: Console, outcome: Any) -> None:
    if outcome.message:
        console.print(outcome.message, style="yellow")
    evaluation = outcome.evaluation
    if not evaluation:
        return
    console.print(f"Score {evaluation['score']} / 5", style="bold")
    for note in evaluation.get("notes") or []:  # an LLM judge's reply not used, or verdicts of its dropped
        console.print(_item("scoring:", note, "dim"))
    for note in evaluation.get("penalties") or []:  # what this turn was charged: hints, lateness, a fix
        console.print(_item("penalty:", note, "yellow"))
    for point in evaluation.get("points", []):
        mark = {"covered": ("✔", "green"), "partial": ("~", "yellow")}.get(point["verdict"], ("✘", "red"))
        if point.get("beyond_score"):  # the code score was full without it: it cost nothing
            mark = ("·", "dim")
        unneeded = " (not needed for the score, worth saying in an interview)" if point.get("beyond_score") else ""
        console.print(_item(mark, f"{point['description']}{unneeded}"))
    for wrong in evaluation.get("misconceptions", []):
        lead = "your code has " if wrong.get("from_code") else ""  # a line of the code is not the candidate's words
        console.print(_item(("wrong:", "red"), f"{lead}\"{wrong['quote']}\" - {wrong['correction']}"))
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
                console.print(_item(("✘", "red"), f"{check.get('description')}{why}"))
    # Given up on the question or on its follow-up: the model answer, where the mode shows it (practice).
    gave_up = {evaluation.get("gate"), evaluation.get("follow_up")} & {"skip", "dont_know"}
    if gave_up and evaluation.get("model_answer"):
        console.print(Panel(bank_markdown(evaluation["model_answer"]), title="Model answer"))


def run_interview(
    engine: Any, user_id: int, session_id: str, prompt: Any, stream: TextIO, console: Console, *,
    max_chars: int = 20_000, max_code_chars: int = 50_000, drafts: Any = None, user: str = LOCAL_USER,
) -> None:
    """The session's questions in the terminal from `prompt` on, until it ends or is paused. `drafts` (the
    repository) keeps an answer interrupted while it is scored."""
    console.print(HELP, style="dim")
    actions = {"hint": engine.hint, "skip": engine.skip, "repeat": engine.repeat, "idk": engine.dont_know,
               "end": engine.finish}
    while prompt is not None:
        show_prompt(console, prompt)
        block = read_answer(stream, warn=lambda why: console.print(Text(why, style="red")))
        if block is None or block[0] == "quit":
            # Unwrapped, so the command copies whole from a narrow terminal.
            console.print(f"Session paused. Resume it with:\n  {resume_command(session_id, user)}", soft_wrap=True)
            return
        command, text, code = block
        # The API's limits (INTERVIEWER_MAX_ANSWER_CHARS, _MAX_CODE_CHARS), here too: a `:code` of a large file
        # was stored whole and printed line by line in the report.
        if over := over_limit(text, max_chars, "answer") or over_limit(code, max_code_chars, "code"):
            console.print(f"{over} Nothing was sent: answer again, shorter.", style="red")
            continue
        if command == "answer" and not (text or "").strip() and not (code or "").strip():
            console.print("An answer needs text or code (or :skip / :idk); nothing was sent.", style="red")
            continue
        if command == "answer" and prompt.asked_at is not None and late(prompt.asked_at, prompt.time_limit_s):
            # Said before it is scored (an LLM judge can take minutes), not first in the report's penalties.
            console.print(f"Time is up ({prompt.time_limit_s} s): this answer scores half.", style="yellow")
        try:
            if command == "answer":
                with _kept_if_interrupted(console, drafts, session_id=session_id, user_id=user_id,
                                          turn=prompt.turn, text=text, code=code, user=user):
                    outcome = engine.answer(session_id=session_id, user_id=user_id, text=text, code=code)
            elif command in actions:
                outcome = actions[command](session_id=session_id, user_id=user_id)
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


@contextmanager
def _kept_if_interrupted(
    console: Console, drafts: Any, *, session_id: str, user_id: int, turn: int, text: str | None, code: str | None,
    user: str = LOCAL_USER,
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
                          f"prompt, and session {session_id} is paused. Resume it with: "
                          f"{resume_command(session_id, user)}")
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


# Not "reproducible": questions asked before are left out of the draw (no repeats), so the history counts too.
SEED_HELP = ("Random seed: the same seed and settings draw the same questions for the same history. Questions you were "
             "asked before wait until the others are used up (no repeats), so the same seed again can draw others.")
# What a resumed session keeps from its start (each one's option: its name with dashes).
SETUP = ("topics", "questions", "difficulty", "mode", "seed", "time_limit_s")


def interview(
    ctx: typer.Context,
    session: Annotated[str | None, typer.Argument(
        metavar="SESSION_ID", help="With --resume: the session to continue (`interviewer sessions` lists them).",
        show_default=False)] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue a paused session: the one named, else your latest still going.")] = False,
    topics: Annotated[list[str] | None, typer.Option(
        "--topics", help="Topics to draw from (repeatable, or comma-separated).", callback=_topic_list)] = None,
    questions: Annotated[int, typer.Option("--questions", min=1, max=30, help="Number of questions.")] = 5,
    difficulty: Annotated[str, typer.Option(
        help="1, 2, 3 or adaptive.", callback=_one_of("1", "2", "3", "adaptive"))] = "adaptive",
    mode: Annotated[str, typer.Option(
        help="practice or interview.", callback=_one_of("practice", "interview"))] = "practice",
    seed: Annotated[int | None, typer.Option(help=SEED_HELP)] = None,
    time_limit_s: Annotated[int | None, typer.Option(
        "--time-limit-s", min=30, max=3600, show_default=False,
        help="Seconds to answer each prompt (30 to 3600; the API's time_limit_s): an answer after that scores half. "
             "Default: no limit.")] = None,
    user: UserOption = LOCAL_USER,
) -> None:
    """Run a mock interview in the terminal (or resume one) and print the report at the end."""
    from app.cli_output import console as make_console
    from app.cli_output import open_bank_search
    from app.config import get_settings
    from app.services import code_runner_for, engine_for, repository_for

    # Options that do not go together are usage errors: exit 2, as click's own (README: "a usage error ... exits 2").
    if session and not resume:
        raise BadOptionError(f"a session id is for resuming one: `{resume_command(session, user)}`")
    # By the source's name: typer's own copy of click has its own ParameterSource.
    given = [f"--{name.replace('_', '-')}" for name in SETUP
             if getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"]
    if resume and given:
        raise BadOptionError(f"--resume continues a session as it was set up: leave out {', '.join(given)}")
    settings = get_settings()
    repo = repository_for(settings)
    runners: list[Any] = []  # the sandboxed runner, once a code answer needed it
    stores: list[Any] = []  # the bank search, closed with the runner when the command ends

    def start_runner() -> Any | None:
        # Not at start: its warm pool took 7 of a one-question run's 21 s (and its module imports torch),
        # and most terminal sessions send no code.
        runners.append(code_runner_for(settings))
        return runners[-1]

    out = make_console()
    try:
        user_id = repo.get_or_create_user(user).id
        # Found before the bank search is opened, which may index the bank first: no such session (or none paused)
        # is said at once (review s55: `--resume nosuch` indexed the bank, then said so).
        resuming = str(session_to_resume(repo, user_id, session, user).id) if resume else None
        stores.append(open_bank_search(settings))
        engine = engine_for(settings, repo=repo, store=stores[-1], runner=start_runner)
        if resuming is not None:
            session_id, prompt = _resumed(engine, repo, user_id, resuming, out)
        else:
            if note := unfinished_note(repo, user_id, user):
                out.print(note, style="cyan", soft_wrap=True)
            started, prompt = engine.start(user_id=user_id, config=_config(topics, questions, difficulty, mode, seed,
                                                                         time_limit_s))
            session_id = str(started.id)
        # Bytes that are not UTF-8 arrive as lone surrogates whatever the locale (read_answer shows them as
        # U+FFFD), rather than stopping the interview with a UnicodeDecodeError.
        sys.stdin.reconfigure(errors="surrogateescape")  # type: ignore[union-attr]  # a TextIOWrapper
        run_interview(engine, user_id, session_id, prompt, sys.stdin, out, max_chars=settings.max_answer_chars,
                      max_code_chars=settings.max_code_chars, drafts=repo, user=user)
        print_report(out, repo, session_id, user_id, settings, user)
    finally:
        for runner in runners:
            if runner is not None:
                runner.close()
        for store in stores:
            store.close()


def _config(topics: list[str] | None, questions: int, difficulty: str, mode: str, seed: int | None,
            time_limit_s: int | None = None) -> Any:
    from app.interview.models import SessionConfig

    level: str | int = int(difficulty) if difficulty in ("1", "2", "3") else difficulty
    return SessionConfig.model_validate(
        {"topics": topics, "num_questions": questions, "mode": mode, "seed": seed, "difficulty": level,
         "time_limit_s": time_limit_s})


def _resumed(engine: Any, repo: Any, user_id: int, session_id: str, out: Console) -> tuple[str, Any]:
    """The session to resume and its prompt on screen, with the answer kept unsent for that prompt (a Ctrl-C while
    it was scored, or the app's draft), to type again."""
    prompt = engine.current_prompt(session_id=session_id, user_id=user_id)
    if prompt is None:  # an answer to it is being scored elsewhere (the app, another terminal)
        raise UserFacingError(f"session {session_id} has no question open right now (an answer to it is still being "
                              "handled); try again in a moment")
    out.print(f"Resuming session {session_id} at question {prompt.number} of {prompt.total}.", style="cyan")
    draft = repo.draft(session_id, turn=prompt.turn)
    if draft is not None and (draft.text or draft.code):
        out.print("Your answer to this prompt, kept from before but not sent:", style="cyan")
        out.print(Panel(Text("\n\n".join(filter(None, (draft.text, draft.code))))))
    return session_id, prompt


def register(app: typer.Typer) -> None:
    app.command()(interview)
