"""Random-Fourier-feature sums in torch: the RFF-MMD embedding on a CUDA device (or the CPU).

For data sets Y (B, M, d) and frequencies W (J, d) :func:`rff_sums_torch` returns, per data set,
``[Σ_i cos(W y_i), Σ_i sin(W y_i)]`` (B, 2J), the same quantity as the numba kernels of
:mod:`dpinfer.distances.rff_kernels`: the projections ``Y Wᵀ`` are one batched matrix product, the
trigonometry runs in the embedding's precision and the sums over the points accumulate in
float64. Data sets are processed in chunks of at most ``max_elements`` projections so that the
(chunk, M, J) buffer stays bounded on the device. The result comes back to the CPU as float64
numpy; everything random (W, the simulations) stays on the CPU and public, so the device changes
only rounding, never the sensitivity Δρ = 2/N (``||φ(x)|| = 1`` holds in any precision up to
rounding; :class:`~dpinfer.distances.mmd.RFFMMD`).

The projections are reduced modulo 2π (clamped to ±2⁴⁷ in float64, ±2²⁰ in float32, then a
two-part Cody-Waite reduction to |r| <= π) before ``torch.cos``/``torch.sin``: the library trig
functions (CUDA's, SLEEF's) take a slower argument-reduction path for large arguments, so without
this the featurisation of confidential data would run longer when one record is extreme (a timing
channel). The reduction is exact up to a few ulp of the projection, its own rounding error, and
leaves projections below π in magnitude unchanged.

torch is imported only when this path is used, so the default CPU (numba) path does not load it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["resolve_distance_device", "rff_sums_torch"]

#: 2π split so that k·hi is exact for |k| < 2^20 (float64: 33-bit hi) or 2^12 (float32: 12-bit hi).
_TWO_PI = {
    "float64": (math.tau, 6.2831853069365025, 2.430840202602477e-10, 2.0**47),
    "float32": (math.tau, 6.28125, 1.935307179586477e-3, 2.0**20),
}


def resolve_distance_device(device: Any) -> str:
    """``"cpu"`` or the CUDA device name (``"cuda:0"``) for ``"cpu"``, ``"cuda"``, ``"cuda:<i>"``,
    ``"auto"`` or a torch.device (:func:`dpinfer.execution.device.resolve_device`, which raises
    :class:`~dpinfer.errors.DeviceUnavailableError` for an unavailable device). ``"cpu"`` is
    answered without importing torch."""
    if device is None or (isinstance(device, str) and device.strip().lower() == "cpu"):
        return "cpu"
    from ..execution.device import resolve_device

    dev = resolve_device(device)
    return "cpu" if dev.type == "cpu" else f"cuda:{dev.index}"


def rff_sums_torch(
    sims: np.ndarray, W: np.ndarray, dtype: np.dtype, device: str, max_elements: int = 1 << 24
) -> np.ndarray:
    """``[Σ_i cos(W y_i), Σ_i sin(W y_i)]`` per data set, shape (B, 2J), float64 (module docstring)."""
    import torch

    B, M, _ = sims.shape
    J = W.shape[0]
    tdtype = torch.float32 if np.dtype(dtype) == np.dtype(np.float32) else torch.float64
    dev = torch.device(device)
    two_pi = _TWO_PI["float32" if tdtype == torch.float32 else "float64"]
    Wt = torch.as_tensor(np.ascontiguousarray(W), dtype=tdtype).to(dev)
    out = np.empty((B, 2 * J), dtype=np.float64)
    step = max(1, int(max_elements) // max(M * J, 1))
    with torch.no_grad():
        for b0 in range(0, B, step):
            Y = torch.as_tensor(np.ascontiguousarray(sims[b0 : b0 + step]), dtype=tdtype).to(dev)
            P = torch.matmul(Y, Wt.T)  # (chunk, M, J)
            _reduce_two_pi(P, two_pi)
            sums = torch.cat(
                [torch.cos(P).sum(dim=1, dtype=torch.float64), torch.sin(P).sum(dim=1, dtype=torch.float64)],
                dim=1,
            )
            out[b0 : b0 + step] = sums.cpu().numpy()
    return out


def _reduce_two_pi(P: Any, two_pi: tuple[float, float, float, float]) -> None:
    """In place: P <- P - 2π·round(P/2π) after clamping to ±limit (one path for every magnitude)."""
    import torch

    full, hi, lo, limit = two_pi
    P.clamp_(-limit, limit)
    k = torch.round(P * (1.0 / full))
    P.sub_(k * hi).sub_(k * lo)
