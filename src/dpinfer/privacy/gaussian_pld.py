"""The privacy loss distribution of the Gaussian mechanism, plain or Poisson-subsampled, built with
the inverse privacy loss evaluated on the whole loss grid at once.

dp-accounting's connect-the-dots construction (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022,
Alg. 1; ``privacy_loss_distribution._create_pld_pmf_from_monotone_privacy_loss``) asks the
mechanism for the hockey-stick divergence δ(ε) at every point ε of the loss grid, and its
``get_delta_for_epsilon`` finds the cut-off ``x(ε) = L⁻¹(ε)`` (the largest x whose privacy loss
is at least ε) with one Python call per grid point: up to 10⁵ calls, 0.02-1.8 s per Gaussian leaf
at the grid step 1e-4, which every calibration step pays again (3-12x less here:
``benchmarks/gaussian_pld.py``). ``GridGaussianPrivacyLoss`` is dp-accounting's
``GaussianPrivacyLoss`` with that one method evaluated elementwise in numpy, from the same closed
forms (dp-accounting 0.6.0, ``privacy_loss_mechanism.py``):

* remove, no subsampling: ``x = -Δ/2 - ε σ²/Δ``; add: ``Δ`` plus that;
* subsampled with probability q (Balle, Barthe & Gaboardi 2018, Thm 9 as dp-accounting writes it):
  the loss without subsampling is ``log(1 + (e^ε - 1)/q)`` (remove) or
  ``-log(1 + (e^{-ε} - 1)/q)`` (add), then the line above;
* replace-one, subsampled: ``x = σ²/Δ · (asinh(-sinh(ε/2)·α) - ε/2)`` with
  ``α = e^{(Δ/σ)²/2}(1 - q)/q``, computed in logarithms as dp-accounting does.

Everything else (the loss bounds, the tails, the CDFs, the discretisation and the pessimistic
rounding) is dp-accounting's own code, so the PLD is dp-accounting's up to the last bits of the
floating-point evaluation of those formulas: ``tests/privacy/test_gaussian_pld.py`` compares both
over a grid of (σ, q, relation, grid step) and catches a wrong subsampling transform.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from ..deferred import DeferredModule

if TYPE_CHECKING:
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as pld_lib
    from dp_accounting.pld import privacy_loss_mechanism as plm
else:  # imported at the first accounting, not at start-up (see dpinfer.deferred)
    pld_lib = DeferredModule("dp_accounting.pld.privacy_loss_distribution")
    plm = DeferredModule("dp_accounting.pld.privacy_loss_mechanism")

_ISCLOSE = 1e-9  # math.isclose's default relative tolerance, which dp-accounting's scalar code uses


def _isclose(a: np.ndarray, b: float) -> np.ndarray:
    """``math.isclose(a_i, b)`` elementwise (relative tolerance 1e-9, no absolute tolerance)."""
    return np.abs(a - b) <= _ISCLOSE * np.maximum(np.abs(a), abs(b))


def _log_one_plus_expm1_over_q(loss: np.ndarray, q: float) -> np.ndarray:
    """``log(1 + (e^loss - 1)/q) = log(e^loss / q + 1 - 1/q)`` for losses above ``log(1 - q)``
    (dp-accounting's ``log_a_times_exp_b_plus_c(1/q, loss, 1 - 1/q)``, with ``1 - 1/q < 0``)."""
    a, c = 1.0 / q, 1.0 - 1.0 / q
    d = loss + np.log(a)
    out = d + np.log1p(-np.exp(np.log(-c) - d))
    return np.where(loss == 0.0, np.log(a + c), out)


def _log_sinh(a: np.ndarray) -> np.ndarray:
    """``log(sinh(a))`` for ``a >= 0`` (0 at a = 0, as dp-accounting's ``common.log_sinh``)."""
    with np.errstate(divide="ignore"):
        out = a + np.log1p(-np.exp(-2.0 * a)) - math.log(2.0)
    return np.where(a == 0.0, 0.0, out)


def _asinh_exp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``asinh(b·e^a)`` for ``b`` in {-1, +1} (dp-accounting's ``common.asinh_exp``)."""
    sign = np.where(b >= 0.0, 1.0, -1.0)
    log_abs = np.log(np.abs(b)) + a
    return sign * np.logaddexp(0.5 * np.logaddexp(0.0, 2.0 * log_abs), log_abs)


def gaussian_inverse_privacy_loss(
    loss: np.ndarray, *, sigma: float, sensitivity: float, q: float, adjacency: str
) -> np.ndarray:
    """The largest x whose privacy loss is at least ``loss``, elementwise (the formulas of the
    module docstring; ``adjacency`` is ``"add"``, ``"remove"`` or ``"replace"``).

    Losses must lie where dp-accounting's scalar ``inverse_privacy_loss`` is defined (below
    ``-log(1-q)`` for add, above ``log(1-q)`` for remove); at those limits (within 1e-9
    relatively) the inverse is the limit of the formula (-∞ for add, +∞ for remove), as there.
    """
    loss = np.asarray(loss, dtype=np.float64)
    var_over_d = sigma**2 / sensitivity

    def without_subsampling_remove(l: np.ndarray) -> np.ndarray:
        return -0.5 * sensitivity - l * var_over_d

    if adjacency == "replace":
        if q == 1.0:
            out = -loss * var_over_d / 2.0
        else:
            log_alpha = 0.5 * (sensitivity / sigma) ** 2 + math.log1p(-q) - math.log(q)
            sign = np.where(loss >= 0.0, 1.0, -1.0)
            asinh_term = _asinh_exp(log_alpha + _log_sinh(np.abs(loss) / 2.0), -sign)
            out = var_over_d * (asinh_term - loss / 2.0)
        return np.where(loss == 0.0, 0.0, out)
    if adjacency == "remove":
        if q == 1.0:
            return without_subsampling_remove(loss)
        limit = math.log(1.0 - q)
        at_limit = _isclose(loss, limit)
        if np.any((loss <= limit) & ~at_limit):
            raise ValueError(f"privacy loss at or below log(1 - q) = {limit} (remove adjacency).")
        inner = _log_one_plus_expm1_over_q(np.where(at_limit, 0.0, loss), q)
        return np.where(at_limit, math.inf, without_subsampling_remove(inner))
    if adjacency == "add":
        if q == 1.0:
            return sensitivity + without_subsampling_remove(loss)
        limit = -math.log(1.0 - q)
        at_limit = _isclose(loss, limit)
        if np.any((loss > limit) & ~at_limit):
            raise ValueError(f"privacy loss above -log(1 - q) = {limit} (add adjacency).")
        inner = -_log_one_plus_expm1_over_q(np.where(at_limit, 0.0, -loss), q)
        return np.where(at_limit, -math.inf, sensitivity + without_subsampling_remove(inner))
    raise ValueError(f"adjacency must be 'add', 'remove' or 'replace', got {adjacency!r}.")


@functools.cache
def _grid_loss_class() -> type:
    """dp-accounting's ``GaussianPrivacyLoss`` with :meth:`get_delta_for_epsilon` on the whole grid
    (made once, at first use, so that importing this module does not import dp-accounting)."""

    class GridGaussianPrivacyLoss(plm.GaussianPrivacyLoss):
        """dp-accounting's Gaussian privacy loss; the hockey-stick divergence of a whole grid of ε
        in one numpy evaluation of the inverse privacy loss (module docstring)."""

        def get_delta_for_epsilon(self, epsilon: Any) -> Any:
            # dp-accounting 0.6.0's AdditiveNoisePrivacyLoss.get_delta_for_epsilon, with its
            # per-point inverse_privacy_loss list comprehension replaced by one array evaluation
            is_scalar = isinstance(epsilon, numbers.Number)
            epsilons = np.asarray([epsilon] if is_scalar else epsilon, dtype=np.float64)
            deltas = np.zeros_like(epsilons, dtype=float)
            adjacency = self.adjacency_type.name.lower()  # "add", "remove" or "replace"
            q = float(self.sampling_prob)
            if q == 1.0 or adjacency == "replace":
                inverse = np.full(epsilons.shape, True)
            elif adjacency == "add":
                inverse = epsilons < -math.log1p(-q)  # the divergence is 0 above -log(1 - q)
            else:
                inverse = epsilons > math.log1p(-q)
                deltas[~inverse] = -np.expm1(epsilons[~inverse])
            x_cutoffs = gaussian_inverse_privacy_loss(
                epsilons[inverse], sigma=float(self._standard_deviation), sensitivity=float(self.sensitivity),
                q=q, adjacency=adjacency,
            )
            if np.isnan(x_cutoffs).any():  # never a silent NaN in an accountant (dp-accounting raises)
                raise ValueError("the Gaussian inverse privacy loss is undefined at some loss of the grid.")
            deltas[inverse] = self.mu_upper_cdf(x_cutoffs) - np.exp(
                epsilons[inverse] + self.mu_lower_log_cdf(x_cutoffs))
            deltas = np.clip(deltas, 0, 1)
            return float(deltas[0]) if is_scalar else deltas

    return GridGaussianPrivacyLoss


def gaussian_pld(
    *,
    standard_deviation: float,
    sensitivity: float = 1.0,
    sampling_prob: float = 1.0,
    neighboring_relation: NeighboringRelation | None = None,
    value_discretization_interval: float = 1e-4,
    log_mass_truncation_bound: float = -50.0,
) -> pld_lib.PrivacyLossDistribution:
    """The pessimistic connect-the-dots PLD of the Gaussian mechanism: dp-accounting's
    ``from_gaussian_mechanism`` with the same arguments and defaults (add-or-remove unless
    ``neighboring_relation`` says replace-one), the loss grid evaluated in numpy.

    Parameters
    ----------
    standard_deviation, sensitivity
        The noise's standard deviation and the query's sensitivity (the PLD depends on their ratio).
    sampling_prob
        The Poisson subsampling probability q in (0, 1].
    neighboring_relation
        ``dp_accounting.NeighboringRelation``: ``ADD_OR_REMOVE_ONE`` (default),
        ``REPLACE_SPECIAL`` (the same PLD) or ``REPLACE_ONE``.
    value_discretization_interval, log_mass_truncation_bound
        The loss grid's step and the log of the noise mass left to the pessimistic tails.
    """
    import dp_accounting

    cls = _grid_loss_class()
    rel = dp_accounting.NeighboringRelation
    relation = rel.ADD_OR_REMOVE_ONE if neighboring_relation is None else neighboring_relation

    def single(adjacency: Any) -> Any:
        loss = cls(standard_deviation, sensitivity=sensitivity, pessimistic_estimate=True,
                   log_mass_truncation_bound=log_mass_truncation_bound, sampling_prob=sampling_prob,
                   adjacency_type=adjacency)
        return pld_lib._create_pld_pmf_from_monotone_privacy_loss(  # noqa: SLF001 - the construction itself
            loss, pessimistic_estimate=True, value_discretization_interval=value_discretization_interval,
            use_connect_dots=True)

    if relation in (rel.ADD_OR_REMOVE_ONE, rel.REPLACE_SPECIAL):
        remove = single(plm.AdjacencyType.REMOVE)
        if sampling_prob == 1.0:
            return pld_lib.PrivacyLossDistribution(remove)
        return pld_lib.PrivacyLossDistribution(remove, single(plm.AdjacencyType.ADD))
    if relation == rel.REPLACE_ONE:
        return pld_lib.PrivacyLossDistribution(single(plm.AdjacencyType.REPLACE))
    raise ValueError(f"unsupported neighbouring relation: {relation}")
