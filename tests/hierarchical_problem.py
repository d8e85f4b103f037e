"""A hierarchical private-data problem of our own with an exact posterior (issue 39 item 6).

Beta-binomial group counts: ``G`` groups of ``m`` people; group ``g``'s success probability is
``p_g ~ Beta(μκ, (1-μ)κ)`` and its count ``y_g ~ Binomial(m, p_g)``; the vector of counts is
released with discrete Gaussian noise of a published σ (a known-noise mechanism:
``GaussianMechanism.known(sigma, G, discrete=True)``). Parameters: the mean ``μ ~ Beta(2, 2)``
and the concentration ``κ ~ Gamma(2, rate 0.1)`` (small κ: groups differ a lot).

Exact posterior: given θ the groups are independent and ``p_g`` integrates out, so

    p(z | θ) = Π_g Σ_{y=0}^{m} BB(y; m, μκ, (1-μ)κ) · N_Z(z_g - y; σ²),

(the discrete Gaussian's normaliser does not depend on ``y``: it is shift-invariant over the
integers), a sum of ``m + 1`` terms per group, evaluated on a (μ, log κ) grid; draws come from the
grid cells (∝ density × cell area × κ for the log scale) with uniform jitter inside the cell.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaln, gammaln, logsumexp

from dpinfer.models import BetaPrior, GammaPrior, GaussianMechanism, PrivateDataModel

G, M, SIGMA = 12, 30, 2.0
#: a fixed release: counts drawn at μ = 0.3, κ = 6 (numpy seed 7), plus Gaussian noise σ = 2 rounded
OBSERVED = [3.0, 4.0, 4.0, 8.0, 11.0, -1.0, 18.0, 14.0, -1.0, 7.0, 14.0, 5.0]


def make_model(sigma: float = SIGMA) -> PrivateDataModel:
    mech = GaussianMechanism.known(sigma=sigma, stat_dim=G, discrete=True, sensitivity=float(np.sqrt(2.0)),
                                   bounds=([0] * G, [M] * G))

    def simulate(theta, rng):
        mu, kappa = theta[:, :1], theta[:, 1:2]
        p = rng.beta(mu * kappa, (1.0 - mu) * kappa, size=(theta.shape[0], G))
        return rng.binomial(M, p).astype(np.float64)

    return PrivateDataModel([BetaPrior(2.0, 2.0), GammaPrior(2.0, 0.1)], simulate, mech,
                            param_names=["mu", "kappa"], name="beta-binomial groups")


def log_likelihood(mu: np.ndarray, kappa: np.ndarray, observed, sigma: float = SIGMA) -> np.ndarray:
    """``log p(z | μ, κ)`` (module docstring) for arrays ``mu``, ``kappa`` of one shape."""
    z = np.asarray(observed, dtype=np.float64)
    a = (mu * kappa)[..., None]
    b = ((1.0 - mu) * kappa)[..., None]
    y = np.arange(M + 1, dtype=np.float64)
    log_choose = gammaln(M + 1) - gammaln(y + 1) - gammaln(M - y + 1)
    log_bb = log_choose + betaln(y + a, M - y + b) - betaln(a, b)  # (..., M+1)
    out = np.zeros(np.shape(mu))
    for zg in z:
        out += logsumexp(log_bb - 0.5 * ((zg - y) / sigma) ** 2, axis=-1)
    return out


class ExactPosterior:
    """The grid posterior of (μ, κ) (module docstring)."""

    def __init__(self, observed=OBSERVED, n_mu: int = 240, n_logk: int = 240, sigma: float = SIGMA) -> None:
        self.mu = (np.arange(n_mu) + 0.5) / n_mu  # cell centres on (0, 1)
        self.logk = np.linspace(np.log(0.05), np.log(3000.0), n_logk)
        self.dmu, self.dlogk = 1.0 / n_mu, self.logk[1] - self.logk[0]
        mu, logk = np.meshgrid(self.mu, self.logk, indexing="ij")
        kappa = np.exp(logk)
        log_prior = (np.log(mu) + np.log1p(-mu) - betaln(2.0, 2.0)  # Beta(2, 2)
                     + np.log(0.1**2) + np.log(kappa) - 0.1 * kappa - gammaln(2.0))  # Gamma(2, 0.1)
        lp = log_prior + log_likelihood(mu, kappa, observed, sigma) + logk  # + log κ: the log-κ cells
        self.log_mass = lp - logsumexp(lp)

    def sample(self, n: int, seed=0) -> np.ndarray:
        rng = np.random.default_rng(seed)
        flat = rng.choice(self.log_mass.size, size=n, p=np.exp(self.log_mass.ravel()))
        i, j = np.unravel_index(flat, self.log_mass.shape)
        mu = self.mu[i] + (rng.random(n) - 0.5) * self.dmu
        logk = self.logk[j] + (rng.random(n) - 0.5) * self.dlogk
        return np.column_stack([mu, np.exp(logk)])

    def tail_mass(self, kappa_above: float) -> float:
        """Posterior probability of κ > ``kappa_above``."""
        keep = np.exp(self.logk) > kappa_above
        return float(np.exp(logsumexp(self.log_mass[:, keep]))) if keep.any() else 0.0
