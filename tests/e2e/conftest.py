"""Shared by the browser tests: the servers, the page, and Debian's chromium driven by Playwright.

Servers: `interviewer serve` and `streamlit run streamlit_app.py` on free loopback ports, with a fresh data directory
and auth disabled, once per test module (a module's tests are one user, who is never asked a question twice).
"""

from __future__ import annotations

import os
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


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    _browser_tools()
    env = server_env(tmp_path_factory.mktemp("browser") / "data", INTERVIEWER_AUTH_DISABLED="true")
    assert cli(env, "ingest").returncode == 0
    api_port, ui_port = free_port(), free_port()
    api_url, ui_url = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{ui_port}"
    procs = [
        subprocess.Popen([sys.executable, "-c", "from app.cli import main; main()", "serve", "--port", str(api_port)],
                         env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ]
    try:
        wait_ready(api_url, procs[0])
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.address", "127.0.0.1",
             "--server.port", str(ui_port), "--server.headless", "true", "--browser.gatherUsageStats", "false"],
            env={**env, "INTERVIEWER_API_URL": api_url}, cwd=REPO,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ))
        _wait_http(f"{ui_url}/_stcore/health", procs[1])
        yield api_url, ui_url
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def _wait_http(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"process exited with {proc.returncode}"
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"{url} not up in time")


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
