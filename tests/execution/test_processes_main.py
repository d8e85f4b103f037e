"""The processes backend from ``python -c`` and stdin (a model defined in ``__main__``), and
errors that name their real cause (issue 12 item 5)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from dpinfer.errors import BackendWarning
from dpinfer.execution import BackendError, ProcessBackend, SerialBackend, get_backend
from dpinfer.execution import auto as auto_mod

SRC = str(Path(__file__).resolve().parents[2] / "src")
SCRIPT = """
from dpinfer.inference import smc_abc
from dpinfer.models.shipped.gaussian_mean import GaussianMean

class MyModel(GaussianMean):  # defined in __main__: unreachable by reference from a worker
    def simulate_confidential(self, theta, seed=None):
        return super().simulate_confidential(theta, seed)

res = smc_abc(MyModel(n=30), [0.4], n_particles=100, batch_size=100, schedule=[1.0, 0.5],
              backend="processes", n_workers=2, seed=1)
print("MEAN", float(res.mean()[0]), res.settings["backend"])
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.mark.slow
def test_processes_backend_runs_a_main_model_from_python_c_and_stdin(tmp_path):
    runs = [
        subprocess.Popen([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=_env(), text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE),
        subprocess.Popen([sys.executable, "-"], cwd=tmp_path, env=_env(), text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE),
    ]
    outs = [runs[0].communicate(timeout=120), runs[1].communicate(SCRIPT, timeout=120)]
    means = []
    for proc, (out, err) in zip(runs, outs, strict=True):
        assert proc.returncode == 0, err[-2000:]
        line = [ln for ln in out.splitlines() if ln.startswith("MEAN")][0]
        means.append(float(line.split()[1]))
        assert line.endswith("processes")
    assert means[0] == means[1]  # same seed, same result


def _raise_value_error(payload):
    raise ValueError(f"simulator failed on batch {payload}")


def test_worker_errors_name_their_cause():
    with ProcessBackend(1) as be, pytest.raises(ValueError, match="simulator failed on batch 3"):
        be.map(_raise_value_error, [3])
    unpicklable = (i for i in range(3))  # a generator cannot be pickled: refused in the parent
    with ProcessBackend(1) as be, pytest.raises(BackendError, match="cannot send generator"):
        be.map(repr, [unpicklable])


def test_no_cloudpickle_and_unimportable_main_falls_back_to_serial(monkeypatch):
    monkeypatch.setattr(auto_mod, "cloudpickle_module", lambda: None)
    monkeypatch.setattr(auto_mod, "main_is_importable", lambda: False)
    with pytest.warns(BackendWarning, match="cloudpickle is not installed"):
        be = get_backend("processes")
    assert isinstance(be, SerialBackend)
    monkeypatch.setattr(auto_mod, "main_is_importable", lambda: True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert isinstance(get_backend("processes"), ProcessBackend)


def test_lost_workers_message_tells_start_up_from_memory():
    from dpinfer.execution.processes import _lost_message

    assert "start-up" in _lost_message(4, 2, 0) and "memory" not in _lost_message(4, 2, 0)
    assert "out of memory" in _lost_message(4, 2, 3)


GUARDLESS = """
import numpy as np
from dpinfer.inference import smc_abc
from dpinfer.models.shipped.gaussian_mean import GaussianMean

print("SCRIPT BODY RAN")  # a plain script, no main guard: workers must not run this again
res = smc_abc(GaussianMean(n=30), [0.4], n_particles=100, batch_size=50, schedule=[1.0, 0.5],
              backend="processes", n_workers=2, seed=1)
print("MEAN", float(res.mean()[0]))
"""


def test_a_plain_script_without_a_main_guard_runs_on_the_process_backend(tmp_path):
    """The README's "Your own model" case saved as a .py file: spawned/forkserver workers used to
    re-run the script (its output printed once per worker, then WorkerLostError)."""
    script = tmp_path / "analysis.py"
    script.write_text(GUARDLESS)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(), text=True,
                          capture_output=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("SCRIPT BODY RAN") == 1 and proc.stdout.count("MEAN") == 1


SLOW_FIRST_BATCH = """
import os, time
from dpinfer.inference import smc_abc
from dpinfer.models.shipped.gaussian_mean import GaussianMean

PARENT = os.getpid()
print("SCRIPT BODY RAN")  # no main guard


class Loaded(GaussianMean):
    # a machine under load: every batch simulated in this (parent) process is slow, so
    # backend="auto" crosses its 0.25 s line and starts worker processes
    def simulate_confidential(self, theta, seed=None):
        if os.getpid() == PARENT:
            time.sleep(0.3)
        return super().simulate_confidential(theta, seed)


res = smc_abc(Loaded(n=30), [0.4], n_particles=100, batch_size=50, schedule=[1.0, 0.5],
              backend=BACKEND, n_workers=2, seed=1)
print("MEAN", repr(float(res.mean()[0])), res.settings["backend"])
"""


@pytest.mark.slow  # ~10 s each; the plain guardless script stays in the fast suite
@pytest.mark.parametrize("backend", ["auto", "processes"])
def test_a_guardless_script_under_load_gives_the_serial_answer(tmp_path, backend):
    """Issue 25: under load the automatic backend switches to worker processes; a plain script
    without a main guard must then neither re-run in the workers nor change the answer."""
    from dpinfer.inference import smc_abc
    from dpinfer.models.shipped.gaussian_mean import GaussianMean

    script = tmp_path / "analysis.py"
    script.write_text(SLOW_FIRST_BATCH.replace("BACKEND", repr(backend)))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(), text=True,
                          capture_output=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("SCRIPT BODY RAN") == 1
    [line] = [ln for ln in proc.stdout.splitlines() if ln.startswith("MEAN")]
    _, mean, used = line.split()
    assert used.endswith("processes")  # the load really switched "auto" to worker processes
    serial = smc_abc(GaussianMean(n=30), [0.4], n_particles=100, batch_size=50, schedule=[1.0, 0.5],
                     backend="serial", seed=1)
    assert float(mean) == float(serial.mean()[0])
