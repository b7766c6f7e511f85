"""A throwaway PostgreSQL server for the test run: Debian's binaries, a private data dir, a free port.

Import `postgres_server` into a test module to use it. It installs Debian's `postgresql` package when
missing and we are root (as on CI), and skips with the command to run otherwise. The server runs as
the `postgres` OS user when we are root, because PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SUPERUSER = "postgres"
START_TIMEOUT_S = 30
# Crash safety of a throwaway server is irrelevant; skipping fsync keeps each test's
# CREATE DATABASE and migration fast on slow CI disks.
SERVER_OPTIONS = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{SUPERUSER}@{self.host}:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database (one per test keeps tests independent); returns its URL."""
        import psycopg

        name = f"test_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(host=self.host, port=self.port, user=SUPERUSER, dbname="postgres") as conn:
            conn.autocommit = True  # CREATE DATABASE cannot run inside a transaction
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _bin_dir() -> Path | None:
    found = glob.glob("/usr/lib/postgresql/*/bin/initdb")
    if not found:
        return None
    newest = max(found, key=lambda path: int(Path(path).parts[-3]))
    return Path(newest).parent


def _ensure_installed() -> Path:
    bin_dir = _bin_dir()
    if bin_dir is not None:
        return bin_dir
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("PostgreSQL is not installed; run: sudo apt-get install -y postgresql")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", "postgresql"], check=True, env=env, capture_output=True
    )
    bin_dir = _bin_dir()
    if bin_dir is None:
        pytest.fail("apt-get installed postgresql but no /usr/lib/postgresql/*/bin/initdb appeared")
    return bin_dir


def _as_server_user(root: Path) -> list[str]:
    """The command prefix that runs the server binaries as a non-root user."""
    if os.geteuid() != 0:
        return []
    try:
        account = pwd.getpwnam("postgres")
    except KeyError:
        pytest.fail("running as root but there is no 'postgres' OS user to run the server as")
    os.chown(root, account.pw_uid, account.pw_gid)
    return ["runuser", "-u", "postgres", "--"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(pg_ctl: list[str], data: Path, root: Path) -> int:
    """Start the server on a free port; retry, since another process may take the port first."""
    for _ in range(3):
        port = _free_port()
        options = f"-h 127.0.0.1 -p {port} -k {root} {SERVER_OPTIONS}"
        started = subprocess.run(
            [
                *pg_ctl,
                "start",
                "-w",
                "-t",
                str(START_TIMEOUT_S),
                "-D",
                str(data),
                "-l",
                str(root / "log"),
                "-o",
                options,
            ],
            cwd=root,
            capture_output=True,
            text=True,
        )
        if started.returncode == 0:
            return port
    log = (root / "log").read_text(errors="replace") if (root / "log").exists() else ""
    pytest.fail(f"PostgreSQL did not start: {started.stderr}\n{log[-2000:]}")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A running PostgreSQL server for the whole test session, removed afterwards."""
    bin_dir = _ensure_installed()
    # mkdtemp under /tmp (world-traversable), not pytest's tmp_path: pytest's base dir is private
    # to the current user, so the postgres OS user could not reach a data dir inside it.
    root = Path(tempfile.mkdtemp(prefix="interviewer-pg-"))
    prefix = _as_server_user(root)
    data = root / "data"
    try:
        subprocess.run(
            [
                *prefix,
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            cwd=root,
            check=True,
            capture_output=True,
        )
        pg_ctl = [*prefix, str(bin_dir / "pg_ctl")]
        port = _start(pg_ctl, data, root)
        try:
            yield PostgresServer(host="127.0.0.1", port=port)
        finally:
            subprocess.run(
                [*pg_ctl, "stop", "-m", "fast", "-w", "-D", str(data)], cwd=root, capture_output=True
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
