"""Run a Python child until it signals a checkpoint, then SIGKILL it (crash tests of resumable runs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def kill_at_flag(code: str, args: list[str], flag: Path, timeout: float) -> None:
    """Run ``python -c code *args`` with this process's ``sys.path``; once it creates ``flag``,
    kill it with SIGKILL. Fails if the child exits first or ``timeout`` seconds pass."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-c", code, *args], env=env)
    try:
        deadline = time.monotonic() + timeout
        while not flag.exists():
            assert child.poll() is None and time.monotonic() < deadline, "the run ended before it was killed"
            time.sleep(0.05)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
