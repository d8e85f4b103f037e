"""Privacy events: plain frozen data describing what a private release did.

Events say *which mechanism ran with which parameters*; accountants (``accountants/``) turn
them into (epsilon, delta) guarantees. This mirrors the shape of dp-accounting's ``DpEvent``.

Neighbouring relation
---------------------
Every event carries ``neighbouring``, either ``"replace-one"`` (data sets of equal size that
differ in one record) or ``"add-remove"`` (one data set has one extra record). The parameters of
an event are relative to the sensitivity *under that relation*:

* ``LaplaceEvent(epsilon)``: Laplace noise of scale Δ/ε, Δ the sensitivity under the relation.
* ``GaussianEvent(noise_multiplier)``: Gaussian noise of std ``noise_multiplier·Δ₂``.
* ``PoissonSubsampledGaussianEvent``: DP-SGD style; the noise multiplier is relative to the
  per-example clip norm C. Under add-remove a record moves the sum by at most C, under
  replace-one by at most 2C; accountants handle both (as dp-accounting does).

Accountants refuse to compose events under different relations: convert explicitly with
:func:`~dpinfer.privacy.event_conversion.to_replace_one` (add-remove guarantees imply replace-one
guarantees, not conversely). A ledger does this itself: :func:`dpinfer.privacy.admission.admit`
converts a release to its budget's relation where a proven bound exists, or refuses it before the
charge. Serialisation and descriptions are in :mod:`~dpinfer.privacy.event_conversion`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InvalidPrivacyParameterError, NeighbouringRelationError
from .neighbouring import Neighbouring
from .validation import check_delta, check_epsilon, check_relation

#: The relations' plain strings (the values of :class:`~dpinfer.privacy.neighbouring.Neighbouring`,
#: a ``str`` enum equal to them; events store the plain string whichever spelling they are given).
REPLACE_ONE: str = Neighbouring.REPLACE_ONE.value
ADD_REMOVE: str = Neighbouring.ADD_REMOVE.value


@dataclass(frozen=True)
class PrivacyEvent:
    """Base class of all events (never instantiated directly)."""

    if TYPE_CHECKING:  # every event is a frozen dataclass with this field

        @property
        def neighbouring(self) -> str: ...

    def __post_init__(self) -> None:  # the plain string: events print and hash the same either way
        object.__setattr__(self, "neighbouring", check_relation(self.neighbouring))

    @property
    def relation(self) -> str:
        """The neighbouring relation of this event (alias of ``neighbouring``)."""
        return self.neighbouring


@dataclass(frozen=True)
class LaplaceEvent(PrivacyEvent):
    """A Laplace mechanism with scale Δ/ε: pure ε-DP."""

    epsilon: float
    neighbouring: str = REPLACE_ONE

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        super().__post_init__()


@dataclass(frozen=True)
class GaussianEvent(PrivacyEvent):
    """A Gaussian mechanism with noise std ``noise_multiplier`` times the L2 sensitivity."""

    noise_multiplier: float
    neighbouring: str = REPLACE_ONE

    def __post_init__(self) -> None:
        sigma = check_noise_multiplier(self.noise_multiplier)
        object.__setattr__(self, "noise_multiplier", sigma)
        super().__post_init__()


@dataclass(frozen=True)
class DiscreteLaplaceEvent(PrivacyEvent):
    """Discrete Laplace noise on the integers added to an integer-valued statistic: pure ε-DP.

    The statistic is a value rounded to a grid γ and expressed in grid units; ``sensitivity`` is
    its (integer) L1 sensitivity in grid units under ``neighbouring``, and the noise has
    ``P(Z = z) ∝ exp(-|z|·ε/sensitivity)``. The privacy loss of every output is at most ε exactly
    (Ghosh, Roughgarden & Sundararajan 2012; Canonne, Kamath & Steinke 2020, §2): no
    floating-point slack, since the sampler is exact and the release is an integer times γ.
    """

    epsilon: float
    sensitivity: int = 1
    neighbouring: str = REPLACE_ONE

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        _check_integer_sensitivity(self)
        super().__post_init__()


@dataclass(frozen=True)
class DiscreteGaussianEvent(PrivacyEvent):
    """Discrete Gaussian noise N_Z(0, σ²) per coordinate on an integer-valued statistic.

    ``sigma`` and ``sensitivity`` (the L2 sensitivity) are in grid units; ``dimension`` is the
    number of coordinates. Canonne, Kamath & Steinke (2020): the release is ½(Δ/σ)²-zCDP in any
    dimension (Theorem 14), i.e. has the Rényi curve of the continuous Gaussian, which is what the
    ``"rdp"`` accountant uses; in one dimension with an integer sensitivity its exact privacy
    curve is that of Theorem 7, which the ``"pld"`` accountant evaluates
    (dp-accounting's discrete Gaussian PLD). In more dimensions the ``"pld"`` accountant uses a
    dominating PLD built from the zCDP curve (:mod:`dpinfer.privacy.dominating`). The
    continuous Gaussian's curve is *not* assumed.
    """

    sigma: float
    sensitivity: float = 1.0
    dimension: int = 1
    neighbouring: str = REPLACE_ONE

    def __post_init__(self) -> None:
        sigma = float(self.sigma)
        if not math.isfinite(sigma) or sigma <= 0:
            raise InvalidPrivacyParameterError(f"sigma must be positive and finite, got {self.sigma!r}.")
        sens = float(self.sensitivity)
        if not math.isfinite(sens) or sens <= 0:
            raise InvalidPrivacyParameterError(
                f"sensitivity must be positive and finite, got {self.sensitivity!r}."
            )
        dim = self.dimension
        if isinstance(dim, bool) or int(dim) != dim or int(dim) < 1:
            raise InvalidPrivacyParameterError(f"dimension must be an integer >= 1, got {self.dimension!r}.")
        if int(self.dimension) == 1 and sens != math.floor(sens):
            raise InvalidPrivacyParameterError(
                f"a one-dimensional discrete Gaussian needs an integer sensitivity, got {sens!r}."
            )
        check_noise_multiplier(sigma / sens, "sigma / sensitivity")
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "sensitivity", sens)
        object.__setattr__(self, "dimension", int(self.dimension))
        super().__post_init__()

    @property
    def noise_multiplier(self) -> float:
        """σ / Δ₂ (the quantity that fixes the Rényi curve)."""
        return self.sigma / self.sensitivity


def _check_integer_sensitivity(event: Any) -> None:
    sens = event.sensitivity
    if isinstance(sens, bool) or not isinstance(sens, (int, float)) or int(sens) != sens or int(sens) < 1:
        raise InvalidPrivacyParameterError(
            f"sensitivity must be an integer >= 1 (grid units), got {sens!r}."
        )
    object.__setattr__(event, "sensitivity", int(sens))


@dataclass(frozen=True)
class SparseVectorEvent(PrivacyEvent):
    """The sparse vector technique as used by ABCDP (Algorithm 1): pure ε-DP.

    Theorem 1 of Park, Vinaroz & Jitkrittum (2021): with threshold noise Lap(b) and query noise
    Lap(2b), stopping after ``c`` positive answers, the release is ``epsilon``-DP for
    b = (c+1)Δρ/ε (one threshold draw) or b = 2cΔρ/ε (threshold redrawn after each positive
    answer, ``resample=True``), whatever the number of queries.
    """

    c: int
    epsilon: float
    resample: bool = False
    neighbouring: str = REPLACE_ONE

    def __post_init__(self) -> None:
        if int(self.c) != self.c or int(self.c) < 1:
            raise InvalidPrivacyParameterError(f"c must be an integer >= 1, got {self.c!r}.")
        object.__setattr__(self, "c", int(self.c))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "resample", bool(self.resample))
        super().__post_init__()


@dataclass(frozen=True)
class GaussianSparseVectorEvent(PrivacyEvent):
    """The sparse vector technique with Gaussian noise, stopping after ``c`` positive answers.

    Threshold noise N(0, (``threshold_noise_multiplier``·Δ)²), query noise
    N(0, (``query_noise_multiplier``·Δ)²), Δ the queries' sensitivity, at most ``max_queries`` k
    queries answered (public, fixed before the run). With ``resample`` the threshold is redrawn
    after each positive answer (c AboveThreshold rounds). Not pure DP: the ``"rdp"``
    accountant uses the Rényi curve of :func:`dpinfer.privacy.gaussian_svt.gaussian_svt_rdp`
    (Zhu & Wang 2020, Theorem 8), the ``"pld"`` accountant a dominating PLD built from it
    (:mod:`dpinfer.privacy.dominating`).
    """

    c: int
    threshold_noise_multiplier: float
    query_noise_multiplier: float
    max_queries: int
    resample: bool = False
    neighbouring: str = REPLACE_ONE

    def __post_init__(self) -> None:
        for name in ("c", "max_queries"):
            v = getattr(self, name)
            if isinstance(v, (bool, str)) or int(v) != v or int(v) < 1:
                raise InvalidPrivacyParameterError(f"{name} must be an integer >= 1, got {v!r}.")
            object.__setattr__(self, name, int(v))
        if self.c > self.max_queries:
            raise InvalidPrivacyParameterError(
                f"c={self.c} exceeds max_queries={self.max_queries}: at most k answers can be positive."
            )
        for name in ("threshold_noise_multiplier", "query_noise_multiplier"):
            object.__setattr__(self, name, check_noise_multiplier(getattr(self, name), name))
        object.__setattr__(self, "resample", bool(self.resample))
        super().__post_init__()


#: Smallest noise multiplier (σ / sensitivity) an event accepts: below it ε exceeds ~1e4 at any
#: useful δ and the privacy-loss arithmetic of the accountants overflows.
MIN_NOISE_MULTIPLIER = 1e-3


def check_noise_multiplier(value: Any, name: str = "noise_multiplier") -> float:
    """``value`` as a float after checking it is finite and >= :data:`MIN_NOISE_MULTIPLIER`."""
    try:
        sigma = float(value)
    except (TypeError, ValueError):
        raise InvalidPrivacyParameterError(f"{name} must be a positive number, got {value!r}.") from None
    if isinstance(value, (bool, str)) or not math.isfinite(sigma) or sigma <= 0:
        raise InvalidPrivacyParameterError(f"{name} must be positive and finite, got {value!r}.")
    if sigma < MIN_NOISE_MULTIPLIER:
        raise InvalidPrivacyParameterError(
            f"{name}={value!r} is below {MIN_NOISE_MULTIPLIER:g}: such a release gives no meaningful "
            "privacy (epsilon in the tens of thousands) and cannot be accounted. Use more noise "
            "(e.g. calibrate it to a target epsilon)."
        )
    return sigma


@dataclass(frozen=True)
class _SubsampledGaussianEvent(PrivacyEvent):
    """``steps`` rounds of a Gaussian sum query on a subsample (the fields and their checks).

    ``sampling_rate`` q lies in (0, 1], ``noise_multiplier`` σ is relative to the per-example clip
    norm C (at least :data:`MIN_NOISE_MULTIPLIER`) and ``steps`` T is an integer >= 1. The
    sampling scheme is the subclass's: the accountants tell the subclasses apart.
    """

    sampling_rate: float
    noise_multiplier: float
    steps: int
    neighbouring: str = ADD_REMOVE

    def __post_init__(self) -> None:
        try:
            q = float(self.sampling_rate)
        except (TypeError, ValueError):
            q = math.nan
        if isinstance(self.sampling_rate, (bool, str)) or not (0.0 < q <= 1.0):
            raise InvalidPrivacyParameterError(
                f"sampling_rate must lie in (0, 1], got {self.sampling_rate!r}."
            )
        sigma = check_noise_multiplier(self.noise_multiplier)
        steps = self.steps
        if isinstance(steps, (bool, str)) or int(steps) != steps or int(steps) < 1:
            raise InvalidPrivacyParameterError(f"steps must be an integer >= 1, got {steps!r}.")
        object.__setattr__(self, "sampling_rate", q)
        object.__setattr__(self, "noise_multiplier", sigma)
        object.__setattr__(self, "steps", int(steps))
        super().__post_init__()


@dataclass(frozen=True)
class PoissonSubsampledGaussianEvent(_SubsampledGaussianEvent):
    """``steps`` rounds of a Gaussian sum query on a Poisson subsample (DP-SGD / DPVI).

    Each record is included independently with probability ``sampling_rate``; per-record
    contributions are clipped to norm C and N(0, (noise_multiplier·C)²) noise is added.
    """


@dataclass(frozen=True)
class SampledWithReplacementGaussianEvent(_SubsampledGaussianEvent):
    """``steps`` rounds of a Gaussian sum query on fixed-size batches drawn *with replacement*.

    The DPVI paper's sampling (Jälkö, Dikmen & Honkela 2017): each step draws B = ⌊q·N⌋ records
    uniformly with replacement (``sampling_rate`` = q), clips each contribution to norm C and adds
    N(0, (noise_multiplier·C)²) noise. No tight analysis of this scheme is implemented. The
    ``"advanced"`` accountant applies the *paper's convention*, which analyses the batch as a
    q-subsample and ignores that a record can be drawn more than once in a batch (probability
    about B²/(2N²) per step). The PLD and RDP accountants use a valid but loose dominating bound
    that reveals the record's multiplicity (:mod:`dpinfer.privacy.dominating`; replace-one only).
    It is its own type, rather than a Poisson event, so that a ledger records what actually ran.
    """

    neighbouring: str = REPLACE_ONE


@dataclass(frozen=True)
class KnownEvent(PrivacyEvent):
    """A mechanism with its own (ε, δ) proof, e.g. the binomial mechanism of Xiong et al. (Prop. 4)."""

    epsilon: float
    delta: float = 0.0
    neighbouring: str = REPLACE_ONE
    description: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        super().__post_init__()


@dataclass(frozen=True)
class ComposedEvent(PrivacyEvent):
    """Sequential composition of several events on the same data set."""

    events: tuple[PrivacyEvent, ...] = ()
    neighbouring: str = ""

    def __post_init__(self) -> None:
        events = tuple(self.events)
        for e in events:
            if not isinstance(e, PrivacyEvent):
                raise InvalidPrivacyParameterError(
                    f"ComposedEvent takes PrivacyEvent instances, got {type(e).__name__}."
                )
        relations = {e.neighbouring for e in events}
        if len(relations) > 1:
            raise NeighbouringRelationError(
                "cannot compose events under different neighbouring relations "
                f"{sorted(relations)}; convert the add-remove events with "
                "dpinfer.privacy.to_replace_one(event) first."
            )
        relation = self.neighbouring or (relations.pop() if relations else REPLACE_ONE)
        if events and relation != events[0].neighbouring:
            raise NeighbouringRelationError(
                f"ComposedEvent declared {relation!r} but its events are {events[0].neighbouring!r}."
            )
        object.__setattr__(self, "events", events)
        object.__setattr__(self, "neighbouring", relation)
        super().__post_init__()


def compose(*events: PrivacyEvent) -> ComposedEvent:
    """Compose events, flattening nested compositions."""
    flat: list[PrivacyEvent] = []
    for e in events:
        flat.extend(flatten(e))
    return ComposedEvent(tuple(flat))


def flatten(event: PrivacyEvent) -> list[PrivacyEvent]:
    """The leaf events of an event (itself unless it is a composition)."""
    if isinstance(event, ComposedEvent):
        out: list[PrivacyEvent] = []
        for e in event.events:
            out.extend(flatten(e))
        return out
    return [event]


#: The mechanism (leaf) event types of the privacy core that the "pld", "rdp" and "advanced"
#: accountants all analyse (each may refuse particular parameter choices). The "pld" and "rdp"
#: accountants also analyse :class:`GaussianSparseVectorEvent` and (replace-one)
#: :class:`SampledWithReplacementGaussianEvent` (``accountants.base.ALL_LEAF_TYPES``).
LEAF_EVENT_TYPES: tuple[type[PrivacyEvent], ...] = (
    LaplaceEvent,
    DiscreteLaplaceEvent,
    GaussianEvent,
    DiscreteGaussianEvent,
    SparseVectorEvent,
    PoissonSubsampledGaussianEvent,
    KnownEvent,
)

#: Every leaf event type of the privacy core: the "pld" and "rdp" accountants accept each of them
#: (a with-replacement batch under replace-one only), with a tight analysis or a valid dominating
#: one (:mod:`dpinfer.privacy.dominating`).
ALL_LEAF_EVENT_TYPES: tuple[type[PrivacyEvent], ...] = (
    *LEAF_EVENT_TYPES,
    GaussianSparseVectorEvent,
    SampledWithReplacementGaussianEvent,
)

#: The leaf types whose noise is Gaussian (no pure-DP guarantee: δ must be > 0).
GAUSSIAN_EVENT_TYPES: tuple[type[PrivacyEvent], ...] = (
    GaussianEvent,
    GaussianSparseVectorEvent,
    DiscreteGaussianEvent,
    PoissonSubsampledGaussianEvent,
    SampledWithReplacementGaussianEvent,
)

#: Every event type by class name: the one list of the privacy core's event classes (serialised
#: events, :func:`~dpinfer.privacy.event_conversion.event_from_dict`, the accountants' dispatch).
EVENT_TYPES: dict[str, type[PrivacyEvent]] = {
    cls.__name__: cls for cls in (*ALL_LEAF_EVENT_TYPES, ComposedEvent)
}
