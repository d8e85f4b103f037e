"""COVID-19 in the Netherlands: a cubic polynomial of the cumulative case counts (ABCDP §6.2).

y(t) = a0 + a1·t + a2·t² + a3·t³ for t = 0..17, prior a_i ~ N(0, 1) independently, observed
data: 18 cumulative confirmed-case counts (27 Feb - 17 Mar 2020, as shipped by ABCDP; see
``dpinfer.datasets.load_covid_nl``).

Parameter order: θ = (a0, a1, a2, a3), lowest degree first. The paper's eq. (12) writes
y = a3 + a2 t + a1 t² + a0 t³ (highest first) and the authors' code uses the reverse; with an
i.i.d. N(0, 1) prior the two labellings give the same model, only the names differ.

The simulator is deterministic. Following the authors' MMD use (the ABCDP authors' code (Park, Vinaroz &
Jitkrittum 2021)), a data set
is the unordered set of its 18 values (shape (18, 1)); the distance ignores time order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..smc_prior import SMCPrior, identity

N_DAYS = 18


class CovidPolynomial:
    """Cubic-polynomial model of cumulative counts with a N(0, I4) prior."""

    name = "covid"
    param_names = ("a0", "a1", "a2", "a3")

    def __init__(self, n_days: int = N_DAYS) -> None:
        self.n_days = int(n_days)
        self.t = np.arange(self.n_days, dtype=np.float64)
        self.design = np.vander(self.t, 4, increasing=True)  # (n_days, 4): 1, t, t², t³

    def prior_sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """θ ~ N(0, I4); shape (n, 4)."""
        return rng.standard_normal((n, 4))

    def smc_prior(self) -> SMCPrior:
        """The N(0, I4) prior, θ its own free coordinates."""
        return SMCPrior(self.prior_sample, identity, identity, lambda z: -0.5 * np.sum(z**2, axis=1))

    def curve(self, theta: Any) -> np.ndarray:
        """y(t) for each row of θ; shape (B, n_days)."""
        th = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        return th @ self.design.T

    def simulate(self, theta: Any, rng: np.random.Generator | None = None) -> np.ndarray:
        """The simulated data sets as point sets; shape (B, n_days, 1). ``rng`` is unused."""
        return self.curve(theta)[:, :, None]

    # -- synthetic records (dpinfer.models.record_synthesis.SupportsRecordSynthesis) -------------
    def record_columns(self) -> tuple[str, ...]:
        """One synthetic record is a whole curve (the data are one series): ``day_0, ...``."""
        return tuple(f"day_{t}" for t in range(self.n_days))

    def simulate_records(self, theta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The curve of each row of θ; shape (B, n_days). ``rng`` is unused (the model is
        deterministic given θ)."""
        return self.curve(theta)
