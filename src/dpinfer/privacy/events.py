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
:func:`to_replace_one` (add-remove guarantees imply replace-one guarantees, not conversely).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidPrivacyParameterError, NeighbouringRelationError
from .validation import check_delta, check_epsilon, check_relation

REPLACE_ONE = "replace-one"
ADD_REMOVE = "add-remove"


@dataclass(frozen=True)
class PrivacyEvent:
    """Base class of all events (never instantiated directly)."""

    def __post_init__(self) -> None:
        check_relation(self.neighbouring)  # type: ignore[attr-defined]

    @property
    def relation(self) -> str:
        """The neighbouring relation of this event (alias of ``neighbouring``)."""
        return self.neighbouring  # type: ignore[attr-defined]


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
    P(Z = z) ∝ exp(-|z|·ε/sensitivity). The privacy loss of every output is at most ε exactly
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
    (dp-accounting's discrete Gaussian PLD). The continuous Gaussian's curve is *not* assumed.
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


def _check_subsampled_gaussian(event: Any) -> None:
    """Validate and normalise (q, σ, T) of a subsampled Gaussian event in place."""
    try:
        q = float(event.sampling_rate)
    except (TypeError, ValueError):
        q = math.nan
    if isinstance(event.sampling_rate, (bool, str)) or not (0.0 < q <= 1.0):
        raise InvalidPrivacyParameterError(f"sampling_rate must lie in (0, 1], got {event.sampling_rate!r}.")
    sigma = check_noise_multiplier(event.noise_multiplier)
    if isinstance(event.steps, (bool, str)) or int(event.steps) != event.steps or int(event.steps) < 1:
        raise InvalidPrivacyParameterError(f"steps must be an integer >= 1, got {event.steps!r}.")
    object.__setattr__(event, "sampling_rate", q)
    object.__setattr__(event, "noise_multiplier", sigma)
    object.__setattr__(event, "steps", int(event.steps))


@dataclass(frozen=True)
class PoissonSubsampledGaussianEvent(PrivacyEvent):
    """``steps`` rounds of a Gaussian sum query on a Poisson subsample (DP-SGD / DPVI).

    Each record is included independently with probability ``sampling_rate``; per-record
    contributions are clipped to norm C and N(0, (noise_multiplier·C)²) noise is added.
    """

    sampling_rate: float
    noise_multiplier: float
    steps: int
    neighbouring: str = ADD_REMOVE

    def __post_init__(self) -> None:
        _check_subsampled_gaussian(self)
        super().__post_init__()


@dataclass(frozen=True)
class SampledWithReplacementGaussianEvent(PrivacyEvent):
    """``steps`` rounds of a Gaussian sum query on fixed-size batches drawn *with replacement*.

    The DPVI paper's sampling (Jälkö, Dikmen & Honkela 2017): each step draws B = ⌊q·N⌋ records
    uniformly with replacement (``sampling_rate`` = q), clips each contribution to norm C and adds
    N(0, (noise_multiplier·C)²) noise. No tight analysis of this scheme is implemented: only the
    ``"advanced"`` accountant accepts it, and it applies the *paper's convention*, which analyses
    the batch as a q-subsample and ignores that a record can be drawn more than once in a batch
    (probability about B²/(2N²) per step). The PLD and RDP accountants refuse it. It is its own
    type, rather than a Poisson event, so that a ledger records what actually ran.
    """

    sampling_rate: float
    noise_multiplier: float
    steps: int
    neighbouring: str = REPLACE_ONE

    def __post_init__(self) -> None:
        _check_subsampled_gaussian(self)
        super().__post_init__()


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


def to_replace_one(event: PrivacyEvent) -> PrivacyEvent:
    """Convert an add-remove event into the replace-one event it implies.

    A replacement is a removal followed by an addition, so sensitivities under replace-one are at
    most twice those under add-remove (group privacy with k = 2):

    * Laplace(ε) and SVT(c, ε) -> the same with 2ε; discrete Laplace (ε, Δ) -> (2ε, 2Δ),
    * discrete Gaussian (σ, Δ) -> (σ, 2Δ),
    * Gaussian(σ) -> Gaussian(σ/2) (the L2 sensitivity doubles),
    * Known(ε, δ) -> Known(2ε, (1 + e^ε)δ) (group privacy, Dwork & Roth 2014, Thm 2.2),
    * Poisson-subsampled (or with-replacement) Gaussian: the same mechanism analysed under
      replace-one (its noise multiplier is relative to the per-example clip norm under both
      relations).

    Replace-one events are returned unchanged. The converse conversion is not valid in general
    and is not offered.
    """
    if event.neighbouring == REPLACE_ONE:
        return event
    if isinstance(event, ComposedEvent):
        return ComposedEvent(tuple(to_replace_one(e) for e in event.events))
    if isinstance(event, (LaplaceEvent, SparseVectorEvent)):
        return dataclasses.replace(event, epsilon=2 * event.epsilon, neighbouring=REPLACE_ONE)
    if isinstance(event, DiscreteLaplaceEvent):
        return DiscreteLaplaceEvent(2 * event.epsilon, 2 * event.sensitivity, REPLACE_ONE)
    if isinstance(event, DiscreteGaussianEvent):
        return DiscreteGaussianEvent(event.sigma, 2 * event.sensitivity, event.dimension, REPLACE_ONE)
    if isinstance(event, GaussianEvent):
        return GaussianEvent(event.noise_multiplier / 2, neighbouring=REPLACE_ONE)
    if isinstance(event, KnownEvent):
        delta = (1.0 + math.exp(event.epsilon)) * event.delta
        if delta >= 1.0:
            raise InvalidPrivacyParameterError(
                f"group privacy turns {event} into a vacuous guarantee (delta >= 1)."
            )
        return KnownEvent(2 * event.epsilon, delta, REPLACE_ONE, event.description)
    if isinstance(event, (PoissonSubsampledGaussianEvent, SampledWithReplacementGaussianEvent)):
        return dataclasses.replace(event, neighbouring=REPLACE_ONE)
    raise InvalidPrivacyParameterError(f"no replace-one conversion known for {event!r}.")


#: The mechanism (leaf) event types of the privacy core, all of which the "pld", "rdp" and
#: "advanced" accountants can analyse (each may refuse particular parameter choices).
#: :class:`SampledWithReplacementGaussianEvent` is deliberately not among them: only the
#: "advanced" accountant interprets it, by the DPVI paper's convention.
LEAF_EVENT_TYPES: tuple[type[PrivacyEvent], ...] = (
    LaplaceEvent,
    DiscreteLaplaceEvent,
    GaussianEvent,
    DiscreteGaussianEvent,
    SparseVectorEvent,
    PoissonSubsampledGaussianEvent,
    KnownEvent,
)

_EVENT_TYPES: dict[str, type[PrivacyEvent]] = {
    cls.__name__: cls
    for cls in (
        LaplaceEvent,
        DiscreteLaplaceEvent,
        GaussianEvent,
        DiscreteGaussianEvent,
        SparseVectorEvent,
        PoissonSubsampledGaussianEvent,
        SampledWithReplacementGaussianEvent,
        KnownEvent,
        ComposedEvent,
    )
}


def event_to_dict(event: PrivacyEvent) -> dict[str, Any]:
    """A JSON-ready dictionary of an event (``{"type": ..., fields...}``)."""
    out: dict[str, Any] = {"type": type(event).__name__}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if f.name == "events":
            value = [event_to_dict(e) for e in value]
        out[f.name] = value
    return out


def event_from_dict(data: dict[str, Any]) -> PrivacyEvent:
    """Inverse of :func:`event_to_dict`."""
    data = dict(data)
    kind = data.pop("type", None)
    if kind not in _EVENT_TYPES:
        raise InvalidPrivacyParameterError(f"unknown privacy event type {kind!r}.")
    if kind == "ComposedEvent":
        data["events"] = tuple(event_from_dict(e) for e in data.get("events", ()))
    return _EVENT_TYPES[kind](**data)


def describe(event: PrivacyEvent) -> str:
    """A one-line human-readable description of an event."""
    if isinstance(event, ComposedEvent):
        return "Composed[" + ", ".join(describe(e) for e in event.events) + "]"
    fields = ", ".join(
        f"{f.name}={getattr(event, f.name)!r}"
        for f in dataclasses.fields(event)
        if f.name not in ("neighbouring", "description")
    )
    return f"{type(event).__name__}({fields}; {event.neighbouring})"
