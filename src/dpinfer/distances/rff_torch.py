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

torch is imported only when this path is used, so the default CPU (numba) path does not load it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["resolve_distance_device", "rff_sums_torch"]


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
    Wt = torch.as_tensor(np.ascontiguousarray(W), dtype=tdtype).to(dev)
    out = np.empty((B, 2 * J), dtype=np.float64)
    step = max(1, int(max_elements) // max(M * J, 1))
    with torch.no_grad():
        for b0 in range(0, B, step):
            Y = torch.as_tensor(np.ascontiguousarray(sims[b0 : b0 + step]), dtype=tdtype).to(dev)
            P = torch.matmul(Y, Wt.T)  # (chunk, M, J)
            sums = torch.cat(
                [torch.cos(P).sum(dim=1, dtype=torch.float64), torch.sin(P).sum(dim=1, dtype=torch.float64)],
                dim=1,
            )
            out[b0 : b0 + step] = sums.cpu().numpy()
    return out
