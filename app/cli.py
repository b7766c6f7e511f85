"""The `interviewer` command line. Its commands and JSON shapes are contracts other tools rely on."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from app.cli_output import console, emit_json, err, open_bank_search, progress
from app.config import get_settings
from app.errors import UserFacingError, domain_errors, one_line
from app.text_input import as_text

app = typer.Typer(
    help="Mock interviewer for PyTorch and deep-learning interviews.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
bank_app = typer.Typer(help="Inspect and validate the question bank.", no_args_is_help=True)
app.add_typer(bank_app, name="bank")


@app.command()
def ingest(
    docs: Annotated[list[Path] | None, typer.Option(
        "--docs", help="A raw question document to parse (repeat --docs for several).")] = None,
    out: Annotated[Path, typer.Option(help="Where draft YAML for new questions is written.")] = Path(
        "data/drafts.yaml"
    ),
    replace: Annotated[bool, typer.Option(help="Write over an existing --out file.")] = False,
) -> None:
    """Embed the bank into Chroma (only what changed) and store its rubric vectors; --docs also drafts entries.

    With --docs, raw question documents are parsed, matched against the bank, and written to --out as draft
    entries; the bank's own files are not changed."""
    from app.services import store_for, store_rubric_vectors
    from ingest.drafts import match_bank, parse_documents, write_drafts
    from ingest.pipeline import ingest_bank
    from knowledge.loader import load_bank

    settings = get_settings()
    parsed = []
    if docs:
        _check_drafts_path(out, docs, replace=replace)  # before minutes of work, not after
        # Parsed before the bank is indexed: a document that is missing, not text or holds no question is said at
        # once (review s55: `--docs /nonexistent.md` embedded the bank first). Milliseconds a document: no progress bar.
        parsed = parse_documents(docs)
    questions = load_bank(get_settings().bank_dir)
    with store_for(settings) as store:  # closed when the command ends (see QuestionStore.close)
        with progress() as bar:
            task = bar.add_task("Embedding the bank", total=None)
            report = ingest_bank(
                store, questions, on_embedded=lambda done, total: bar.update(task, completed=done, total=total)
            )
        if report.embedded == 0 and report.removed == 0:
            err.print(f"Bank unchanged: {report.unchanged} entries already embedded in the search index.")
        else:
            err.print(
                f"Embedded {report.embedded} entries ({report.added} new, {report.updated} changed), "
                f"{report.unchanged} unchanged, {report.removed} removed."
            )
        with progress() as bar:
            task = bar.add_task("Storing rubric vectors for scoring", total=None)
            store_rubric_vectors(settings, questions)
            bar.update(task, total=1, completed=1)
        if not docs:
            return
        with progress() as bar:
            bar.add_task("Matching the documents' questions against the bank", total=None)
            candidates = match_bank(store, parsed)
        duplicates = [c for c in candidates if c.duplicate_of]
        try:
            written = write_drafts(candidates, out)
        except OSError as exc:
            raise UserFacingError(f"drafts file {out} cannot be written ({exc.strerror})") from None
        for c in duplicates:
            err.print(f"  duplicate: {c.parsed.source} {c.parsed.ref} -> {c.duplicate_of} ({c.similarity:.2f})")
        err.print(
            f"Found {len(candidates)} questions: {len(duplicates)} duplicate bank entries, "
            f"{written} new written as drafts to {out}."
        )


@app.command()
def search(
    queries: Annotated[list[str], typer.Argument(help="One or more queries.")],
    k: Annotated[int, typer.Option("--k", min=1, max=50, help="Results per query.")] = 5,
    framework: Annotated[str | None, typer.Option(help="pytorch, tensorflow or general.")] = None,
    topic: Annotated[str | None, typer.Option(help="A topic from the taxonomy.")] = None,
    difficulty: Annotated[int | None, typer.Option(help="1, 2 or 3.", min=1, max=3)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Search the bank; one result list per query (the bank is indexed first if it never was)."""
    filters = {"framework": framework, "topic": topic, "difficulty": difficulty}
    results: list[dict[str, Any]] = []
    with open_bank_search(get_settings()) as store:
        found = [(query, store.search(query, k=k, filters=filters))
                 for query in map(as_text, queries)]  # bytes that are not UTF-8 become U+FFFD, not a tokenizer crash
    for query, hits in found:
        results.append(
            {
                "query": query,
                "results": [
                    {"id": h.id, "question": h.question, "topic": h.topic, "difficulty": h.difficulty,
                     "score": h.score}
                    for h in hits
                ],
            }
        )
    if as_json:
        emit_json(results)
        return
    out = console()
    for block in results:
        out.print(block["query"], style="bold")
        for hit in block["results"]:
            out.print(Text.assemble(f"  {hit['score']:.3f}  {hit['id']}  ", (hit["question"], "dim")))


@bank_app.command("stats")
def bank_stats(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Counts by framework, topic and difficulty, and every seed question covered."""
    from knowledge.loader import load_bank

    questions = load_bank(get_settings().bank_dir)
    refs = sorted({(s.seed, s.ref) for q in questions for s in q.sources})
    stats = {
        "questions": len(questions),
        "code_tasks": sum(q.code is not None for q in questions),
        "by_framework": dict(sorted(Counter(q.framework.value for q in questions).items())),
        "by_topic": dict(sorted(Counter(q.topic.value for q in questions).items())),
        "by_difficulty": {str(k): v for k, v in sorted(Counter(q.difficulty for q in questions).items())},
        "seed_refs": [{"seed": seed, "ref": ref} for seed, ref in refs],
    }
    if as_json:
        emit_json(stats)
        return
    out = console()
    out.print(f"{stats['questions']} questions, {stats['code_tasks']} code tasks, {len(refs)} seed refs")
    for key in ("by_framework", "by_topic", "by_difficulty"):
        out.print(f"{key}: {stats[key]}")


@bank_app.command("validate")
def bank_validate() -> None:
    """Schema, related ids, and every code task's reference passing its own checks."""
    from evaluators.code.bank_check import code_task_problems
    from knowledge.loader import bank_problems

    settings = get_settings()
    # Every mistake in one run (same question texts too), then the valid tasks run.
    questions, problems = bank_problems(settings.bank_dir, same_texts=True)
    code_tasks = [q for q in questions if q.code is not None]
    with progress() as bar:
        task = bar.add_task("Checking reference solutions", total=len(code_tasks))
        for question in code_tasks:
            problems.extend(code_task_problems([question], run_limit_s=settings.runner_timeout_s))
            bar.advance(task)
    for line in problems:
        err.print(line, style="red")
    if problems:
        raise UserFacingError(f"{len(problems)} problem(s) in the bank")
    console().print(f"Bank OK: {len(questions)} questions, {len(code_tasks)} code tasks all pass their checks.")


def _register_optional_commands() -> None:
    """Commands from other domains live in their own modules."""
    from app import cli_extra

    cli_extra.register(app)


def _check_drafts_path(out: Path, docs: list[Path], *, replace: bool) -> None:
    if out.is_file() and not replace and not any(out.resolve() == doc.resolve() for doc in docs):
        raise UserFacingError(f"--out {out} exists (drafts you may have curated): give another --out, or pass "
                              "--replace to write over it")
    if out.is_dir():
        raise UserFacingError(f"--out {out} is a folder; give a file name, such as {out / 'drafts.yaml'}")
    if any(out.resolve() == doc.resolve() for doc in docs):
        raise UserFacingError(f"--out {out} is one of the documents read; it would be overwritten")
    blocked = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        raise UserFacingError(f"--out {out}: {blocked} is a file, not a folder")


def main() -> None:
    """Entry point: domain errors become one line on stderr and exit code 1, never a traceback."""
    _register_optional_commands()
    try:
        # Without standalone mode, typer returns the exit code of what it caught (130 for Ctrl-C).
        code = app(standalone_mode=False)
        if code == 130:
            raise typer.Abort
        if isinstance(code, int) and code:
            sys.exit(code)
    except domain_errors() as exc:
        err.print(f"error: {one_line(exc)}", style="red", highlight=False)
        sys.exit(getattr(exc, "exit_code", 1))
    except (typer.Exit, SystemExit) as exc:
        sys.exit(getattr(exc, "exit_code", getattr(exc, "code", 0)) or 0)
    except (typer.Abort, KeyboardInterrupt):
        err.print("aborted")
        sys.exit(130)
    except Exception as exc:
        # A usage error (a missing option, a bad value) shows its own message. Recent typer raises it
        # from a click it vendors, not from the installed click, so it is recognised by its shape.
        if callable(getattr(exc, "show", None)) and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()  # type: ignore[attr-defined]
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        from sqlalchemy.exc import OperationalError

        if isinstance(exc, OperationalError):  # locked by another writer past its busy timeout, or its server gone
            reason = " ".join(str(exc.orig or exc).split())[:200]
            err.print(f"error: the database cannot be used right now ({reason}); try again shortly", style="red",
                      highlight=False)
            sys.exit(1)
        raise


if __name__ == "__main__":  # `python -m app.cli` as well as the `interviewer` script
    main()
