"""Ctrl-C on the processes backend: the parent stops at once, workers exit cleanly, nothing leaks.

A Ctrl-C in a terminal sends SIGINT to the whole process group. Before the fix, workers turned it
into a task result and went on with the queued batches (the CLI took ~50 s to exit), and workers
killed in a numba kernel left named semaphores behind (resource_tracker's "leaked semaphore"
warning). The script below runs numba parallel kernels in the workers, so both failure modes are
exercised.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

SCRIPT = textwrap.dedent(
    """
    import sys, time
    import numba, numpy as np
    from dpinfer.execution.processes import ProcessBackend

    @numba.njit(parallel=True)
    def kernel(n):
        s = 0.0
        for i in numba.prange(n):
            s += np.sin(i)
        return s

    def task(x):
        print("task", flush=True)
        t = time.time()
        while time.time() - t < float(sys.argv[1]):
            kernel(10_000)
        return x

    if __name__ == "__main__":
        be = ProcessBackend(n_workers=2)
        try:
            be.map(task, list(range(40)))
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            sys.exit(130)
        finally:
            be.close()
    """
)


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")
def test_ctrl_c_stops_workers_without_leaks(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal job would have
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    assert proc.stdout.read(4) == "task"  # a worker is inside a task
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)  # 40 tasks of 3 s on 2 workers would take 60 s
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the processes backend did not stop after Ctrl-C")
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert "leaked" not in err, err
    assert "Traceback" not in err, err
