"""streamlit_app.py is a script, not a package, so import-linter (pyproject.toml) cannot see it;
this holds it to the same contract as ui/: the front end talks to the API over HTTP only."""

import ast
from pathlib import Path

BELOW_THE_FRONT_END = {"app", "evaluators", "ingest", "knowledge"}


def test_streamlit_app_imports_only_the_front_end() -> None:
    tree = ast.parse((Path(__file__).parent.parent / "streamlit_app.py").read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {name.split(".")[0] for name in imported} & BELOW_THE_FRONT_END


def test_the_local_user_is_named_once_below_both_front_ends() -> None:
    """The user a keyless server acts as and the terminal's default user were each written "local" (app.api.deps,
    app.cli_user): one changed alone would split the terminal's history from the local app's. One definition, in
    app.config, which both front ends import."""
    app_dir = Path(__file__).parent.parent / "app"
    named = [
        path.relative_to(app_dir.parent).as_posix()
        for path in sorted(app_dir.rglob("*.py"))
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value == "local"
    ]
    assert named == ["app/config.py"]
