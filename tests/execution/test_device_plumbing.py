"""``device="cpu"|"cuda"|"auto"`` for DPVI and the ABCDP random-feature distances (issue 14).

CI has no GPU, so these tests pin the CPU contract: ``device="cpu"`` and ``"auto"`` (on a machine
without CUDA) are bit-identical to the default, ``"cuda"`` without a GPU is refused with
DeviceUnavailableError before anything is charged, and the torch path that a CUDA device uses
computes the same random-feature embedding as the numba kernels (run here on the CPU).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpinfer.distances import RFFMMD, rff_torch
from dpinfer.errors import DeviceUnavailableError
from dpinfer.models.data_spec import DataSpec
from dpinfer.privacy import Ledger, PrivacyRNG
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import DPVI, LogisticRegression, PrivacyOptions, TrainingOptions

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a CPU-only machine")
on_cpu_machine = pytest.mark.skipif(torch.cuda.is_available(), reason="'auto' is the GPU here")


def _sims(seed: int = 0, B: int = 6, M: int = 200, d: int = 2) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(B, M, d))


# ---------------------------------------------------------------------------------------------
# RFF-MMD
# ---------------------------------------------------------------------------------------------
@on_cpu_machine
def test_rff_cpu_and_auto_are_the_default_path_bit_for_bit() -> None:
    obs, sims = _sims(1, B=1)[0], _sims(2)
    base = RFFMMD(0.8, 100, seed=3)
    ref = base.batch(base.prepare(obs), sims)
    for device in ("cpu", "auto", "CPU"):
        dist = RFFMMD(0.8, 100, seed=3, device=device)
        assert dist.device == "cpu" and dist.backend == "numba"
        assert np.array_equal(dist.batch(dist.prepare(obs), sims), ref)
        assert dist.config() == base.config()  # no device key on the CPU path


def test_rff_torch_path_matches_the_numba_kernels() -> None:
    obs, sims = _sims(1, B=1)[0], _sims(2)
    numba_d = RFFMMD(0.8, 100, seed=3)
    torch_d = RFFMMD(0.8, 100, seed=3, backend="torch")
    ref = numba_d.batch(numba_d.prepare(obs), sims)
    got = torch_d.batch(torch_d.prepare(obs), sims)
    # float64 sums of 200 unit-size terms: rounding ~1e-14; distances are O(0.1)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    # chunked over data sets (a small device buffer) gives the same sums
    W = numba_d.frequencies(2)
    sums = rff_torch.rff_sums_torch(sims, W, np.dtype(np.float64), "cpu", max_elements=2 * 200 * 50)
    np.testing.assert_allclose(sums, numba_d.feature_sums(sims, W), rtol=0, atol=1e-10)
    # float32 embeddings agree to single precision
    t32 = RFFMMD(0.8, 100, seed=3, backend="torch", dtype="float32")
    np.testing.assert_allclose(t32.batch(t32.prepare(obs), sims), ref, atol=1e-5)


def test_rff_torch_agreement_catches_a_broken_embedding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Known-broken variant: the sin half computed as cos (a feature map with ||φ|| != 1)."""
    real_sin = torch.sin
    obs, sims = _sims(1, B=1)[0], _sims(2)
    numba_d = RFFMMD(0.8, 100, seed=3)
    ref = numba_d.batch(numba_d.prepare(obs), sims)
    monkeypatch.setattr(torch, "sin", torch.cos)
    try:
        broken = RFFMMD(0.8, 100, seed=3, backend="torch")
        bad = broken.batch(broken.prepare(obs), sims)
    finally:
        monkeypatch.setattr(torch, "sin", real_sin)
    assert np.abs(bad - ref).max() > 1e-3


@no_cuda
def test_rff_cuda_without_gpu_is_refused_with_a_clear_error() -> None:
    with pytest.raises(DeviceUnavailableError, match="device='cpu' or device='auto'"):
        RFFMMD(0.8, 100, device="cuda")
    with pytest.raises(DeviceUnavailableError, match="unknown device"):
        RFFMMD(0.8, 100, device="tpu!")


# ---------------------------------------------------------------------------------------------
# DPVI
# ---------------------------------------------------------------------------------------------
def _data(n: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ np.array([1.0, -0.5])))).astype(float)
    return X, y


def _fit(device="cpu"):
    X, y = _data()
    return DPVI(LogisticRegression(2)).fit(
        X,
        y,
        delta=1e-5,
        privacy=PrivacyOptions(noise_multiplier=1.0, clip=1.0, accountant="rdp", neighbouring="add-remove"),
        training=TrainingOptions(steps=40, sampling_rate=0.1, device=device),
        seed=0,
        context=ReleaseContext(privacy_rng=PrivacyRNG.insecure_deterministic(7)),
        data=DataSpec(intercept=False),
    )


@on_cpu_machine
def test_dpvi_cpu_and_auto_are_bit_identical_to_the_default() -> None:
    with pytest.warns(Warning):
        ref = _fit()
    for device in ("cpu", "auto"):
        with pytest.warns(Warning):
            got = _fit(device=device)
        assert np.array_equal(got.params, ref.params)
        assert "device" not in got.config
    # the noise really enters (a different privacy stream gives different parameters)
    X, y = _data()
    with pytest.warns(Warning):
        other = DPVI(LogisticRegression(2)).fit(
            X,
            y,
            delta=1e-5,
            privacy=PrivacyOptions(
                noise_multiplier=1.0, clip=1.0, accountant="rdp", neighbouring="add-remove",
            ),
            training=TrainingOptions(steps=40, sampling_rate=0.1),
            seed=0,
            context=ReleaseContext(privacy_rng=PrivacyRNG.insecure_deterministic(8)),
            data=DataSpec(intercept=False),
        )
    assert not np.array_equal(other.params, ref.params)


@no_cuda
def test_dpvi_cuda_without_gpu_is_refused_before_any_charge(tmp_path) -> None:
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=10.0, delta=1e-4, accountant="rdp")
    X, y = _data()
    with pytest.raises(DeviceUnavailableError, match="no CUDA GPU"):
        DPVI(LogisticRegression(2)).fit(
            X,
            y,
            delta=1e-5,
            privacy=PrivacyOptions(
                noise_multiplier=1.0, clip=1.0, accountant="rdp", neighbouring="add-remove",
            ),
            training=TrainingOptions(steps=5, sampling_rate=0.1, device="cuda"),
            context=ReleaseContext(ledger=ledger, dataset="d"), data=DataSpec(intercept=False),
        )
    assert ledger.history("d") == []
