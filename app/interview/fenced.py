"""Code a candidate typed in a fence into the words of a code task: when it is their code answer to run.

On the task's own prompt, fenced code is the code answer (the prompt promised to run it). On a follow-up a
snippet may only illustrate a point ("call it as MyReLU.apply(x)"), and a run of that would stand in for the
task's run; but a candidate asked what in their code fails often answers with the corrected code. So there,
fenced code runs as a resubmission only when it defines every name the contract asks for (the names the
starter defines): then it is a whole solution, run as code sent as code would be, fix penalty and all."""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Mapping
from typing import Any

from knowledge.schema import CodeTask

# An opening fence may carry a language and stray spaces ("``` python "); the block may be indented.
_FENCE = re.compile(r"^[ \t]*```[ \t]*[\w+-]*[ \t]*\n(.*?)```", re.S | re.M)

# A definition at the start of a line: how names are read from code that does not parse (a fix with a typo is
# still a resubmission, and its run says where the syntax error is).
_DEFINITION = re.compile(r"^(?:async\s+def|def|class)\s+([A-Za-z_]\w*)", re.M)


def code_from_words(
    task: CodeTask, text: str | None, code: str | None = None, *, follow_up: bool,
) -> tuple[str | None, str | None, str | None]:
    """(words, code to run, message) for an answer to a code task: with no code of its own, the fenced code taken
    out of the words when it is to be run, else the words as sent (a snippet stays in them, read as code by the
    rubric); the message says which happened, or is None when there is no fenced code. Code sent as code is what
    runs, and fenced code beside it is said to be read as words (a fix typed in the words while the editor held
    other code was never run, and nothing said so)."""
    names = contract_names(task)
    prose, fenced, examples = _split(text, names) if text and "```" in text else (text, "", [])
    if (code or "").strip():
        return text, code, None if not fenced.strip() else (
            "The code sent as code was run; the fenced code in your words was read as words, not run.")
    if not fenced.strip():
        return text or "", None, None
    twice = _redefined(text or "", names)
    # Fences are run as one program, so where two define the same name the later one is what the checks meet (an
    # answer showing the fix, then the old code "instead of" it, had the old code checked and was not told).
    again = "" if not twice else (f" {_listed(twice)} {'is' if len(twice) == 1 else 'are'} defined in more than one "
                                  "fence: they ran as one program, so the last definition is the one checked.")
    if examples:  # said, as the fix runs without it
        again += (f" The fenced `{examples[0].splitlines()[0]}`, which only uses your code, was read as an example of "
                  "use in your words, not run with it.")
    names = names or ["the contract's names"]
    if not follow_up:
        return prose, fenced, "The fenced code in your answer was run as your code." + again
    missing = [name for name in names if name not in defined_names(fenced)]
    if not missing:
        return prose, fenced, (f"The fenced code in your answer defines {_listed(names)}, so it was run as your "
                               "corrected code." + again)
    return text, None, (f"The fenced code in your answer was not run: on a follow-up, code runs as a new "
                        f"submission only when it is a whole solution defining {_listed(names)} (this snippet "
                        f"lacks {_listed(missing)}). Send the whole corrected code to have it checked.")


def split_fenced(block: str, names: list[str] | None = None) -> tuple[str, str]:
    """The prose of an answer and the code of its fenced blocks (joined, each dedented as a whole): what a
    candidate who types both in one box means by them. A block of text that is not Python or of bare expressions (a
    traceback, printed output, a call showing use) stays in the prose when another block holds statements: joined
    to the solution it broke its run (a fix sent beside the output it now prints failed at `tensor(...)`). So does,
    given the contract's `names`, a block that only uses them (`out = log_softmax(x)`): see `_is_example`."""
    prose, code, _ = _split(block, names or [])
    return prose, code


def _split(block: str, names: list[str]) -> tuple[str, str, list[str]]:
    """split_fenced's prose and code, and the sources of the example blocks left in the prose."""
    blocks = [(m, textwrap.dedent(m.group(1)).strip("\n").rstrip()) for m in _FENCE.finditer(block)]
    code = [(m, source) for m, source in blocks if _does_something(source) and not _is_example(source, names)]
    examples = [source for m, source in blocks if code and _is_example(source, names)]
    code = code or blocks
    prose, end = [], 0
    for m, _ in code:
        prose.append(block[end:m.start()])
        end = m.end()
    return ("".join(prose) + block[end:]).strip(), "\n\n".join(source for _, source in code), examples


def _redefined(text: str, names: list[str]) -> list[str]:
    """The contract's names that more than one fenced block defines."""
    counts = dict.fromkeys(names, 0)
    for m in _FENCE.finditer(text):
        for name in defined_names(textwrap.dedent(m.group(1))) & set(names):
            counts[name] += 1
    return [name for name, n in counts.items() if n > 1]


def _does_something(source: str) -> bool:
    """Whether a fenced block is code of a solution: a statement other than a bare expression, or a definition in
    code that does not parse (a fix with a typo)."""
    try:
        return any(not isinstance(statement, ast.Expr) for statement in ast.parse(source).body)
    except SyntaxError:
        return bool(_DEFINITION.search(source))


def _is_example(source: str, names: list[str]) -> bool:
    """Whether a fenced block shows the contract's names in use rather than being part of a solution: it uses one,
    and defines none of them nor any function or class, and imports nothing (which a solution might need). Joined to
    the fix it ran at load, where its `x` was never defined, and the fix failed with it."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    solution_like = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
    if any(isinstance(statement, solution_like) for statement in tree.body) or set(_top_level(source)) & set(names):
        return False
    return any(isinstance(node, ast.Name) and node.id in names for node in ast.walk(tree))


def contract_names(task: CodeTask | Mapping[str, Any] | None) -> list[str]:
    """The names a solution must define: those the starter defines (the reference solution's in a pack whose
    starter defines none). `task` may be a stored copy of one (a turn's `bank_entry["code"]`); None: none."""
    if task is None:
        return []
    if isinstance(task, Mapping):
        return _top_level(str(task.get("starter") or "")) or _top_level(str(task.get("solution") or ""))
    return _top_level(task.starter) or _top_level(task.solution)


def defined_names(code: str) -> set[str]:
    """The names code defines at its top level (functions, classes, assignments)."""
    return set(_top_level(code))


def _top_level(code: str) -> list[str]:
    try:
        body = ast.parse(code).body
    except SyntaxError:
        return list(dict.fromkeys(_DEFINITION.findall(code)))
    names: list[str] = []
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return list(dict.fromkeys(names))


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
