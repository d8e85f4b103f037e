"""Simulation-based calibration and expected coverage, for any inference method on any model.

SBC (Talts, Betancourt, Simpson, Vehtari & Gelman 2018, Algorithm 1): for ``r = 1..R``

    θ*_r ~ p(θ),   s_dp,r ~ p(s_dp | θ*_r) (confidential simulator + mechanism),
    θ_r^(1..L) = L draws from the method's posterior given s_dp,r,
    rank_r = #{l : θ_r^(l) < θ*_r}  ∈ {0, ..., L}   (per coordinate).

If the method returns the exact posterior, each rank is uniform on ``{0..L}`` (Talts et al.,
Theorem 1). A posterior that is too narrow piles ranks at both ends (∪), one that is too wide in
the middle (∩), a biased one on one side. Uniformity is tested per coordinate with the χ² test of
``bins`` equal-width rank bins (Bonferroni over coordinates).

Expected coverage (the same replicates): the central ``q``-credible interval of the draws covers
``θ*`` exactly when ``rank/L ∈ [(1-q)/2, (1+q)/2]``; for a calibrated method the fraction of
replicates covered is ``q`` for every level ``q``.

:func:`sbc` takes the model that generates the data and a ``fit(observed, seed)`` callable that
returns any posterior with ``sample(n, seed)`` — so the analysis may use another (possibly
mis-specified) model, which is how a wrong mechanism is caught. Seeds: replicate ``r`` draws
``θ*`` and ``s_dp`` from ``SeedSequence(seed, spawn_key=(0, r))`` and passes
``SeedSequence(seed, spawn_key=(1, r))`` to ``fit``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from ..errors import InvalidDataError

LEVELS = (0.5, 0.8, 0.9, 0.95)


@dataclass
class CalibrationResult:
    """Ranks ``(R, dim)`` on ``{0..n_draws}``, the true parameters, tests and coverage."""

    ranks: np.ndarray
    theta_true: np.ndarray
    n_draws: int
    param_names: tuple[str, ...]
    bins: int
    alpha: float = 0.01
    failures: list[str] = field(default_factory=list)
    method: str = ""

    @property
    def n_replicates(self) -> int:
        return int(self.ranks.shape[0])

    def pvalues(self) -> np.ndarray:
        """χ² p-value of rank uniformity per coordinate (``bins`` equal-width bins of ``0..L``)."""
        edges = np.linspace(0, self.n_draws + 1, self.bins + 1)
        out = []
        for j in range(self.ranks.shape[1]):
            counts, _ = np.histogram(self.ranks[:, j], bins=edges)
            expected = self.n_replicates * np.diff(edges) / (self.n_draws + 1)
            out.append(stats.chisquare(counts, expected).pvalue)
        return np.asarray(out)

    def coverage(self, levels: Any = LEVELS) -> np.ndarray:
        """Fraction of replicates whose central ``q`` interval covers ``θ*``, shape ``(len(levels), dim)``."""
        u = (self.ranks + 0.5) / (self.n_draws + 1)
        return np.stack([np.mean(np.abs(u - 0.5) <= q / 2, axis=0) for q in np.atleast_1d(levels)])

    def shape(self, j: int) -> str:
        """What the rank histogram of coordinate ``j`` says: too narrow, too wide or biased."""
        u = (self.ranks[:, j] + 0.5) / (self.n_draws + 1)
        outer = float(np.mean(np.abs(u - 0.5) > 0.4))  # 0.2 expected
        mean = float(u.mean())
        if abs(mean - 0.5) > 3 * math.sqrt(1 / 12 / self.n_replicates):
            side = "above" if mean < 0.5 else "below"
            return f"biased: the posterior sits {side} the true values"
        if outer > 0.2:
            return f"too narrow: {outer:.0%} of ranks in the outer 20%"
        return f"too wide: only {outer:.0%} of ranks in the outer 20%"

    @property
    def passed(self) -> bool:
        return bool(np.all(self.pvalues() >= self.alpha / self.ranks.shape[1]))

    def verdict(self) -> str:
        """One line: calibrated or not, and why."""
        p = self.pvalues()
        cov90 = self.coverage([0.9])[0]
        head = (
            f"{self.n_replicates} replicates, {self.n_draws} draws each; 90% intervals cover "
            + ", ".join(f"{n} {c:.0%}" for n, c in zip(self.param_names, cov90, strict=True))
        )
        bad = [j for j in range(p.size) if p[j] < self.alpha / p.size]
        if self.method:
            head = f"{self.method}: {head}"
        if not bad:
            return f"calibrated: SBC ranks uniform (min p = {p.min():.2g}); {head}"
        parts = [f"{self.param_names[j]} (p = {p[j]:.1e}, {self.shape(j)})" for j in bad]
        return f"MISCALIBRATED: SBC ranks not uniform for {'; '.join(parts)}; {head}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict(),
            "passed": self.passed,
            "n_replicates": self.n_replicates,
            "n_draws": self.n_draws,
            "param_names": list(self.param_names),
            "pvalues": self.pvalues().tolist(),
            "coverage_levels": list(LEVELS),
            "coverage": self.coverage().tolist(),
            "failures": self.failures,
            "method": self.method,
        }


def sbc(
    model: Any,
    fit: Callable[[np.ndarray, np.random.SeedSequence], Any],
    n_replicates: int = 100,
    n_draws: int = 99,
    *,
    seed: int | np.random.SeedSequence | None = None,
    bins: int = 10,
    alpha: float = 0.01,
    max_failures: int = 0,
) -> CalibrationResult:
    """Simulation-based calibration of ``fit`` on data generated by ``model`` (module docstring).

    Parameters
    ----------
    model
        Generates ``θ* ~ prior`` and ``s_dp = model.simulate(θ*)``.
    fit
        ``fit(observed, seed)`` → a posterior with ``sample(n, seed)``.
    n_replicates, n_draws
        ``R`` and ``L``.
    bins, alpha
        χ² bins of the ranks and the test level (Bonferroni over coordinates).
    max_failures
        Replicates whose fit may raise a :class:`~dpinfer.errors.DPInferError` (recorded, skipped);
        beyond that the error propagates.
    """
    if int(n_replicates) != n_replicates or n_replicates < 10:
        raise InvalidDataError(f"n_replicates must be an integer >= 10, got {n_replicates!r}.")
    if int(n_draws) != n_draws or n_draws < 9 or not 2 <= bins <= n_draws + 1:
        raise InvalidDataError("need n_draws >= 9 and 2 <= bins <= n_draws + 1.")
    from ..errors import DPInferError

    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    key = tuple(root.spawn_key)
    ranks, truths, failures = [], [], []
    for r in range(int(n_replicates)):
        rng = np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=key + (0, r)))
        theta = model.prior.sample(1, rng)
        obs = np.asarray(model.simulate(theta, rng), dtype=np.float64)[0]
        try:
            post = fit(obs, np.random.SeedSequence(root.entropy, spawn_key=key + (1, r)))
        except DPInferError as exc:
            failures.append(f"replicate {r}: {type(exc).__name__}: {exc}")
            if len(failures) > max_failures:
                raise
            continue
        draw_seed = np.random.SeedSequence(root.entropy, spawn_key=key + (2, r))
        draws = np.asarray(post.sample(int(n_draws), draw_seed))
        ranks.append(np.sum(draws < theta, axis=0))
        truths.append(theta[0])
    names = tuple(getattr(model, "param_names", [f"theta_{i}" for i in range(model.prior.dim)]))
    return CalibrationResult(
        np.asarray(ranks), np.asarray(truths), int(n_draws), names, bins, alpha, failures
    )


__all__ = ["LEVELS", "CalibrationResult", "sbc"]
