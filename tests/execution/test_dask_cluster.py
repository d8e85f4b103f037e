"""Dask across hosts, as users run it: ``backend="tcp://scheduler:port"`` against a
``distributed.LocalCluster`` of worker *processes*, with the budget in a PostgreSQL ledger charged
once, by the client, before anything is released; the workers only simulate from the public
release and cannot be handed the ledger (it refuses to be pickled, so neither it nor its
password can travel). The cluster's SMC-ABC result equals the serial one bit for bit.
"""

from __future__ import annotations

import os
import pickle
import socket

import numpy as np
import pytest

from dpinfer.inference.smc.schedule import FixedSchedule
from dpinfer.inference.smc.smc_abc import smc_abc
from dpinfer.models.shipped.gaussian_mean import GaussianMean
from dpinfer.privacy import Ledger, PrivacyRNG
from dpinfer.privacy.context import ReleaseContext

KW = dict(n_particles=300, batch_size=150, seed=5, schedule=FixedSchedule((1.0, 0.5, 0.3)))


@pytest.mark.slow
def test_a_tcp_scheduler_with_worker_processes_and_a_shared_ledger(pg_server):
    distributed = pytest.importorskip("distributed")
    url = pg_server.new_database()
    ledger = Ledger.create(url)
    ledger.register("patients", epsilon=1.0, accountant="pure")
    model = GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5, prior_sd=1.0, noise_sd=1.0)
    confidential = model.statistic(np.random.default_rng(0).normal(1.0, 1.0, 50))
    # the client: charge, then release (the only step that touches the data or the budget)
    s_dp = model.mechanism.release(confidential,
                                   context=ReleaseContext(ledger=ledger, dataset="patients",
                                                          privacy_rng=PrivacyRNG()),
                                   label="mean").value
    with pytest.raises(TypeError, match="charge releases on the client"):
        pickle.dumps(ledger)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://")
        on_cluster = smc_abc(model, s_dp, backend=address, **KW)
        with distributed.Client(address) as client:
            worker_pids = set(client.run(os.getpid).values())
    assert os.getpid() not in worker_pids and len(worker_pids) == 2
    serial = smc_abc(model, s_dp, backend="serial", **KW)
    assert np.array_equal(on_cluster.particles, serial.particles)
    assert np.array_equal(on_cluster.weights, serial.weights)
    [charge] = Ledger(url).history("patients")  # charged once, by this process, on this host
    assert charge["pid"] == os.getpid() and charge["host"] == socket.gethostname()
    assert charge["status"] == "released" and Ledger(url).spent("patients") == pytest.approx(0.5)


def test_a_scheduler_without_workers_is_refused_instead_of_hanging():
    distributed = pytest.importorskip("distributed")
    from dpinfer.execution import BackendError
    from dpinfer.execution.dask_backend import DaskBackend

    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        with pytest.raises(BackendError, match="no Dask worker is connected.*dask worker ADDRESS"):
            DaskBackend(cluster.scheduler_address, worker_timeout=1.0)


def test_auto_batch_size_follows_the_workers_and_is_recorded():
    from dpinfer.inference.smc.smc_abc import auto_batch_size, smc_abc
    from dpinfer.models.shipped.gaussian_mean import GaussianMean

    assert auto_batch_size(300, 2) == 75 and auto_batch_size(300, 100) == 25
    assert auto_batch_size(10**6, 1) == 1000
    model = GaussianMean(n=30)
    kw = dict(n_particles=100, schedule=[1.0, 0.5], seed=3)
    auto = smc_abc(model, [0.4], backend="serial", batch_size="auto", **kw)
    assert auto.settings["batch_size"] == 50
    again = smc_abc(model, [0.4], backend="serial", batch_size=auto.settings["batch_size"], **kw)
    assert np.array_equal(auto.particles, again.particles)
    with pytest.raises(Exception, match="positive integer or 'auto'"):
        smc_abc(model, [0.4], backend="serial", batch_size="big", **kw)
