"""`interviewer keys` and `interviewer serve`: keys shown once, stored hashed; no public bind without auth."""

from __future__ import annotations

import json
import sqlite3

import pytest
import typer
from typer.testing import CliRunner

from app import cli_server
from app.errors import NotFoundError, UserFacingError


@pytest.fixture
def cli() -> typer.Typer:
    root = typer.Typer()
    root.callback()(lambda: None)
    cli_server.register(root)
    return root


def run(cli, *args):
    return CliRunner().invoke(cli, list(args))


def test_keys_create_list_revoke(cli, tmp_path):
    created = run(cli, "keys", "create", "--name", "laptop", "--json")
    assert created.exit_code == 0, created.output
    body = json.loads(created.stdout)
    assert set(body) == {"name", "key"} and body["name"] == "laptop" and body["key"].startswith("iv_")
    with sqlite3.connect(tmp_path / "data" / "interviewer.db") as db:
        dump = "\n".join(db.iterdump())
    assert body["key"] not in dump  # only the hash and a short display prefix are stored
    plain = run(cli, "keys", "create", "--name", "phone")
    assert plain.exit_code == 0 and plain.stdout.strip().startswith("iv_")
    listed = json.loads(run(cli, "keys", "list", "--json").stdout)
    assert [k["name"] for k in listed] == ["laptop", "phone"] and body["key"] not in str(listed)
    assert run(cli, "keys", "revoke", "--name", "laptop").exit_code == 0
    assert json.loads(run(cli, "keys", "list", "--json").stdout)[0]["revoked_at"]
    assert isinstance(run(cli, "keys", "revoke", "--name", "laptop").exception, NotFoundError)
    assert isinstance(run(cli, "keys", "create", "--name", "phone").exception, UserFacingError)
    assert json.loads(run(cli, "keys", "list", "--user", "bob", "--json").stdout) == []


def test_a_key_name_with_brackets_is_printed_as_typed(cli, tmp_path):
    """rich read "[/k]" as a closing tag and raised after the key was made, losing the one showing. New names
    cannot hold brackets (they travel in the admin routes' paths); one stored before that rule still lists."""
    created = run(cli, "keys", "create", "--name", "[/k] laptop")
    assert isinstance(created.exception, UserFacingError) and "may hold only letters" in str(created.exception)
    created = run(cli, "keys", "create", "--name", "laptop")
    assert created.exit_code == 0 and created.stdout.strip().startswith("iv_") and "'laptop'" in created.stderr
    with sqlite3.connect(tmp_path / "data" / "interviewer.db") as db:
        db.execute("UPDATE api_keys SET name = '[/k] laptop'")
    listed = run(cli, "keys", "list")
    assert listed.exit_code == 0 and listed.stdout.startswith("[/k] laptop")


def test_serve_refuses_a_public_bind_with_auth_disabled(cli, monkeypatch):
    calls = []
    monkeypatch.setattr("uvicorn.run", lambda *a, **kw: calls.append(kw))
    monkeypatch.setenv("INTERVIEWER_AUTH_DISABLED", "true")
    from app.config import get_settings

    get_settings.cache_clear()
    refused = run(cli, "serve", "--host", "0.0.0.0")
    assert isinstance(refused.exception, UserFacingError) and "AUTH_DISABLED" in str(refused.exception)
    assert calls == []
    served = run(cli, "serve", "--host", "localhost", "--port", "8123", "--workers", "2")
    assert served.exit_code == 0
    assert calls == [
        {
            "factory": True,
            "host": "localhost",
            "port": 8123,
            "workers": 2,
            "proxy_headers": False,
            "server_header": False,
        }
    ]


def test_loopback_detection():
    assert cli_server.is_loopback("127.0.0.1") and cli_server.is_loopback("::1")
    assert cli_server.is_loopback("localhost")
    assert not cli_server.is_loopback("0.0.0.0") and not cli_server.is_loopback("192.168.1.10")
