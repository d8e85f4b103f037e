"""The Gaussian sum query of one DP-SGD step: clip every row to L2 norm C, sum, add N(0, (σC)² I).

For a batch of per-example gradients g_i (the rows of a (B, P) tensor) one step releases

    g̃ = Σ_i clip(g_i, C) + N(0, (σ C)² I),     clip(g, C) = g · min(1, C / ||g||₂)

(Abadi et al. 2016, "Deep learning with differential privacy", Algorithm 1; Jälkö, Dikmen &
Honkela 2017, "Differentially private variational inference for non-conjugate models",
Algorithm 1). Every row has norm at most C after clipping, so one record moves the sum by at most
C under add-remove and 2C under replace-one; with a Poisson(q) batch (:mod:`dpinfer.privacy.subsampling`)
T such steps are a :class:`~dpinfer.privacy.PoissonSubsampledGaussianEvent` (q, σ, T), which the
caller charges once, before the first step, with :meth:`~dpinfer.privacy.context.ReleaseContext.release`.
The functions here draw inside that release (:meth:`~dpinfer.privacy.context.ReleaseContext.draw`).

With the private clip count of adaptive clipping (Andrew, Thakkar, McMahan & Ramaswamy 2021,
"Differentially private learning with adaptive clipping", Algorithm 1) the step also releases the
centred count Σ_i (1[‖g_i‖ ≤ C] − ½) + N(0, σ_b²) (:func:`noisy_centred_count`); the pair is one
Gaussian sum query when the gradient multiplier is σ_Δ = (σ⁻² − (2σ_b)⁻²)^(−1/2) (Andrew et al.
2021, Theorem 1; :func:`dpinfer.release.dpvi.optim.gradient_noise_multiplier`).

Non-finite rows
---------------
A row with a NaN or ±inf entry (a record whose gradient overflows) becomes a zero row *inside* the
clipped contribution: one record must not decide whether a step completes (release-or-error
would itself be a function of that record). A zero row lies in the clip ball, so the sensitivity
is unchanged.

Floating-point position (stated as Opacus's secure mode states it)
-----------------------------------------------------------------
The noise is *not* integer noise on a grid. Each coordinate is the sum of four inverse-CDF normals
from 52-bit CSPRNG uniforms divided by two (Holohan & Braghin 2021, "Secure random sampling in
differential privacy", the construction of Opacus's ``secure_mode``; :meth:`PrivacyRNG.normal`),
multiplied by σC and added to the clipped sum in the sum's float type (float64 or float32). The
Gaussian-mechanism proof is for real arithmetic and the transcript is a floating-point rounding of
it, so the attack of Mironov (2012, "On significance of the least significant bits for
differential privacy") is not excluded by construction. Two things limit it: the noise is the sum
of four independent draws (its floating-point image has no systematic holes at the scale of C),
and the gradients are not values a user is shown — a DPVI fit returns parameters, which are
post-processing of the whole transcript (a ``callback`` that records the trajectory exposes the
transcript and inherits this caveat). Single statistics released by :func:`dpinfer.privacy.grid.laplace`
/ :func:`dpinfer.privacy.grid.gaussian` are exact (grid + integer noise).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ...errors import InvalidPrivacyParameterError
from ..context import ReleaseContext

Tensor = torch.Tensor


def finite_rows(grads: Tensor) -> tuple[Tensor, int]:
    """``grads`` with every row containing NaN or ±inf replaced by zeros, and how many were.

    The count is computed on confidential data: it is never part of a private result.
    """
    ok = torch.isfinite(grads).all(dim=-1, keepdim=True)
    n_bad = int(grads.shape[0] - int(ok.sum())) if grads.ndim == 2 else int(not bool(ok.all()))
    if n_bad == 0:
        return grads, 0
    return torch.where(ok, grads, torch.zeros((), dtype=grads.dtype, device=grads.device)), n_bad


def row_norms(grads: Tensor) -> Tensor:
    """The L2 norm of every row (overflow-safe: scaled by the row's largest entry first)."""
    peak = torch.clamp(grads.abs().amax(dim=-1, keepdim=True), min=1e-300)
    return torch.linalg.vector_norm(grads / peak, dim=-1, keepdim=True) * peak


def clip_per_example(grads: Tensor, clip: float | None) -> Tensor:
    """Scale every row of ``grads`` to L2 norm at most ``clip`` (``None``: no clipping).

    Rows with a non-finite entry become zero rows (module docstring), so the output is finite and
    every row has norm <= ``clip`` whatever a record holds. A row whose norm overflows to inf but
    whose entries are finite is scaled in two steps (by its largest entry first) so it is clipped,
    not zeroed.
    """
    grads, _ = finite_rows(grads)
    if clip is None or math.isinf(clip):
        return grads
    norms = row_norms(grads)  # entries scaled to [-1, 1] first: the norm cannot overflow
    return grads * torch.clamp(clip / torch.clamp(norms, min=1e-300), max=1.0)


def _check_context(context: ReleaseContext) -> None:
    if not isinstance(context, ReleaseContext):
        raise TypeError(
            f"the noise of a release is drawn through its ReleaseContext, got {type(context).__name__}; "
            "pass ReleaseContext(privacy_rng=...) (None: OS entropy)."
        )


def _check_positive(value: float, name: str) -> float:
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise InvalidPrivacyParameterError(f"{name} must be a positive finite number, got {value!r}.")
    return v


def add_gaussian_noise(context: ReleaseContext, summed: Tensor, std: float) -> Tensor:
    """``summed + N(0, std² I)``: the noise drawn with ``context``'s PrivacyRNG on the CPU in float64
    (:meth:`PrivacyRNG.normal`), then moved to ``summed``'s device and float type (the release has
    the same law on every device). Plain floating-point noise: see the module docstring.

    Raises
    ------
    InvalidPrivacyParameterError
        ``std`` is not a positive finite number (nothing is drawn).
    """
    _check_context(context)
    std = _check_positive(std, "the noise standard deviation")
    shape = tuple(summed.shape)
    z = torch.from_numpy(np.asarray(context.draw(lambda rng: rng.normal(1.0, shape))))
    return summed + std * z.to(device=summed.device, dtype=summed.dtype)


def noisy_clipped_sum(
    context: ReleaseContext, grads: Tensor, *, clip: float, noise_multiplier: float
) -> Tensor:
    """One Gaussian sum query: ``Σ_i clip(grads_i, C) + N(0, (σC)² I)`` (module docstring).

    Parameters
    ----------
    context
        The release the step belongs to (already charged by the caller).
    grads
        The per-example rows, shape (B, P) (B may be 0: the sum is then zeros).
    clip, noise_multiplier
        C and σ (noise std σC), both positive and finite.

    Raises
    ------
    InvalidPrivacyParameterError
        ``clip`` or ``noise_multiplier`` is not a positive finite number (nothing is drawn).
    """
    _check_context(context)
    c = _check_positive(clip, "clip")
    z = _check_positive(noise_multiplier, "noise_multiplier")
    return add_gaussian_noise(context, clip_per_example(grads, c).sum(0), z * c)


def noisy_centred_count(context: ReleaseContext, grads: Tensor, *, clip: float, std: float) -> float:
    """``Σ_i (1[‖g_i‖ ≤ C] − ½) + N(0, std²)``: the private unclipped count of adaptive clipping
    (Andrew et al. 2021, Algorithm 1; centred so that each record's contribution lies in the ball
    of radius ½ around the origin under either neighbouring relation).

    A row with a non-finite entry counts as a zero row (inside the ball). Plain floating-point
    noise (:meth:`PrivacyRNG.normal`), like the gradient noise (module docstring): the count is
    used inside the fit only (the adaptive clip) and no per-step value of it is kept or shown
    (:func:`dpinfer.release.dpvi.loop.clip_record` keeps aggregates only).

    Raises
    ------
    InvalidPrivacyParameterError
        ``clip`` or ``std`` is not a positive finite number (nothing is drawn).
    """
    _check_context(context)
    c = _check_positive(clip, "clip")
    s = _check_positive(std, "the count noise standard deviation")
    rows, _ = finite_rows(grads)
    inside = (row_norms(rows).reshape(-1) <= c).to(torch.float64)
    return float((inside - 0.5).sum()) + float(context.draw(lambda rng: rng.normal(s)))


__all__ = [
    "add_gaussian_noise",
    "clip_per_example",
    "finite_rows",
    "noisy_centred_count",
    "noisy_clipped_sum",
    "row_norms",
]
