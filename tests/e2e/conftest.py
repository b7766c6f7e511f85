"""Shared by the browser tests: the servers, the page, and Debian's chromium driven by Playwright.

Servers: `interviewer serve` and `streamlit run streamlit_app.py` on free loopback ports, with a fresh data directory,
started once for the whole run. Each test is a new user of its own (see tests.e2e.relay), who is never asked a
question twice and has no session but the test's.
"""

from __future__ import annotations

import itertools
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import REPO
from tests.e2e.browser import CHROMIUM, CHROMIUM_ARGS, SHOTS, shot
from tests.e2e.relay import KeyedRelay
from tests.processes import Watch
from tests.test_api_server import cli, free_port, server_env, wait_ready


def _browser_tools() -> None:
    """Install chromium and playwright through scripts/install-browser.sh, or skip saying why."""
    def ready() -> bool:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            return False
        return Path(CHROMIUM).exists()

    if ready():
        return
    run = subprocess.run(["bash", str(REPO / "scripts" / "install-browser.sh")], cwd=REPO,
                         capture_output=True, text=True, env={**os.environ, "PYTHON": sys.executable})
    if run.returncode != 0 or not ready():
        pytest.skip(f"browser tools unavailable (scripts/install-browser.sh failed): {run.stderr.strip()[-300:]}")


@pytest.fixture(scope="session")
def shared_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KeyedRelay, str, str]]:
    """The API (authentication on), the relay before it and Streamlit, started once for every browser test: each
    start-up took tens of seconds, 80 s at a load average of 14 on 2 cores."""
    _browser_tools()
    admin_key = secrets.token_urlsafe(32)
    data = tmp_path_factory.mktemp("browser")
    env = server_env(data / "data", INTERVIEWER_ADMIN_KEY=admin_key)
    assert cli(env, "ingest").returncode == 0
    api_port, relay_port, ui_port = free_port(), free_port(), free_port()
    api_url, ui_url = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{ui_port}"
    relay = KeyedRelay(api_url, relay_port)
    logs = {name: (data / f"{name}.log").open("w") for name in ("api", "ui")}
    procs = [
        subprocess.Popen([sys.executable, "-c", "from app.cli import main; main()", "serve", "--port", str(api_port)],
                         env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=logs["api"], text=True)
    ]
    try:
        _ready(lambda: wait_ready(api_url, procs[0]), data / "api.log")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.address", "127.0.0.1",
             "--server.port", str(ui_port), "--server.headless", "true", "--browser.gatherUsageStats", "false"],
            env={**env, "INTERVIEWER_API_URL": relay.url}, cwd=REPO, stdout=subprocess.DEVNULL, stderr=logs["ui"],
        ))
        _ready(lambda: _wait_http(f"{ui_url}/_stcore/health", procs[1]), data / "ui.log")
        yield relay, admin_key, ui_url
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        relay.close()
        for log in logs.values():
            log.close()


@pytest.fixture
def servers(shared_servers: tuple[KeyedRelay, str, str]) -> tuple[str, str]:
    """The API's address (the relay's, signing as a user made for this test alone) and the UI's: no test sees
    another's sessions, and every question is new to its user."""
    relay, admin_key, ui_url = shared_servers
    made = httpx.post(f"{relay.upstream}/v1/admin/users", json={"name": f"browser-{next(_USERS)}"},
                      headers={"Authorization": f"Bearer {admin_key}"}, timeout=60)
    made.raise_for_status()
    relay.key = made.json()["api_key"]
    return relay.url, ui_url


_USERS = itertools.count(1)


def _ready(wait: Any, log: Path) -> None:
    """`wait()`, its failure told with the end of the server's log."""
    try:
        wait()
    except AssertionError as exc:
        raise AssertionError(f"{exc}; its log ends:\n{log.read_text(errors='replace')[-2000:]}") from None


def _wait_http(url: str, proc: subprocess.Popen) -> None:
    """Until `url` answers 200; a server that looks hung (tests.processes.Watch) fails, however long a loaded
    machine takes (a 60 s limit here could fail a sound start-up at a high load)."""
    watch = Watch(proc.pid)
    while True:
        assert proc.poll() is None, f"process exited with {proc.returncode}"
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if (why := watch.stuck()) is not None:
            raise AssertionError(f"{url} not up: the server {why}")
        time.sleep(0.3)


@pytest.fixture
def page(servers: tuple[str, str]) -> Iterator[Any]:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=45_000)  # first renders and sandbox runs are slow on a busy 2-core machine
    shutil.rmtree(SHOTS, ignore_errors=True)
    SHOTS.mkdir(parents=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        page = context.new_page()
        page.set_default_timeout(30_000)
        try:
            yield page
        finally:
            shot(page, "last")
            browser.close()
