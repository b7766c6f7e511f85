"""How much code the offline scorer is, now and at an earlier commit (issue 17 asks it to shrink by 40%).

Run from the repository root:  .venv/bin/python bench/scorer_size.py [--before REV]

Counts the scorer's modules two ways: every line, and code lines only (no blank lines, comments or
docstrings). The default REV is the last commit before the scorer was rebuilt on teacher-graded answers,
when thresholds.py still held its hand-set cut-offs.
"""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "d35b7bf~1"
MODULES = ("text", "rubric", "misconceptions", "rubric_vectors", "thresholds", "signals")
LAYOUT = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def code_lines(source: str) -> int:
    """Lines holding a token that is not a comment, layout or part of a docstring."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(getattr(first.value, "value", None), str):
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in LAYOUT:
            lines.update(n for n in range(token.start[0], token.end[0] + 1) if n not in docstrings)
    return len(lines)


def sources(rev: str | None) -> dict[str, str]:
    """Each scorer module's text at REV (None: the working tree), for the modules that exist there."""
    out = {}
    for name in MODULES:
        path = f"evaluators/{name}.py"
        if rev is None:
            if (ROOT / path).exists():
                out[name] = (ROOT / path).read_text(encoding="utf-8")
        else:
            shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], capture_output=True, text=True)
            if shown.returncode == 0:
                out[name] = shown.stdout
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE, help=f"the commit to compare with (default {BEFORE})")
    args = parser.parse_args()
    totals = {}
    for label, rev in (("before", args.before), ("now", None)):
        modules = sources(rev)
        if not modules:
            sys.exit(f"error: no scorer modules at {rev} (a shallow clone? fetch the history first)")
        lines = sum(len(s.splitlines()) for s in modules.values())
        code = sum(code_lines(s) for s in modules.values())
        totals[label] = (lines, code)
        print(f"{label:<7} {', '.join(modules)}: {lines} lines, {code} code lines")
    (lines0, code0), (lines1, code1) = totals["before"], totals["now"]
    print(f"change: lines {lines1 / lines0 - 1:+.1%}, code lines {code1 / code0 - 1:+.1%}")


if __name__ == "__main__":
    main()
