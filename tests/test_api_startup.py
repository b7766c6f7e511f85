"""A server told to stop (SIGTERM, SIGINT) while it starts stops then, not once its components are built."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_api_server import free_port, server_env

# The app takes 5 s to make and its components 600 s to build, each said when it begins. uvicorn runs each worker
# of `serve` so.
SLOW_START = """
import sys, time, uvicorn, app.main
def build_components(settings):
    print("building", file=sys.stderr, flush=True)
    time.sleep(600)
make = app.main.create_app
def create_app():
    print("making", file=sys.stderr, flush=True)
    time.sleep(5)
    return make()
app.main.build_components, app.main.create_app = build_components, create_app
uvicorn.run("app.main:create_app", factory=True, host="127.0.0.1", port=int(sys.argv[1]))
"""


# A worker of `serve --workers N` or `uvicorn --workers N --factory app.main:create_app`: it imports the app once
# uvicorn takes the signals (a single server imports it before, when a stop still ends the process), and the app's
# modules take 600 s to import (said when it begins).
SLOW_IMPORT = """
import importlib.abc, sys, time, uvicorn
class Slow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "app.api.sessions":
            print("importing", file=sys.stderr, flush=True)
            time.sleep(600)
sys.meta_path.insert(0, Slow())
config = uvicorn.Config("app.main:create_app", factory=True, host="127.0.0.1", port=int(sys.argv[1]))
uvicorn.Server(config).run()
"""


@pytest.mark.parametrize(("sig", "when"), [(signal.SIGTERM, "building"), (signal.SIGINT, "building"),
                                          (signal.SIGTERM, "making"), (signal.SIGTERM, "importing")])
def test_a_worker_told_to_stop_while_it_starts_stops_at_once(tmp_path: Path, sig: signal.Signals, when: str) -> None:
    """SIGTERM to `serve --workers 2` while its workers started: they went on building their components before they
    stopped, and the server with them (44.6 s on a busy machine, 5.0 s now). A signal that came while the app was made
    reached uvicorn only, which built the components all the same; one that came while the app's modules were
    imported was guarded against for `serve` only, not for `uvicorn --workers N --factory app.main:create_app`."""
    script = SLOW_IMPORT if when == "importing" else SLOW_START
    server = subprocess.Popen([sys.executable, "-c", script, str(free_port())], cwd=REPO,
                              env=server_env(tmp_path / "data"), stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        said = []
        while not said or said[-1].strip() != when:
            said.append(server.stderr.readline())
            assert said[-1], "".join(said)  # the server ended before it said so
        sent = time.monotonic()
        server.send_signal(sig)
        # Stopping takes 5 s on a quiet machine, and may take ten times that on a loaded one; a server that
        # built its components first takes over 600 s.
        server.wait(300)
        assert time.monotonic() - sent < 300
        rest = server.stderr.read()
        assert "building" not in rest  # told to stop before it built: nothing built
        if when == "importing":  # ended in the import: the app never started
            assert "startup" not in rest
        else:  # stopped as uvicorn stops a server, not killed
            assert "Application shutdown complete" in rest
    finally:
        server.kill()
        server.wait(10)
