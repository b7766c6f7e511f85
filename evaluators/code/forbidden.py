"""Read a submission's source for forbidden built-ins before anything runs (trusted side).

The first of two layers (the second, guard.py, watches torch's dispatch inside the jail).
It follows imports, from-imports, aliases, assignments, attribute chains and `getattr` with a
literal name. In a task that forbids anything it also refuses code that could reach a built-in
without naming it: torch internals (`torch._C`, `torch.ops`, `torch.overrides`, ...), computed
`getattr`, `__import__`/`importlib`/`eval`/`exec`, frame, `gc` and `inspect` introspection,
threads (a function mode, where the guard needs one, watches one thread) and the runner's own
modules.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import types
from dataclasses import dataclass
from typing import Any

from knowledge.schema import CodeTask, Forbidden

REFUSED_MODULES = (
    "importlib", "inspect", "gc", "ctypes", "builtins", "types", "marshal", "pickle", "code", "codeop",
    "runpy", "pdb", "traceback", "threading", "_thread", "multiprocessing", "concurrent", "asyncio",
    "subprocess", "operator", "evaluators", "knowledge", "__main__", "torch.ops", "torch.overrides",
    "torch.library", "torch.jit", "torch.fx", "torch.compiler", "torch.export", "torch.hub",
    "torch.package", "torch.multiprocessing", "torch.utils.cpp_extension", "torch.compile",
)
REFUSED_NAMES = {
    "__import__": "imports a module by a computed name", "eval": "runs code built at run time",
    "exec": "runs code built at run time", "compile": "builds code at run time",
    "globals": "reads namespaces by name", "locals": "reads namespaces by name",
    "vars": "reads namespaces by name", "breakpoint": "starts a debugger",
    "__builtins__": "reaches the built-ins table",
}
REFUSED_ATTRIBUTES = {
    "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "tb_frame", "tb_next", "gi_frame",
    "cr_frame", "ag_frame", "_getframe", "_current_frames", "settrace", "setprofile",
}
ALLOWED_DUNDERS = {"__init__", "__name__", "__qualname__", "__doc__", "__class__", "__module__", "__version__"}
REFUSED_SYS = {"modules", "meta_path", "path_hooks", "exc_info", "exception", "last_traceback"}
WHY_REFUSED = "in a task that forbids built-ins, code that could reach them without naming them is refused"


def contract_with_refusals(task: CodeTask) -> str:
    """The contract as a candidate reads it: for a task that forbids built-ins, also what else is refused,
    so `import operator` (for functools.reduce) is not learnt from a score of 0."""
    if task.forbidden is None:
        return task.contract
    modules = ", ".join(f"`{m}`" for m in REFUSED_MODULES if m not in ("evaluators", "knowledge", "__main__"))
    names = ", ".join(f"`{n}`" for n in REFUSED_NAMES if not n.startswith("__"))
    return (f"{task.contract.rstrip()}\n\nSo that the forbidden calls cannot be reached without naming them, "
            f"this task also refuses the modules {modules}, and {names}.")


BINDINGS = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.NamedExpr)
INSPECTED = (ast.Call, ast.Import, ast.ImportFrom, ast.Name, ast.Attribute)
NAMELESS = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


@dataclass(frozen=True)
class Finding:
    line: int
    message: str


def find_forbidden(source: str, rule: Forbidden | None) -> Finding | None:
    """The first forbidden use in `source`, or None; a syntax error is left for the run to report."""
    if rule is None:
        return None
    try:
        tree = ast.parse(source)
        nodes = _nodes(tree)  # walked once: every pass below needs it
        reader = _Reader(rule, nodes)
        findings = [f for node in nodes if isinstance(node, INSPECTED) and (f := reader.inspect(node)) is not None]
    except (SyntaxError, ValueError):
        return None
    except (RecursionError, MemoryError):  # nesting deep enough to exhaust the reader: refuse, never crash
        return Finding(1, f"your code is nested too deeply to be read for forbidden built-ins: {WHY_REFUSED}")
    return min(findings, key=lambda f: f.line) if findings else None


def _nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node, like ast.walk but twice as fast (it runs on every submission): no generator
    per node, and no leaves that carry no names (Load, Store, operators)."""
    nodes = [tree]
    for node in nodes:  # grows while it is read: breadth first
        for field in node._fields:
            value = getattr(node, field, None)
            if value.__class__ is list:
                nodes.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST) and not isinstance(value, NAMELESS):
                nodes.append(value)
    return nodes


@functools.lru_cache(maxsize=512)
def _resolved(names: tuple[str, ...]) -> tuple[tuple[str, Any], ...]:
    """Each forbidden name with its object (kept alive here, so ids stay theirs)."""
    # Imported here, not at the top: guard.py imports torch (2.4 s), and contract_with_refusals, which every
    # asked question's prompt uses, needs none of it (a terminal session sending no code never loads torch).
    from evaluators.code.guard import resolve

    return tuple((name, resolve(name)) for name in names if not name.startswith("torch.ops."))


@functools.lru_cache(maxsize=4096)
def _walk_loaded(name: str) -> Any:
    """The object `name` denotes among modules already imported here. Never imports anything:
    a module's own attributes only, no module `__getattr__` (torch's lazily imports submodules)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        obj = sys.modules.get(".".join(parts[:cut]))
        if obj is None:
            continue
        for part in parts[cut:]:
            if isinstance(obj, types.ModuleType):
                obj = vars(obj).get(part, sys.modules.get(f"{obj.__name__}.{part}"))
            else:
                obj = inspect.getattr_static(obj, part, None)
            if obj is None:
                return None
        return obj
    return None


class _Reader:
    def __init__(self, rule: Forbidden, nodes: list[ast.AST]) -> None:
        self.rule = rule
        self.aliases: dict[str, str] = {}
        self.by_id = {id(obj): name for name, obj in _resolved(tuple(rule.names)) if obj is not None}
        self.methods = {name.rsplit(".", 1)[1]: name for name in rule.names if name.startswith("torch.Tensor.")}
        self.call_targets = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
        self.collect_aliases([n for n in nodes if isinstance(n, BINDINGS)])

    def collect_aliases(self, bindings: list[ast.AST]) -> None:
        """Names bound to modules or built-ins anywhere in the file (flow-insensitive on purpose)."""
        for _ in range(3):  # aliases of aliases
            for node in bindings:
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        bound = alias.asname or alias.name.split(".")[0]
                        self.aliases[bound] = alias.name if alias.asname else bound
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    for alias in node.names:
                        self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                    qualified = self.qualify(node.value)
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if qualified and isinstance(target, ast.Name):
                            self.aliases[target.id] = qualified

    def qualify(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            owner = self.qualify(node.value)
            return f"{owner}.{node.attr}" if owner else None
        if _literal_getattr(node):
            owner = self.qualify(node.args[0])  # type: ignore[attr-defined]
            return f"{owner}.{node.args[1].value}" if owner else None  # type: ignore[attr-defined]
        return None

    def forbidden_name(self, qualified: str) -> str | None:
        for name in self.rule.names:
            if qualified == name or qualified.startswith(name + "."):
                return name
        obj = _walk_loaded(qualified)
        return self.by_id.get(id(obj)) if obj is not None else None

    def inspect(self, node: ast.AST) -> Finding | None:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Call):
            return self._call(node, line)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return self._import(node, line)
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self._reference(node, line, verb="uses")
        return None

    def _call(self, node: ast.Call, line: int) -> Finding | None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("getattr", "setattr", "delattr", "hasattr"):
            if not (len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                    and isinstance(node.args[1].value, str)):
                return self._refused(line, f"{func.id} with a computed name")
            return self._reference(node, line, verb="calls") if func.id == "getattr" else None
        if isinstance(func, (ast.Name, ast.Attribute)):
            return self._reference(func, line, verb="calls")
        return None

    def _import(self, node: ast.Import | ast.ImportFrom, line: int) -> Finding | None:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                return self._refused(line, "a relative import")
            module = node.module or ""
            if any(alias.name == "*" for alias in node.names):
                return self._refused(line, f"`from {module} import *`")
            modules = [f"{module}.{alias.name}" for alias in node.names] + [module]
        else:
            modules = [alias.name for alias in node.names]
        for module in modules:
            if (name := self.forbidden_name(module)) is not None:
                return self._found(line, "imports", name)
            if (reason := _refused_module(module)) is not None:
                return self._refused(line, reason, verb="imports")
        return None

    def _reference(self, node: ast.AST, line: int, verb: str) -> Finding | None:
        if isinstance(node, ast.Name) and node.id in REFUSED_NAMES:
            return self._refused(line, f"{node.id} ({REFUSED_NAMES[node.id]})")
        if isinstance(node, ast.Name) and node.id in ("getattr", "setattr", "delattr") \
                and id(node) not in self.call_targets:
            return self._refused(line, f"{node.id} passed around as a value")
        if isinstance(node, ast.Attribute):
            if (reason := self._refused_attribute(node)) is not None:
                return self._refused(line, reason)
        qualified = self.qualify(node)
        if qualified is not None:
            if (name := self.forbidden_name(qualified)) is not None:
                return self._found(line, verb, name)
            if (reason := _refused_module(qualified)) is not None:
                return self._refused(line, reason)
        elif isinstance(node, ast.Attribute) and node.attr in self.methods and not _is_self(node.value):
            return self._found(line, verb, self.methods[node.attr])
        return None

    def _refused_attribute(self, node: ast.Attribute) -> str | None:
        attr = node.attr
        if attr.startswith("__") and attr.endswith("__") and attr not in ALLOWED_DUNDERS:
            return f"the attribute {attr}"
        if attr in REFUSED_ATTRIBUTES:
            return f"frame introspection ({attr})"
        if attr in REFUSED_SYS and self.qualify(node.value) == "sys":
            return f"sys.{attr}"
        return None

    def _found(self, line: int, verb: str, name: str) -> Finding:
        return Finding(line, f"line {line} {verb} {name}; {self.rule.because}")

    def _refused(self, line: int, what: str, verb: str = "uses") -> Finding:
        return Finding(line, f"line {line} {verb} {what}: {WHY_REFUSED}")


@functools.lru_cache(maxsize=4096)
def _refused_module(qualified: str) -> str | None:
    for module in REFUSED_MODULES:
        if qualified == module or qualified.startswith(module + "."):
            return f"{module} ({qualified})" if qualified != module else module
    parts = qualified.split(".")
    if parts[0] == "torch" and any(p.startswith("_") and not (p.startswith("__") and p.endswith("__"))
                                   for p in parts[1:]):
        return f"torch internals ({qualified})"
    return None


def _literal_getattr(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str))


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"
