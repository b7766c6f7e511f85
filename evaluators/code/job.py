"""The job a sandbox worker receives. It is built here, and only here.

THE RULE: everything in the job is readable by the candidate. The submission runs in the same
jail, the same process image and the same memory as everything the worker holds, so any field
added here is a field a submission can find, print, copy or return. A job therefore carries
only what a candidate could be shown without harm:
- the submission's own source, and the import lines of the task's starter (public: shown in the editor),
- each check's probe, with only the setup definitions that probe uses,
- the inputs (built on the trusted side from a seed the jail never sees),
- the forbidden names and why, and the resource limits.
Never the reference solution, the expected values, the `verify` code, or setup that only
`verify` and `inputs` use (reference formulas such as `ref_attention` stay on the trusted side).
Verdicts are reached on the trusted side, from what the probes return.
"""

from __future__ import annotations

import ast
import functools
from typing import Any

from knowledge.schema import CodeCheck, CodeTask


def probe_source(task: CodeTask, check: CodeCheck) -> str:
    """The check's probe preceded by the setup statements it needs (imports always, definitions
    only when the probe reaches them, directly or through another shipped definition)."""
    return _probe_source(task.setup, check.probe)


@functools.lru_cache(maxsize=1024)
def _probe_source(setup: str, probe: str) -> str:
    """Worked out once per setup and probe: the trusted side probes the reference with it for every submission."""
    if not setup.strip():
        return probe
    statements = ast.parse(setup).body
    wanted = _names_used(ast.parse(probe))
    keep: set[int] = set()
    changed = True
    while changed:
        changed = False
        for index, statement in enumerate(statements):
            if index in keep:
                continue
            if isinstance(statement, (ast.Import, ast.ImportFrom)) or _names_defined(statement) & wanted:
                keep.add(index)
                wanted |= _names_used(statement)
                changed = True
    shipped = [ast.get_source_segment(setup, statements[i]) or "" for i in sorted(keep)]
    return "\n\n".join([*shipped, probe])


def required_names(task: CodeTask, check: CodeCheck) -> frozenset[str]:
    """The names a check's probe looks up in the submission's namespace (`ns["CustomLinear"]`, in the probe or the
    setup it ships with): the names the contract asks for. Read from the bank's own probe, on the trusted side, so
    a run's claim that one of them is missing is believed only for a name the check really needs."""
    return _required_names(probe_source(task, check))


@functools.lru_cache(maxsize=1024)
def _required_names(source: str) -> frozenset[str]:
    return frozenset(
        node.slice.value for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "ns"
        and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)
    )


def build_job(task: CodeTask, source: str, inputs: list[bytes], limits: dict[str, int],
              probes: list[str] | None = None) -> tuple[dict[str, Any], list[bytes]]:
    """(header, blobs) for one submission: blob i holds the inputs of check i."""
    probes = probes if probes is not None else [probe_source(task, check) for check in task.checks]
    forbidden = task.forbidden
    meta = {
        "source": source,
        "imports": starter_imports(task.starter),
        "checks": [{"name": check.name, "probe": probe} for check, probe in zip(task.checks, probes, strict=True)],
        "forbidden": {"names": list(forbidden.names), "because": forbidden.because} if forbidden else None,
        "limits": limits,
    }
    return meta, list(inputs)


@functools.lru_cache(maxsize=256)
def starter_imports(starter: str) -> str:
    """The starter's top-level import statements, run before a submission (which may leave them out)."""
    try:
        statements = ast.parse(starter).body
    except SyntaxError:
        return ""
    kept = [s for s in statements if isinstance(s, (ast.Import, ast.ImportFrom)) and not _from_future(s)]
    return "\n".join(ast.get_source_segment(starter, s) or "" for s in kept)


def _from_future(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.ImportFrom) and statement.module == "__future__"


def _names_defined(statement: ast.stmt) -> set[str]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _names_used(tree: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
