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
