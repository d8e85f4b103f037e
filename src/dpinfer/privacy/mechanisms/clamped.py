"""The most common release: a clamped mean or sum of records, with its sensitivity worked out.

:func:`clamped_release` returns a :class:`ClampedRelease`: a :class:`Mechanism` (so it is the
``mechanism=`` of a :class:`~dpinfer.models.contract.PrivateDataModel`) that also knows the
statistic, :meth:`ClampedRelease.statistic` (clamp each record to ``[lower, upper]``, then sum or
average; the same function for the simulator and for the data owner) and
:meth:`ClampedRelease.release_records` (statistic, then the charged, floating-point-safe release).

Sensitivities (records are scalars clamped to ``[lo, hi]``; Dwork & Roth 2014, §3.3):

=================  ===========================  ======================================
statistic          replace-one (n public)       add-remove
=================  ===========================  ======================================
sum                ``hi - lo``                  ``max(|lo|, |hi|)``
mean               ``(hi - lo)/n``              refused (below)
sum_and_count      refused (n is public)        sum: ``max(|lo|, |hi|)``, count: 1
=================  ===========================  ======================================

A mean under add-remove has no sensitivity that does not depend on the private n: neighbouring
data sets have n and n ± 1 records, and for n = 1 the mean can move by ``hi - lo``. Either treat
n as public and use replace-one, or release ``sum_and_count`` (a noisy sum and a noisy count, ε
split by ``count_share``, and δ too for the Gaussian) and let the model simulate both: the
posterior then accounts for the noise in the count, which a plug-in ``sum/count`` would not.

Clamp bounds
------------
The bounds are always **explicit** (``clamped_release`` has no default interval): a default such
as [−2, 2] applied to body-mass indices around 25 clamps every record and spends the budget on
releasing 1.999. The library never computes, reports or warns about the fraction of records that
were actually clamped: that fraction is itself confidential (a warning that fires on one data set
and not on its neighbour is a release). Instead the bounds are checked against *public*
information only: pass ``data_range``, the range the column's values can take by its public
schema (in the data's units, e.g. (10, 80) kg/m² for BMI). A clamp interval disjoint from it is
refused (every record would be clamped to one bound: the release carries nothing); one covering
less than half of it warns (:class:`~dpinfer.errors.PrivacyWarning`).

Records are validated one by one before anything is computed (finite; integers for the geometric
mechanism), so that whether a data set is released or refused never depends on how its records
happen to add up; no message prints a record or the statistic.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import InvalidDataError, PrivacyWarning, refuse_removed_keywords
from ..context import FLAT_RELEASE_KEYWORDS, ReleaseContext
from ..events import PrivacyEvent
from ..fixed_point import ClampedSums, ExactSums, clamp_grid
from ..report import PrivateRelease
from ..rng import PrivacyRNG
from ..validation import check_epsilon, check_relation
from .base import LaplaceMechanism, Mechanism
from .composed import ComposedMechanism
from .counts import GeometricMechanism
from .gaussian import GaussianMechanism

STATISTICS = ("mean", "sum", "sum_and_count")
NOISES = ("laplace", "gaussian", "geometric")


def _noise(
    kind: str, sensitivity: float, epsilon: float, delta: float, relation: str, bounds: Any
) -> Mechanism:
    if kind == "laplace":
        return LaplaceMechanism(1, sensitivity, epsilon, relation, bounds)
    if kind == "gaussian":
        return GaussianMechanism(1, sensitivity, epsilon, delta, relation, bounds=bounds)
    return GeometricMechanism(1, int(sensitivity), epsilon, relation, bounds)


class ClampedRelease(Mechanism):
    """A clamped mean/sum (or sum and count) of scalar records and the mechanism releasing it.

    Built by :func:`clamped_release`; delegates ``G``, the density, the event and the release to
    ``inner`` (a Laplace, Gaussian, geometric or, for ``sum_and_count``, composed mechanism).
    """

    exact_release = True

    def __init__(
        self,
        statistic: str,
        lower: float,
        upper: float,
        n: int | None,
        inner: Mechanism,
        epsilon: float,
        data_range: tuple[float, float] | None = None,
    ) -> None:
        self.kind, self.lower, self.upper, self.n, self.inner = statistic, lower, upper, n, inner
        self.epsilon = epsilon  # of the whole release
        self.data_range = data_range
        self.integer_records = isinstance(inner, GeometricMechanism) or (
            isinstance(inner, ComposedMechanism) and isinstance(inner.parts[0], GeometricMechanism)
        )
        shared = ("stat_dim", "out_dim", "noise_dim", "neighbouring", "has_density", "accountant", "delta")
        for attr in shared:
            setattr(self, attr, getattr(inner, attr))
        self.name = f"clamped {statistic} [{lower:g}, {upper:g}] + {inner.name}"

    @property
    def sensitivity(self) -> Any:
        return self.inner.sensitivity

    def statistic(self, x: Any, valid: Any = None) -> np.ndarray:
        """The confidential statistic of records on the last axis of ``x``: shape ``(..., stat_dim)``.

        Records are clamped to ``[lower, upper]``. ``valid`` (a boolean mask like ``x``) marks the
        records that exist, for data sets of different sizes in one array (``sum_and_count``).
        """
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim == 0 or not np.all(np.isfinite(arr)):
            raise InvalidDataError(f"{self.name}: records must be a finite array, records on the last axis.")
        mask = np.ones(arr.shape, bool) if valid is None else np.asarray(valid, bool)
        mask = np.broadcast_to(mask, arr.shape)
        clamped = np.where(mask, np.clip(arr, self.lower, self.upper), 0.0)
        total = clamped.sum(-1, keepdims=True)
        if self.kind == "sum":
            return total
        if self.kind == "sum_and_count":
            return np.concatenate([total, mask.sum(-1, keepdims=True).astype(np.float64)], axis=-1)
        if valid is not None or arr.shape[-1] != self.n:
            raise InvalidDataError(
                f"{self.name}: the mean is over the public n = {self.n} records; got {arr.shape[-1]} on "
                "the last axis (a varying number of records needs statistic='sum_and_count')."
            )
        return total / self.n

    @refuse_removed_keywords(FLAT_RELEASE_KEYWORDS, positional=(2, "privacy_rng"))
    def release_records(
        self,
        x: Any,
        *,
        context: ReleaseContext | None = None,
        label: str = "",
    ) -> PrivateRelease:
        """Compute :meth:`statistic` of the confidential records ``x`` (1-d) and :meth:`release` it.

        Every record is validated first, individually (module docstring): finite, and an integer
        when the noise is geometric. Messages never print a record. Nothing is charged before
        every check has passed. The sum is the exact fixed-point sum of :meth:`exact_sums` (one
        chunk of the computation that :func:`dpinfer.release.streaming.release_clamped` streams),
        so the value released from the array equals, bit for bit, the value released from the
        same records in any chunking. ``context`` and ``label`` are those of
        :meth:`~dpinfer.privacy.mechanisms.base.Mechanism.release` (the earlier ``privacy_rng``
        argument and ``ledger=``/``dataset=`` keywords are refused, naming
        ``context=ReleaseContext(...)``).
        """
        try:
            arr = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidDataError(f"{self.name}: the records must be numbers.") from None
        if arr.ndim != 1:
            raise InvalidDataError(
                f"{self.name}: release one data set at a time (a 1-d array), got {arr.shape}."
            )
        sums = self.exact_sums("x").partial({"x": arr})  # the one-chunk case of the streamed sum
        return self.release_sums(sums, context=context, label=label)

    def exact_sums(self, column: str) -> ClampedSums:
        """The exact fixed-point sum and count of the records of ``column``
        (:class:`~dpinfer.privacy.fixed_point.ClampedSums`: each record clamped and rounded to a
        grid inside [lower, upper] fixed by the bounds, then summed in integers), for any driver:
        in memory, streamed in chunks or over Dask partitions (:mod:`dpinfer.data.streaming`)."""
        return ClampedSums(column, self.lower, self.upper, integer=self.integer_records)

    @refuse_removed_keywords(FLAT_RELEASE_KEYWORDS, positional=(2, "privacy_rng"))
    def release_sums(
        self,
        sums: ExactSums,
        *,
        context: ReleaseContext | None = None,
        label: str = "",
    ) -> PrivateRelease:
        """Release the statistic of the exact totals of :meth:`exact_sums` over every record.

        Every record was validated on its own during the pass (module docstring): a non-finite
        record, or a non-integer one for the geometric mechanism, refuses the release, and a mean
        needs exactly the public n records. The value is ``float(K)·g`` (sum), ``/n`` (mean),
        with the count for ``sum_and_count``: a function of the integers alone, hence the same
        whatever the chunking. Nothing is charged before every check has passed. ``context`` and
        ``label`` are those of :meth:`~dpinfer.privacy.mechanisms.base.Mechanism.release`.
        """
        if sums.flags["nonfinite"][0]:
            raise InvalidDataError(
                f"{self.name}: some records are NaN or infinite; remove or impute them before the "
                "release. Nothing was charged or released."
            )
        if self.integer_records and sums.flags["kind"][0]:
            raise InvalidDataError(
                f"{self.name}: the geometric mechanism releases sums of integer records, and some "
                "records are not integers (records are checked one by one, whatever their sum; the "
                "values are confidential and not shown). Round them by a public rule first, or use "
                "mechanism='laplace'. Nothing was charged or released."
            )
        total, count = sums.totals
        value = float(total) * clamp_grid(self.lower, self.upper)[0]  # ×g: exact (a power of two)
        if self.kind == "sum":
            stat = np.array([value])
        elif self.kind == "sum_and_count":
            stat = np.array([value, float(count)])
        else:
            if count != self.n:
                raise InvalidDataError(
                    f"{self.name}: the mean is over the public n = {self.n} records; the data hold a "
                    "different number (a varying number of records needs statistic='sum_and_count'). "
                    "Nothing was charged or released."
                )
            stat = np.array([value / self.n])
        return self.release(stat, context=context, label=label)

    def G(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.inner.G(s, u)

    def log_density(self, s_dp: np.ndarray, s: np.ndarray) -> np.ndarray:
        return self.inner.log_density(s_dp, s)

    def event(self) -> PrivacyEvent:
        return self.inner._release_event()

    @property
    def lattice(self) -> np.ndarray | None:
        return self.inner.lattice

    @property
    def output_range(self) -> tuple[float, float]:
        return self.inner.output_range

    def details(self) -> dict[str, Any]:
        clamp = [self.lower, self.upper]
        out = {"statistic": self.kind, "clamp": clamp, "n": self.n, **self.inner.details()}
        if self.data_range is not None:
            out["data_range"] = list(self.data_range)
        return out

    def check_observed(self, s_dp: Any) -> np.ndarray:
        return self.inner.check_observed(s_dp)

    def validate_statistic_range(self, s: np.ndarray) -> None:
        self.inner.validate_statistic_range(s)

    def _prepare_release(
        self, s: np.ndarray, *, unsafe_float_release: bool = False
    ) -> Callable[[PrivacyRNG], np.ndarray]:
        return self.inner._prepare_release(s, unsafe_float_release=unsafe_float_release)

    def __repr__(self) -> str:
        return f"clamped_release({self.kind!r}, {self.lower:g}, {self.upper:g}, n={self.n}, {self.inner!r})"


def clamped_release(
    statistic: str,
    lower: float,
    upper: float,
    epsilon: float,
    *,
    n: int | None = None,
    mechanism: str = "laplace",
    delta: float = 0.0,
    neighbouring: str = "replace-one",
    count_share: float = 0.5,
    data_range: tuple[float, float] | None = None,
) -> ClampedRelease:
    """The release of a clamped mean or sum of scalar records, sensitivity from the clamp bounds.

    Parameters
    ----------
    statistic
        ``"mean"``, ``"sum"`` or ``"sum_and_count"`` (table in the module docstring).
    lower, upper
        The clamp interval of each record (integers for ``mechanism="geometric"``).
    epsilon
        Privacy level of the whole release.
    n
        The public number of records (needed for ``"mean"``; for ``"sum"`` under replace-one it
        gives the statistic's range).
    mechanism
        ``"laplace"`` (ε-DP), ``"gaussian"`` ((ε, δ)-DP, analytic calibration; needs ``delta``)
        or ``"geometric"`` (ε-DP, integer sums only).
    neighbouring
        ``"replace-one"`` or ``"add-remove"``.
    count_share
        For ``"sum_and_count"``: the share of ε (and δ) spent on the count.
    data_range
        The public range (lo, hi) of a record's values by the data's schema, in its units. The
        clamp interval is checked against it (module docstring): refused when disjoint from it,
        a :class:`~dpinfer.errors.PrivacyWarning` when it covers less than half of it. Only public
        information is used; the records themselves are never inspected for this.

    Raises
    ------
    InvalidDataError
        For a mean under add-remove, a mean without n, ``sum_and_count`` under replace-one, a
        geometric mechanism on a non-integer statistic, bad bounds, or bounds disjoint from
        ``data_range``.
    """
    if statistic not in STATISTICS:
        raise InvalidDataError(f"statistic must be one of {STATISTICS}, got {statistic!r}.")
    if mechanism not in NOISES:
        raise InvalidDataError(f"mechanism must be one of {NOISES}, got {mechanism!r}.")
    lo, hi = float(lower), float(upper)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InvalidDataError(
            f"the clamp bounds must be finite with lower < upper, got ({lower!r}, {upper!r})."
        )
    schema = _check_data_range(lo, hi, data_range)
    eps, relation = check_epsilon(epsilon), check_relation(neighbouring)
    if mechanism == "geometric" and (statistic == "mean" or lo != round(lo) or hi != round(hi)):
        raise InvalidDataError(
            "the geometric mechanism releases integer sums: use statistic='sum' or 'sum_and_count' with "
            f"integer clamp bounds (got {statistic!r}, [{lower}, {upper}]), or mechanism='laplace'."
        )
    if (mechanism == "gaussian") != (float(delta) > 0):
        raise InvalidDataError(
            f"delta > 0 goes with mechanism='gaussian' only (got mechanism={mechanism!r}, delta={delta!r})."
        )
    if n is not None and (int(n) != n or n < 1):
        raise InvalidDataError(f"n must be a positive integer, got {n!r}.")
    n = None if n is None else int(n)
    reach = max(abs(lo), abs(hi))  # what adding or removing one record moves the sum by
    if statistic == "mean":
        if relation == "add-remove":
            raise InvalidDataError(
                "a clamped mean under add-remove has no sensitivity that does not depend on the private n. "
                "Use neighbouring='replace-one' with the public n (sensitivity (upper - lower)/n), or "
                "statistic='sum_and_count' and simulate both the sum and the count in the model."
            )
        if n is None:
            raise InvalidDataError(
                "a clamped mean needs the public number of records n (sensitivity (upper - lower)/n)."
            )
        inner = _noise(mechanism, (hi - lo) / n, eps, delta, relation, ([lo], [hi]))
    elif statistic == "sum":
        sens = hi - lo if relation == "replace-one" else reach
        bounds = ([n * lo], [n * hi]) if (n is not None and relation == "replace-one") else None
        inner = _noise(mechanism, sens, eps, delta, relation, bounds)
    else:
        if relation == "replace-one":
            raise InvalidDataError(
                "statistic='sum_and_count' is for add-remove (under replace-one n is public: release the sum "
                "or the mean)."
            )
        share = float(count_share)
        if not 0.0 < share < 1.0:
            raise InvalidDataError(f"count_share must lie strictly between 0 and 1, got {count_share!r}.")
        inner = ComposedMechanism([
            _noise(mechanism, reach if mechanism != "geometric" else math.ceil(reach), eps * (1 - share),
                   delta * (1 - share), relation, None),
            _noise(mechanism, 1.0 if mechanism != "geometric" else 1, eps * share, delta * share, relation,
                   ([0.0], [np.inf])),
        ])
    return ClampedRelease(statistic, lo, hi, n, inner, eps, schema)


def _check_data_range(lo: float, hi: float, data_range: Any) -> tuple[float, float] | None:
    """The clamp [lo, hi] against the column's public range (module docstring)."""
    if data_range is None:
        return None
    try:
        a, b = (float(v) for v in data_range)
    except (TypeError, ValueError):
        raise InvalidDataError(f"data_range must be (lower, upper), got {data_range!r}.") from None
    if not (math.isfinite(a) and math.isfinite(b) and a < b):
        raise InvalidDataError(f"data_range must be finite with lower < upper, got {data_range!r}.")
    covered = max(0.0, min(hi, b) - max(lo, a)) / (b - a)
    if covered == 0.0:
        raise InvalidDataError(
            f"the clamp bounds [{lo:g}, {hi:g}] lie outside the data's declared range [{a:g}, {b:g}]: every "
            "record would be clamped to one bound and the release would carry no information about "
            "the data while spending the budget. Choose clamp bounds in the data's units. Nothing was "
            "charged or released."
        )
    if covered < 0.5:
        warnings.warn(
            f"the clamp bounds [{lo:g}, {hi:g}] cover {covered:.0%} of the data's declared range "
            f"[{a:g}, {b:g}]: records outside them are clamped, so the release may say little about the "
            "data. Check that the bounds are in the data's units (this check uses the declared range "
            "only, never the records).",
            PrivacyWarning,
            stacklevel=3,
        )
    return a, b


__all__ = ["ClampedRelease", "STATISTICS", "clamped_release"]
