"""The bounded run the CLI tests use still stops a command that hangs, whichever way it hangs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.processes import Watch, read_until, run_bounded


def test_a_command_that_spins_is_stopped_at_its_cpu_budget() -> None:
    with pytest.raises(pytest.fail.Exception, match="s of CPU \\(limit 1 s\\)"):
        run_bounded([sys.executable, "-c", "while True: pass"], cpu_s=1, idle_s=60)


def test_a_command_that_waits_for_ever_is_stopped_once_it_uses_no_cpu() -> None:
    with pytest.raises(pytest.fail.Exception, match="used no CPU for 3 s"):
        run_bounded([sys.executable, "-c", "import time; time.sleep(3600)"], idle_s=3)


def test_a_command_that_exits_leaving_its_output_held_open_is_stopped() -> None:
    """What `bank validate` did: a process its code started held the pipes, so a caller waited for ever."""
    leaves = "import os, time\nif os.fork() == 0:\n    time.sleep(30)\n"
    with pytest.raises(pytest.fail.Exception, match="used no CPU for 3 s"):
        run_bounded([sys.executable, "-c", leaves], idle_s=3)


def test_a_command_that_ends_returns_its_output_and_reads_its_input() -> None:
    done = run_bounded([sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"], input="ok", text=True)
    assert (done.returncode, done.stdout) == (0, "OK\n")


def test_reading_up_to_a_line_leaves_the_rest_and_stops_at_a_process_that_hangs_first() -> None:
    says = "import sys, time\nprint('ready', flush=True)\nprint(sys.stdin.readline().upper(), flush=True)\n"
    proc = subprocess.Popen([sys.executable, "-c", says], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert read_until(proc, "ready", Watch(proc.pid)) == "ready"
    assert proc.communicate("later\n", timeout=60)[0] == "\nLATER\n\n"
    silent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"], stdout=subprocess.PIPE)
    try:
        with pytest.raises(pytest.fail.Exception, match="no 'ready' yet and the process used no CPU for 3 s"):
            read_until(silent, "ready", Watch(silent.pid, idle_s=3))
    finally:
        silent.kill()
        silent.wait()
