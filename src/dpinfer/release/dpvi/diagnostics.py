"""What a DPVI fit does not know: the spread its privacy noise induces, and whether it converged.

Both are post-processing of released quantities only: the public noise level of every step
(σ_Δ·C_t, the sampling scale and the Monte Carlo draws), the optimizer's effective step sizes
(computed from the released noisy gradients), the released iterates and the returned
variational covariance. Nothing here touches the data.

Noise-induced spread (the linear-response propagation)
------------------------------------------------------
Around the optimum u* the released gradient of the mean coordinates is, to first order,

    g̃_t = −H (u_t − u*) + ξ_t + (subsampling and Monte Carlo noise),   ξ_t ~ N(0, s_t² I),   (1)

where H is the curvature of the negative log posterior and s_t the public standard deviation of
the privacy noise on each mean coordinate of step t (``theta`` split: s_t = scale·sqrt(S)·σ_Δ C_t,
the S Monte Carlo slices of the noisy θ-gradient summed by the pullback; ``likelihood``:
scale·σ_Δ C_t; ``elbo``: σ_Δ C_t). The optimizers step along a (momentum-filtered) gradient with
a diagonal rate k_t (windowed AdaGrad: lr/sqrt(Σ_window g̃² + 0.1); SGD: lr; Adam:
lr/((sqrt(v̂_t) + ε)(1 − β₁ᵗ)) on m_t = β₁ m_{t−1} + (1 − β₁) g̃_t), so the error e_t = u_t − u*
follows the linear recursion

    m_{t+1} = β m_t + (1 − β)(−H e_t + ξ_t),     e_{t+1} = e_t + k_t ⊙ m_{t+1}              (2)

(β = 0: e_{t+1} = (I − K_t H) e_t + K_t ξ_t; rates above 1/((1 − β)λ_max(H)), where the linear
recursion would explode and the self-normalised steps do not, are capped there), and the returned tail average
ū = (1/m) Σ_{t ≥ T/2} u_{t+1} has the privacy-noise covariance

    V = Cov(ū) = (1/m²) Σ_{t,t'} Cov(e_{t+1}, e_{t'+1}),                                    (3)

propagated exactly through (2) by the covariance recursion of the state (e_t, m_t) and of the
running sums (:func:`propagate_noise`). With a constant rate and a long tail (3) tends to
Polyak & Juditsky's (1992) H⁻¹ (s² I) H⁻¹ / m, whatever the rate; where the rate is too small
for the iterates to forget their start within the tail (1/(k·h) ≳ m), (3) is the spread of a
random walk and exceeds that limit. ``noise_sd = sqrt(diag V)`` is reported beside the posterior
sd. H is the released trajectory's curvature: the least-squares slope of the released mean
gradients g̃_t on the iterates u_t over the last 3/4 of the steps (unbiased under (1), since ξ_t is
independent of u_t), symmetrised with negative eigenvalues set to 0 (a flat direction is a random
walk: the conservative side). The returned variational covariance is not used for it: where the
noise dominates, the scale parameters are themselves off (sd ratios 0.2-6 measured), while the
mean's dynamics follow the data's curvature whatever q's scale.

Limits: (1) is linear; the rates k_t are the realised ones (they depend on the noise itself);
the spread of the Monte Carlo draws and the minibatches is not included (that is the non-private
fit's own spread, small against the posterior sd when the fit converges); Ĥ has relative
error about sqrt(2/(m·k·h)) (m steps, k·h the per-step contraction), and 1/Ĥ is biased upwards
by it. The prediction is checked against the spread of repeated private fits of one data set
(Gaussian linear regression, ``tests/release/test_dpvi_diagnostics.py``, slow).

Convergence (the tail drift)
----------------------------
The tail is split into two halves with means ū_A (steps T/2..3T/4) and ū_B (3T/4..T). At
convergence ū_B − ū_A is noise only, with covariance V_AB from the same recursion (3). The rest
of the gradient noise (minibatches, Monte Carlo draws) is measured on the released tail gradients
themselves (half their mean squared successive difference, less s_t²) and propagated with it. The
statistic z_j = |ū_B − ū_A|_j / sqrt(V_AB,jj + (τ·sd_j)²) (τ = :data:`DRIFT_TOLERANCE`, sd_j the
smaller of q's sd and the curvature's sqrt((Ĥ⁻¹)_jj)) above :data:`DRIFT_Z` on some coordinate
means the iterates were still moving through the averaged half: the mean has not reached the
optimum and more steps (or a larger step size) are needed.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import InferenceWarning

#: z above which the tail drift counts as not converged (module docstring)
DRIFT_Z = 3.5
#: τ: the share of the posterior sd the non-private jitter may move the half-tail means by
DRIFT_TOLERANCE = 0.1
#: DPVINoiseWarning fires when, on some coordinate, the privacy noise's sd exceeds this multiple of
#: the posterior sd: the noise part of the interval width is then more than twice the posterior's
#: own (the widened interval over 2.2x the posterior interval), i.e. the noise dominates
#: (issue 39: it fired at noise_sd > posterior sd, on nearly every private fit)
NOISE_DOMINATES = 2.0


class DPVINoiseWarning(InferenceWarning):
    """The spread the privacy noise alone induces in a DPVI fit's mean exceeds
    :data:`NOISE_DOMINATES` (2) posterior sd on some coordinate: the returned mean is mostly noise
    (more data, a larger ε, fewer steps or a larger sampling rate reduce it). The intervals of
    ``interval()``, ``summary()`` and the figures include this spread by default
    (``widen="noise"``)."""


class DPVIConvergenceWarning(InferenceWarning):
    """The mean of a DPVI fit was still drifting over the averaged last half of the steps."""


@dataclass
class Trajectory:
    """The public per-step record the diagnostics need (filled by the loop).

    Attributes
    ----------
    rates
        (T, D) effective rates k_t of the mean coordinates (equation (2)).
    noise
        (T,) s_t, the privacy noise sd on each mean coordinate of the released gradient.
    momentum
        β of the optimizer (0 for AdaGrad and SGD, β₁ for Adam).
    tail, split
        First step of the averaged tail, and first step of its second half.
    sum_a, sum_b
        Sums of the iterates' mean coordinates over [tail, split) and [split, T).
    """

    rates: list[np.ndarray] = field(default_factory=list)
    noise: list[float] = field(default_factory=list)
    momentum: float = 0.0
    tail: int = 0
    split: int = 0
    sum_a: np.ndarray | None = None
    sum_b: np.ndarray | None = None
    last_gradient: np.ndarray | None = None
    sq_diff: np.ndarray | None = None
    n_diff: int = 0
    fit_from: int = 0
    moments: list[np.ndarray] = field(default_factory=list)

    def add_response(self, t: int, u: np.ndarray, gradient: np.ndarray) -> None:
        """Accumulate the moments of (u_t, g̃_t) for t >= ``fit_from``: the released gradient
        against the iterate it was computed at (:meth:`curvature`)."""
        if t < self.fit_from:
            return
        z = np.concatenate([[1.0], u, gradient])
        outer = np.outer(z, z)
        if self.moments:
            self.moments[0] += outer
        else:
            self.moments.append(outer)

    def curvature(self) -> np.ndarray | None:
        """Ĥ = −Cov(g̃, u) Cov(u)⁻¹, symmetrised, eigenvalues floored at 0: the least-squares
        slope of the released mean gradients on the iterates (equation (1); the noise of step t
        is independent of u_t, which depends on earlier steps only). ``None`` if singular."""
        if not self.moments:
            return None
        M = self.moments[0]
        n = M[0, 0]
        D = (M.shape[0] - 1) // 2
        if n < 2 * D + 2:
            return None
        mean = M[0, 1:] / n
        C = M[1:, 1:] / n - np.outer(mean, mean)
        Cuu, Cgu = C[:D, :D], C[D:, :D]
        try:
            H = -Cgu @ np.linalg.inv(Cuu)
        except np.linalg.LinAlgError:
            return None
        w, V = np.linalg.eigh(0.5 * (H + H.T))
        return (V * np.clip(w, 0.0, None)) @ V.T

    def add_iterate(self, t: int, u: np.ndarray, gradient: np.ndarray) -> None:
        """Record the iterate after step t >= tail and the released mean gradient of step t."""
        if t >= self.split:
            self.sum_b = u.copy() if self.sum_b is None else self.sum_b + u
        elif t >= self.tail:
            self.sum_a = u.copy() if self.sum_a is None else self.sum_a + u
        if self.last_gradient is not None:
            d2 = (gradient - self.last_gradient) ** 2
            self.sq_diff = d2 if self.sq_diff is None else self.sq_diff + d2
            self.n_diff += 1
        self.last_gradient = gradient.copy()

    def gradient_variance(self) -> np.ndarray | None:
        """Per-coordinate variance of the released mean gradients over the tail, from half the
        mean squared successive difference (von Neumann 1941: insensitive to a slow trend)."""
        if self.sq_diff is None or self.n_diff < 2:
            return None
        return self.sq_diff / (2.0 * self.n_diff)


def propagate_noise(
    rates: np.ndarray,
    noise: np.ndarray,
    curvature: np.ndarray,
    tail: int,
    split: int,
    momentum: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Covariances of the tail average and of the half-tail difference under the privacy noise.

    Propagates equation (2) of the module docstring: the state z_t = (e_t[, m_t]) has
    Cov(z_{t+1}) = F_t Cov(z_t) F_tᵀ + s_t² G_t G_tᵀ, and the running sums A (steps
    [tail, split)) and B ([split, T)) of e_{t+1} carry their cross-covariances with z.

    Parameters
    ----------
    rates
        (T, D) diagonal rates k_t.
    noise
        (T,) noise sd s_t of each coordinate of the released mean gradient, or (T, D) per
        coordinate.
    curvature
        (D, D) H.
    tail, split
        The averaged tail [tail, T) and the start of its second half.
    momentum
        β (0: no momentum state).

    Returns
    -------
    V, V_AB : ndarray (D, D)
        Cov(ū) (equation (3)) and Cov(ū_B − ū_A).
    """
    rates = np.asarray(rates, dtype=np.float64)
    H = np.asarray(curvature, dtype=np.float64)
    T, D = rates.shape
    noise = np.broadcast_to(np.asarray(noise, dtype=np.float64).reshape(T, -1), (T, D))
    beta = float(momentum)
    # the linearisation is stable only for k·λ_max(H)(1 − β) <= 1; the real (self-normalised)
    # steps do not explode where it would, so larger rates are capped there
    lam = float(np.max(np.linalg.eigvalsh(0.5 * (H + H.T)))) if D else 0.0
    if lam > 0:
        rates = np.minimum(rates, 1.0 / ((1.0 - beta) * lam))
    dz = 2 * D if beta > 0 else D
    E = np.eye(dz)[:D]  # z -> e
    P = np.zeros((dz, dz))  # Cov(z)
    C = np.zeros((2, D, dz))  # Cov(A or B, z)
    S = np.zeros((2, 2, D, D))  # Cov of the sums
    for t in range(T):
        k = rates[t]
        if beta > 0:
            # m' = β m − (1−β) H e + (1−β) ξ ;  e' = e + k ⊙ m'
            Fm = np.hstack([-(1 - beta) * H, beta * np.eye(D)])
            Fe = np.hstack([np.eye(D), np.zeros((D, D))]) + k[:, None] * Fm
            F = np.vstack([Fe, Fm])
            G = np.concatenate([k * (1 - beta), np.full(D, 1 - beta)]) * np.tile(noise[t], 2)
            Q = np.outer(G, G) * np.vstack([np.hstack([np.eye(D)] * 2)] * 2)
        else:
            F = np.eye(D) - k[:, None] * H
            Q = np.diag((k * noise[t]) ** 2)
        P = F @ P @ F.T + Q
        C = C @ F.T  # Cov(sum, z') before the sums take e'
        if t >= tail:  # the sum S_j of this half takes e' = E z'
            j = 1 if t >= split else 0
            X = C @ E.T  # X[i] = Cov(S_i, e')
            S[j, :] += np.swapaxes(X, 1, 2)  # Cov(S_j', S_i) gains Cov(e', S_i)
            S[:, j] += X  # Cov(S_i, S_j') gains Cov(S_i, e'); both for i = j
            S[j, j] += E @ P @ E.T
            C[j] = C[j] + E @ P
    ma, mb = max(split - tail, 1), max(T - split, 1)
    m = (T - tail) if T > tail else 1
    Sab = S[0, 0] + S[1, 1] + S[0, 1] + S[1, 0]
    V = Sab / m**2
    Vd = S[1, 1] / mb**2 + S[0, 0] / ma**2 - (S[0, 1] + S[1, 0]) / (ma * mb)
    return 0.5 * (V + V.T), 0.5 * (Vd + Vd.T)


@dataclass(frozen=True)
class FitDiagnostics:
    """The noise spread and convergence check of one fit (module docstring).

    Attributes
    ----------
    noise_sd
        sqrt(diag V): the sd the privacy noise alone induces in the returned mean (0 for a
        non-private fit).
    noise_ratio
        noise_sd / posterior sd, per coordinate.
    dominance
        noise_sd / the sampling posterior's sd: q's sd, or the sd of the curvature the released
        trajectory shows where that is smaller (under heavy noise q's own sd is inflated by the
        noise, so noise_ratio understates how much the noise dominates). DPVINoiseWarning fires
        when it exceeds :data:`NOISE_DOMINATES` on some coordinate.
    drift
        ū_B − ū_A, the change of the mean between the two halves of the averaged tail.
    drift_z
        |drift| / sqrt(V_AB + (τ·sd)²) (module docstring).
    converged
        ``max(drift_z) <= DRIFT_Z``.
    """

    noise_sd: np.ndarray
    noise_ratio: np.ndarray
    dominance: np.ndarray
    drift: np.ndarray
    drift_z: np.ndarray
    converged: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "noise_sd": self.noise_sd.tolist(),
            "noise_ratio": self.noise_ratio.tolist(),
            "noise_dominance": self.dominance.tolist(),
            "noise_dominates_above": NOISE_DOMINATES,
            "drift": self.drift.tolist(),
            "drift_z": self.drift_z.tolist(),
            "converged": bool(self.converged),
            "drift_threshold": DRIFT_Z,
            "drift_tolerance": DRIFT_TOLERANCE,
        }


def diagnose(record: Trajectory, covariance: np.ndarray, steps: int) -> FitDiagnostics | None:
    """:class:`FitDiagnostics` of a finished fit from its public record and returned covariance
    (``None`` without an averaged tail of at least 4 steps)."""
    if record.sum_a is None or record.sum_b is None or steps - record.split < 2:
        return None
    cov = np.asarray(covariance, dtype=np.float64)
    sd = np.sqrt(np.diag(cov))
    noise = np.asarray(record.noise, dtype=np.float64)
    rates = np.vstack(record.rates)
    H = record.curvature()
    if H is None:  # too few steps: the returned variational precision
        try:
            H = np.linalg.inv(cov)
        except np.linalg.LinAlgError:
            H = np.diag(1.0 / np.maximum(np.diag(cov), 1e-300))
    if np.any(noise > 0):
        V, _ = propagate_noise(rates, noise, H, record.tail, record.split, record.momentum)
        noise_sd = np.sqrt(np.clip(np.diag(V), 0.0, None))
    else:
        noise_sd = np.zeros_like(sd)
    # the drift's noise level: the privacy noise plus the rest of the gradient noise (minibatches,
    # Monte Carlo draws), whose variance is what the released tail gradients show beyond s_t²
    total = np.tile(noise[:, None] ** 2, (1, len(sd)))
    seen = record.gradient_variance()
    if seen is not None:
        total = total + np.clip(seen - np.mean(noise[record.tail :] ** 2), 0.0, None)
    _, Vd = propagate_noise(rates, np.sqrt(total), H, record.tail, record.split, record.momentum)
    drift_var = np.clip(np.diag(Vd), 0.0, None)
    drift = record.sum_b / (steps - record.split) - record.sum_a / max(record.split - record.tail, 1)
    # the tolerance's scale: q's sd, or the curvature's where that is smaller (q's scale
    # parameters may not have moved from their start either)
    scale = sd
    if record.curvature() is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            sd_h = np.sqrt(np.clip(np.diag(np.linalg.pinv(H)), 0.0, None))
        scale = np.where(np.isfinite(sd_h) & (sd_h > 0), np.minimum(sd, sd_h), sd)
    z = np.abs(drift) / np.sqrt(drift_var + (DRIFT_TOLERANCE * scale) ** 2)
    return FitDiagnostics(
        noise_sd=noise_sd,
        noise_ratio=noise_sd / sd,
        dominance=noise_sd / scale,
        drift=drift,
        drift_z=z,
        converged=bool(np.all(np.isfinite(z)) and float(np.max(z)) <= DRIFT_Z),
    )


def noise_message(names: tuple[str, ...], ratio: np.ndarray, epsilon: float | None) -> str:
    """The :class:`DPVINoiseWarning` text: which coordinates (by the fit's parameter names), by
    how much, what the intervals already include, and what to do."""
    worst = np.argsort(-ratio)[:3]
    which = ", ".join(f"{names[j]} ({ratio[j]:.1f}x)" for j in worst if ratio[j] > NOISE_DOMINATES)
    at = "" if epsilon is None or not math.isfinite(epsilon) else f" at epsilon={epsilon:g}"
    return (
        f"the privacy noise dominates the DPVI fit{at}: it alone moves the mean by more than "
        f"{NOISE_DOMINATES:g} posterior sd (noise sd / posterior sd = {which}). The intervals of "
        "result.interval(), summary() and the figures include this spread (widen='noise', the "
        "default); result.interval(widen=None) is the posterior alone and does not cover it. To "
        "reduce it use more data, a larger epsilon, a larger sampling_rate or fewer steps."
    )


def drift_message(names: tuple[str, ...], z: np.ndarray, drift: np.ndarray, sd: np.ndarray) -> str:
    """The :class:`DPVIConvergenceWarning` text."""
    worst = int(np.argmax(z))
    return (
        f"the DPVI mean was still moving over the averaged last half of the steps: {names[worst]} "
        f"changed by {drift[worst] / sd[worst]:+.2f} posterior sd between its two quarters "
        f"(z = {z[worst]:.1f} against its noise level), so the fit has not converged. Raise "
        "training=TrainingOptions(steps=...) (privately this re-calibrates the noise), scale the "
        "features (bounds=...) or raise the learning rate."
    )


def warn_diagnostics(result: Any, diag: FitDiagnostics, epsilon: float | None) -> None:
    """Emit :class:`DPVINoiseWarning` when some noise_sd exceeds NOISE_DOMINATES posterior sd and
    :class:`DPVIConvergenceWarning` when the tail drift says the fit has not converged."""
    names, sd = result.param_names, result.std
    if np.any(diag.dominance > NOISE_DOMINATES):
        warnings.warn(noise_message(names, diag.dominance, epsilon), DPVINoiseWarning, stacklevel=3)
    if not diag.converged:
        msg = drift_message(names, diag.drift_z, diag.drift, sd)
        warnings.warn(msg, DPVIConvergenceWarning, stacklevel=3)


__all__ = [
    "NOISE_DOMINATES",
    "DRIFT_TOLERANCE",
    "DRIFT_Z",
    "DPVIConvergenceWarning",
    "DPVINoiseWarning",
    "FitDiagnostics",
    "Trajectory",
    "diagnose",
    "drift_message",
    "noise_message",
    "propagate_noise",
    "warn_diagnostics",
]
