"""The ``device="cuda"`` paths on a real GPU (issue 27, item 4): skipped on a machine without one.

CI has no GPU, so these run only where torch sees CUDA (``pytest tests/execution/test_cuda.py`` on
a GPU machine; ``benchmarks/gpu.py`` runs them and times the same paths). Each checks the CUDA
result against the CPU path:

* RFF-MMD: the same public frequencies and simulations, so the distances agree to rounding
  (float64 to 1e-10, float32 to 1e-5) with the numba kernels;
* DPVI: the minibatches and the Gaussian noise are drawn on the CPU by the privacy core and moved
  to the device, so one privacy stream and one seed give the CPU's parameters up to the rounding
  of the per-example sums (float64);
* SPPE / SPLE: training on the GPU draws other initial weights and minibatches than on the CPU, so
  the posteriors agree in distribution only: both are checked against the exact private posterior
  of the Gaussian mean (a quadrature reference), with tolerances of a short default run.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from dpinfer.distances import RFFMMD
from dpinfer.inference.neural import SPLE, SPPE, NeuralRunOptions
from dpinfer.models import GaussianMean
from dpinfer.models.data_spec import DataSpec
from dpinfer.privacy import PrivacyRNG
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import DPVI, LogisticRegression, PrivacyOptions, TrainingOptions

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _sims(seed: int, B: int, M: int, d: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(B, M, d))


@pytest.mark.parametrize("dtype, tol", [("float64", 1e-10), ("float32", 1e-5)])
def test_rff_mmd_on_the_gpu_matches_the_numba_kernels(dtype: str, tol: float) -> None:
    obs, sims = _sims(1, 1, 500, 3)[0], _sims(2, 16, 500, 3)
    ref_d = RFFMMD(0.8, 200, seed=3)
    ref = ref_d.batch(ref_d.prepare(obs), sims)
    gpu = RFFMMD(0.8, 200, seed=3, device="cuda", dtype=dtype)
    assert gpu.device.startswith("cuda")
    got = gpu.batch(gpu.prepare(obs), sims)
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol)
    # an extreme record: the range reduction runs on the device and the distances stay finite.
    # In float32 the phase of a projection near 1e9 is lost (its ulp is 64), so only the data set
    # holding it may differ, and by at most one record's share of the embedding, Δρ = 2/N.
    sims[0, 0, 0] = 1e9
    got = gpu.batch(gpu.prepare(obs), sims)
    ref = ref_d.batch(ref_d.prepare(obs), sims)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got[1:], ref[1:], rtol=0, atol=tol)
    assert abs(got[0] - ref[0]) <= (tol if dtype == "float64" else 2 / sims.shape[1])


def _dpvi(device: str, dtype: str = "float64") -> np.ndarray:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5))
    y = (rng.random(2000) < 1 / (1 + np.exp(-X @ np.linspace(-1, 1, 5)))).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = DPVI(LogisticRegression(5)).fit(
            X, y, delta=1e-5,
            privacy=PrivacyOptions(noise_multiplier=1.0, clip=2.0, accountant="rdp",
                                   neighbouring="add-remove"),
            training=TrainingOptions(steps=200, sampling_rate=0.05, device=device, dtype=dtype),
            seed=0, context=ReleaseContext(privacy_rng=PrivacyRNG.insecure_deterministic(7)),
            data=DataSpec(intercept=False),
        )  # fmt: skip
    return np.asarray(res.params, dtype=np.float64)


def test_dpvi_on_the_gpu_gives_the_cpu_parameters_for_one_privacy_stream() -> None:
    cpu, gpu = _dpvi("cpu"), _dpvi("cuda")
    np.testing.assert_allclose(gpu, cpu, rtol=1e-7, atol=1e-9)
    # float32: the same on both devices up to single-precision rounding (float32 against float64
    # is another trajectory, not a device question)
    np.testing.assert_allclose(_dpvi("cuda", "float32"), _dpvi("cpu", "float32"), rtol=0, atol=1e-3)


@pytest.mark.parametrize("klass", [SPPE, SPLE])
def test_neural_posteriors_trained_on_the_gpu_match_the_exact_posterior(klass) -> None:
    model = GaussianMean()
    exact = model.exact_posterior([0.5])
    out = {}
    for device in ("cpu", "cuda"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post = klass(model, simulations=2000, seed=0, run=NeuralRunOptions(device=device)).fit([0.5])
        assert post.device.type == device
        d = post.sample(4000, seed=1)[:, 0]
        out[device] = d
        # a short default run: within 0.25 exact sd of the mean, sd within 20%
        assert abs(d.mean() - exact.mean) < 0.25 * exact.sd, (device, d.mean(), exact.mean)
        assert 0.8 < d.std() / exact.sd < 1.2, (device, d.std(), exact.sd)
    # the two devices' posteriors agree with each other as well as each with the reference
    assert abs(out["cpu"].mean() - out["cuda"].mean()) < 0.3 * exact.sd
