"""Execution backends: submission order, identical results everywhere, re-run of dead workers."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from dpinfer.execution import (
    BackendError,
    ProcessBackend,
    SerialBackend,
    WorkerLostError,
    batch_seeds,
    get_backend,
)
from dpinfer.inference.smc.smc_abc import smc_abc
from dpinfer.models.shipped.gaussian_mean import GaussianMean


def _draw(payload):
    """A batch: sleep longer for early batches (so completion order != submission order)."""
    index, seed, delay = payload
    time.sleep(delay)
    return index, np.random.default_rng(seed).standard_normal(3)


def _die_once(payload):
    """Kill this worker process the first time any worker runs it (marker file, O_EXCL)."""
    marker, index, seed = payload
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return index, np.random.default_rng(seed).random()
    os.close(fd)
    os._exit(13)


def _always_die(payload):
    os._exit(13)


def _raise(payload):
    raise ValueError("boom in batch")


class DyingGaussianMean(GaussianMean):
    """GaussianMean whose simulator kills its worker process once (tests only)."""

    def __init__(self, marker: str, **kw):
        super().__init__(**kw)
        self.marker = marker
        self.parent = os.getpid()

    def simulate(self, theta, seed=None, u=None):
        if os.getpid() != self.parent and not os.path.exists(self.marker):
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                os._exit(13)
        return super().simulate(theta, seed, u)


def test_batch_seeds_are_addressable_and_independent():
    a = batch_seeds(7, (0, 3), 5)
    b = batch_seeds(7, (0, 3), 2, start=3)
    assert [s.generate_state(2).tolist() for s in a[3:]] == [s.generate_state(2).tolist() for s in b]
    states = {tuple(s.generate_state(4)) for s in a + batch_seeds(7, (0, 4), 5)}
    assert len(states) == 10
    # identical to SeedSequence.spawn's children
    root = np.random.SeedSequence(7)
    spawned = root.spawn(3)
    direct = batch_seeds(root, (), 3)
    assert [s.generate_state(2).tolist() for s in spawned] == [s.generate_state(2).tolist() for s in direct]


def test_results_in_submission_order():
    payloads = [(i, np.random.SeedSequence(1, spawn_key=(i,)), 0.3 if i == 0 else 0.0) for i in range(4)]
    ref = SerialBackend().map(_draw, payloads)
    with ProcessBackend(2) as be:
        out = be.map(_draw, payloads)
    assert [r[0] for r in out] == [0, 1, 2, 3]
    for (_, x), (_, y) in zip(ref, out, strict=True):
        assert np.array_equal(x, y)


def test_dead_worker_batch_is_rerun(tmp_path):
    marker = str(tmp_path / "died")
    payloads = [(marker, i, np.random.SeedSequence(3, spawn_key=(i,))) for i in range(6)]
    with ProcessBackend(2) as be:
        out = be.map(_die_once, payloads)
        assert be.restarts >= 1
    assert os.path.exists(marker)
    expected = [
        (i, np.random.default_rng(np.random.SeedSequence(3, spawn_key=(i,))).random()) for i in range(6)
    ]
    assert out == expected


def test_always_dying_worker_gives_clear_error():
    with ProcessBackend(1, max_restarts=1) as be, pytest.raises(WorkerLostError, match="died"):
        be.map(_always_die, [0, 1])


def test_task_exception_propagates():
    with ProcessBackend(1) as be, pytest.raises(ValueError, match="boom"):
        be.map(_raise, [0])


def test_unknown_backend_and_unreachable_scheduler():
    with pytest.raises(BackendError, match="unknown backend"):
        get_backend("gpu-cluster")
    pytest.importorskip("distributed")
    start = time.perf_counter()
    with pytest.raises(BackendError, match="could not reach"):
        get_backend_address = "tcp://127.0.0.1:9"  # discard port: nothing listens
        from dpinfer.execution.dask_backend import DaskBackend

        DaskBackend(get_backend_address, timeout=1.0)
    assert time.perf_counter() - start < 30


SMALL = dict(n_particles=300, schedule=[1.0, 0.3, 0.1], batch_size=200)


def _smc(backend, seed=5, model=None):
    model = model or GaussianMean(n=30, clamp=(-2, 2), epsilon=1.0)
    return smc_abc(model, [0.7], backend=backend, seed=seed, **SMALL)


def test_smc_abc_bit_identical_across_backends():
    ref = _smc("serial")
    for be in (ProcessBackend(1), ProcessBackend(2)):
        with be:
            res = _smc(be)
        assert np.array_equal(ref.particles, res.particles)
        assert np.array_equal(ref.weights, res.weights)
        assert ref.n_simulations == res.n_simulations
    other = _smc("serial", seed=6)
    assert not np.array_equal(ref.particles, other.particles)


def test_smc_abc_dask_bit_identical():
    pytest.importorskip("distributed")
    from dpinfer.execution.dask_backend import DaskBackend

    ref = _smc("serial")
    with DaskBackend(None, n_workers=2, processes=False) as be:
        res = _smc(be)
    assert np.array_equal(ref.particles, res.particles)
    assert np.array_equal(ref.weights, res.weights)


def test_smc_abc_survives_a_killed_worker(tmp_path):
    ref = _smc("serial")
    model = DyingGaussianMean(str(tmp_path / "died"), n=30, clamp=(-2, 2), epsilon=1.0)
    with ProcessBackend(2) as be:
        res = _smc(be, model=model)
        assert be.restarts >= 1
    assert np.array_equal(ref.particles, res.particles)
    assert np.array_equal(ref.weights, res.weights)


@pytest.mark.slow
def test_dask_process_cluster_reruns_batch_of_killed_worker(tmp_path):
    pytest.importorskip("distributed")
    from dpinfer.execution.dask_backend import DaskBackend

    marker = str(tmp_path / "died")
    payloads = [(marker, i, np.random.SeedSequence(3, spawn_key=(i,))) for i in range(6)]
    with DaskBackend(None, n_workers=2, processes=True) as be:
        out = be.map(_die_once, payloads)
    assert os.path.exists(marker)
    expected = [
        (i, np.random.default_rng(np.random.SeedSequence(3, spawn_key=(i,))).random()) for i in range(6)
    ]
    assert out == expected
