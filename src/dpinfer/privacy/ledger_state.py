"""A budget's composed state: each charge composes one event into it, at a cost independent of
the number of earlier charges.

Recomposing every recorded event at every charge costs O(n) per charge (issue #35: 6.7 s per
charge after 200 distinct PLD events). Composition is associative, so the ledger keeps, per data
set and in the charge's own transaction, the composition of everything charged so far, and a
charge composes only its own event into it:

* ``pld``: the composed privacy-loss distribution, its probability masses on the loss grid
  ``k·Δ`` of the budget (Δ = the accountant's ``value_discretization_interval``, 1e-4, chosen
  once), one new leaf PLD composed by FFT per charge (dp-accounting's ``compose``, which truncates
  a tail mass of at most 1e-15 pessimistically: the left tail onto the first point kept, the
  right tail to the infinite loss), and the ε of pure leaves above ε = 20, which the accountant
  composes basically (:meth:`~dpinfer.privacy.accountants.pld.PLDAccountant.leaf_basic`). Two
  pessimistic coarsenings keep it bounded, both valid upper bounds (a loss rounded *up* only
  increases every δ(ε) = E[(1 - e^{ε-L})₊]): a leaf that needs a coarser grid (the accountant's
  :meth:`~dpinfer.privacy.accountants.pld.PLDAccountant.leaf_resolution`, for tiny noise multipliers)
  coarsens the state to the next integer multiple of its grid, and a support wider than
  :data:`MAX_POINTS` points merges pairs of grid points onto the upper one (Δ doubles).
* ``rdp``: the Rényi curve on a fixed grid of orders (the accountant's orders extended
  geometrically, ratio 1.05, up to its ``max_order``; curves add, Mironov 2017 Prop. 1), plus
  basic-composition parts (ε, δ) for leaves the accountant composes basically, converted by
  dp-accounting's ``compute_epsilon`` (as the accountant does) at δ minus their δ.
* ``pure``: (Σε, Σδ) (Dwork & Roth 2014, Thm 3.16).
* ``advanced``: no state (its δ' is shared among all Gaussian events, so it is not a fold); the
  ledger recomposes the history at each charge, as before.

The state is serialised compactly (:func:`dumps`: a JSON header and float64 arrays) into the
``budget_state`` table with the id of the last charge composed into it; a ledger whose state is
missing or older than its last charge (a ledger written by an earlier version) rebuilds it from
the recorded events at its next charge. :meth:`~dpinfer.privacy.ledger.Ledger.recompute` replays
the events through the same fold and compares with a full recomposition by the accountant.

The per-leaf analyses are the accountants' own, reached through :func:`leaf_pld`,
:func:`leaf_curve` and :func:`leaf_basic` only.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..deferred import DeferredModule
from .accountants import get_accountant
from .accountants.base import Accountant
from .accountants.pld import PLDAccountant
from .accountants.pure import pure_totals
from .accountants.rdp import RDPAccountant
from .events import PrivacyEvent, flatten

if TYPE_CHECKING:
    from dp_accounting.pld import pld_pmf
    from dp_accounting.pld import privacy_loss_distribution as pld_lib
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib
else:  # imported at the first accounting, not at start-up (see dpinfer.deferred)
    pld_pmf = DeferredModule("dp_accounting.pld.pld_pmf")
    pld_lib = DeferredModule("dp_accounting.pld.privacy_loss_distribution")
    rdp_lib = DeferredModule("dp_accounting.rdp.rdp_privacy_accountant")

__all__ = [
    "MAX_POINTS", "ComposedState", "build", "dumps", "empty", "leaf_basic", "leaf_curve", "leaf_pld", "loads",
]

#: Grid points the composed PLD may hold before pairs of points are merged (pessimistically).
MAX_POINTS = 1 << 18
#: Tail mass dp-accounting's composition may truncate, pessimistically, per composition.
TAIL_MASS_TRUNCATION = 1e-15
_MAGIC = b"DPST1"


# -- the accountants' per-leaf analyses (the one place this module reaches into them) -----------
def leaf_pld(accountant: PLDAccountant, leaf: PrivacyEvent, vdi: float) -> pld_lib.PrivacyLossDistribution:
    """The PLD of one leaf event on the loss grid ``vdi`` (the accountant's own analysis)."""
    return accountant.leaf_pld(leaf, vdi)


def leaf_curve(accountant: RDPAccountant, leaf: PrivacyEvent, orders: np.ndarray) -> np.ndarray:
    """The Rényi curve of one leaf event at ``orders`` (the accountant's own analysis)."""
    return accountant.leaf_curve(leaf, orders)


def leaf_basic(accountant: RDPAccountant, leaf: PrivacyEvent) -> tuple[float, float]:
    """The (ε, δ) of a leaf the RDP accountant composes basically rather than through its curve
    (e.g. a known (ε, δ > 0) guarantee; (0, 0) for most leaves)."""
    return accountant.leaf_basic(leaf)


def _pld_leaf_is_basic(accountant: PLDAccountant, leaf: PrivacyEvent) -> float | None:
    """The ε of a pure leaf the PLD accountant composes basically (ε > 20), else None."""
    big = accountant.leaf_basic(leaf)
    return big if big > 0.0 else None


def _rdp_orders(accountant: RDPAccountant) -> np.ndarray:
    """The accountant's orders, extended geometrically (ratio 1.05) up to its ``max_order``: every
    order its grid extension could reach, so that the optimum of the conversion is on the grid."""
    orders = np.asarray(accountant.orders, dtype=np.float64)
    if not accountant.extend:
        return orders
    top = float(orders.max())
    steps = int(math.floor(math.log(accountant.max_order / top) / math.log(1.05)))
    more = top * 1.05 ** np.arange(1, max(steps, 0) + 1)
    return np.concatenate([orders, more[more <= accountant.max_order]])


def _pmf_epsilon(part: tuple[int, np.ndarray, float], vdi: float, delta: float) -> float:
    """The smallest ε with hockey-stick divergence <= ``delta`` of one PLD direction: the same
    computation as dp-accounting's ``DensePLDPmf.get_epsilon_for_delta`` (a Python loop from the
    largest loss down, 20 000 iterations at 10⁴ charges), with its running sums as cumulative
    sums. For losses l_j in descending order with masses p_j, before visiting j,
    U_j = p_inf + Σ_{i<j} p_i and L_j = Σ_{i<j} e^{-l_i} p_i; the answer is
    ln((U - δ)/L) at the first j with U_j > δ, L_j > 0 and ln((U_j - δ)/L_j) >= l_j (Sommer,
    Meiser & Mohammadi 2019; Koskela et al. 2020), with dp-accounting's two edge cases."""
    lower, probs, inf_mass = part
    if inf_mass > delta:
        return math.inf
    losses = (lower + np.arange(probs.size - 1, -1, -1)) * vdi  # descending
    p = probs[::-1]
    after_upper = inf_mass + np.cumsum(p)
    after_lower = np.cumsum(np.exp(-losses) * p)
    before_upper = np.concatenate(([inf_mass], after_upper[:-1]))
    before_lower = np.concatenate(([0.0], after_lower[:-1]))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.log((before_upper - delta) / before_lower)
    stop = (before_upper > delta) & (before_lower > 0) & (ratio >= losses)
    underflow = (after_upper >= delta) & (after_lower == 0)
    i_stop = int(np.argmax(stop)) if stop.any() else probs.size
    i_under = int(np.argmax(underflow)) if underflow.any() else probs.size
    if i_under < i_stop:
        return max(0.0, float(losses[i_under]))
    upper, low = (
        (float(before_upper[i_stop]), float(before_lower[i_stop])) if i_stop < probs.size
        else (float(after_upper[-1]), float(after_lower[-1]))
    )
    if upper <= low + delta:
        return 0.0
    return math.log((upper - delta) / low)


# -- the composed states ------------------------------------------------------------------------
@dataclass
class ComposedState:
    """The composition of every event charged to a budget (module docstring). ``kind`` is the
    accountant's name; :meth:`add` returns a new state, :meth:`epsilon` its ε at a δ."""

    kind: str
    count: int = 0
    basic_epsilon: float = 0.0
    basic_delta: float = 0.0
    # pld: the loss grid, and per direction (remove, add) the first grid index, the masses and the
    # mass at +inf; ``add`` is None for a symmetric PLD
    vdi: float = 0.0
    remove: tuple[int, np.ndarray, float] | None = None
    add_pmf: tuple[int, np.ndarray, float] | None = None
    # rdp: the order grid and the curve
    orders: np.ndarray | None = None
    curve: np.ndarray | None = None
    _accountant: Any = field(default=None, repr=False, compare=False)

    @property
    def accountant(self) -> Accountant:
        if self._accountant is None:
            self._accountant = get_accountant(self.kind)
        return self._accountant

    # -- pld ------------------------------------------------------------------------------------
    def _pld(self) -> pld_lib.PrivacyLossDistribution | None:
        if self.remove is None:
            return None

        def pmf(part: tuple[int, np.ndarray, float]) -> pld_pmf.DensePLDPmf:
            return pld_pmf.DensePLDPmf(self.vdi, int(part[0]), part[1], float(part[2]), True)

        return pld_lib.PrivacyLossDistribution(
            pmf(self.remove), None if self.add_pmf is None else pmf(self.add_pmf)
        )

    def _set_pld(self, pld: pld_lib.PrivacyLossDistribution) -> None:
        def part(pmf: Any) -> tuple[int, np.ndarray, float]:
            dense = pmf.to_dense_pmf()
            probs = np.asarray(dense._probs, dtype=np.float64)
            return int(dense._lower_loss), probs, float(dense._infinity_mass)

        self.vdi = float(pld._pmf_remove._discretization)
        self.remove = part(pld._pmf_remove)
        self.add_pmf = None if pld._symmetric else part(pld._pmf_add)

    def _coarsen(self, factor: int) -> None:
        """Merge each ``factor`` grid points onto the upper one (losses rounded up: pessimistic)."""
        if factor <= 1:
            return

        def merge(part: tuple[int, np.ndarray, float] | None) -> tuple[int, np.ndarray, float] | None:
            if part is None:
                return None
            lower, probs, inf_mass = part
            index = lower + np.arange(probs.size)
            coarse = -((-index) // factor)  # ceil(index / factor)
            return int(coarse[0]), np.bincount(coarse - coarse[0], weights=probs), inf_mass

        self.remove = merge(self.remove)
        self.add_pmf = merge(self.add_pmf)
        self.vdi *= factor

    def _add_pld_leaf(self, leaf: PrivacyEvent) -> None:
        assert isinstance(self.accountant, PLDAccountant)
        big = _pld_leaf_is_basic(self.accountant, leaf)
        if big is not None:
            self.basic_epsilon += big
            return
        needed = self.accountant.leaf_resolution(leaf)
        if needed > self.vdi * (1 + 1e-9):  # the leaf needs a coarser grid: coarsen the state
            self._coarsen(int(math.ceil(needed / self.vdi - 1e-9)))
        current = self._pld()
        leaf_dist = leaf_pld(self.accountant, leaf, self.vdi)
        if current is None:
            current = pld_lib.identity(value_discretization_interval=self.vdi)
        self._set_pld(current.compose(leaf_dist, tail_mass_truncation=TAIL_MASS_TRUNCATION))
        widest = max(p[1].size for p in (self.remove, self.add_pmf) if p is not None)
        while widest > MAX_POINTS:
            self._coarsen(2)
            widest = max(p[1].size for p in (self.remove, self.add_pmf) if p is not None)

    # -- all kinds -------------------------------------------------------------------------------
    def add(self, event: PrivacyEvent) -> ComposedState:
        """A new state: this one composed with ``event`` (this one is left as it is)."""
        new = ComposedState(
            self.kind, self.count + 1, self.basic_epsilon, self.basic_delta, self.vdi, self.remove,
            self.add_pmf, self.orders, None if self.curve is None else self.curve.copy(), self._accountant,
        )
        if self.kind == "pure":
            eps, delta = pure_totals(event)
            new.basic_epsilon += eps
            new.basic_delta += delta
            return new
        for leaf in flatten(event):
            if self.kind == "pld":
                new._add_pld_leaf(leaf)
            else:
                assert isinstance(new.accountant, RDPAccountant) and new.orders is not None
                assert new.curve is not None
                new.curve = new.curve + leaf_curve(new.accountant, leaf, new.orders)
                eps, delta = leaf_basic(new.accountant, leaf)
                new.basic_epsilon += eps
                new.basic_delta += delta
        return new

    def epsilon(self, delta: float) -> float:
        """The ε of the composition at ``delta`` (``inf`` if none can be certified)."""
        if self.count == 0:
            return 0.0
        if self.kind == "pure":
            return self.basic_epsilon if self.basic_delta <= delta * (1 + 1e-12) else math.inf
        if self.kind == "pld":
            if self.remove is None:
                return self.basic_epsilon
            parts = [p for p in (self.remove, self.add_pmf) if p is not None]
            return self.basic_epsilon + max(_pmf_epsilon(p, self.vdi, delta) for p in parts)
        rest = delta - self.basic_delta
        if rest <= 0:
            return math.inf
        assert self.orders is not None and self.curve is not None
        if not np.any(self.curve):
            return self.basic_epsilon
        eps, _ = rdp_lib.compute_epsilon(self.orders, self.curve, rest)
        return self.basic_epsilon + float(eps)

    @property
    def points(self) -> int:
        """Grid points held (PLD: both directions; RDP: orders); the size of the state."""
        if self.kind == "pld":
            return sum(p[1].size for p in (self.remove, self.add_pmf) if p is not None)
        return 0 if self.orders is None else int(self.orders.size)


def empty(accountant: str | Accountant) -> ComposedState | None:
    """The state of a budget without charges under ``accountant`` (None: an accountant that is not
    a fold, e.g. ``advanced``; its ledger recomposes the history)."""
    acc = get_accountant(accountant)
    if isinstance(acc, PLDAccountant):
        return ComposedState("pld", vdi=acc.value_discretization_interval, _accountant=acc)
    if isinstance(acc, RDPAccountant):
        orders = _rdp_orders(acc)
        return ComposedState("rdp", orders=orders, curve=np.zeros_like(orders), _accountant=acc)
    if acc.name == "pure":
        return ComposedState("pure", _accountant=acc)
    return None


def build(accountant: str | Accountant, events: Iterable[PrivacyEvent]) -> ComposedState | None:
    """The state after composing ``events`` one by one (what the charges did)."""
    state = empty(accountant)
    if state is None:
        return None
    for event in events:
        state = state.add(event)
    return state


# -- serialisation ---------------------------------------------------------------------------------
def dumps(state: ComposedState) -> bytes:
    """``state`` as bytes: ``DPST1``, a JSON header's length (4 bytes) and the header, then the
    float64 arrays (little-endian) it names."""
    arrays: list[np.ndarray] = []
    header: dict[str, Any] = {
        "kind": state.kind, "count": state.count, "basic_epsilon": state.basic_epsilon,
        "basic_delta": state.basic_delta, "vdi": state.vdi,
    }
    for name in ("remove", "add_pmf"):
        part = getattr(state, name)
        if part is not None:
            header[name] = [part[0], part[2], int(part[1].size)]
            arrays.append(part[1])
    for name in ("orders", "curve"):
        value = getattr(state, name)
        if value is not None:
            header[name] = int(value.size)
            arrays.append(value)
    head = json.dumps(header, separators=(",", ":")).encode()
    body = b"".join(np.ascontiguousarray(a, dtype="<f8").tobytes() for a in arrays)
    return _MAGIC + struct.pack("<I", len(head)) + head + body


def loads(data: bytes | memoryview) -> ComposedState:
    """The state serialised by :func:`dumps`."""
    data = bytes(data)
    if not data.startswith(_MAGIC):
        raise ValueError("not a dpinfer composed state")
    (length,) = struct.unpack("<I", data[len(_MAGIC):len(_MAGIC) + 4])
    start = len(_MAGIC) + 4
    header = json.loads(data[start:start + length])
    offset = start + length

    def take(n: int) -> np.ndarray:
        nonlocal offset
        out = np.frombuffer(data, dtype="<f8", count=n, offset=offset).astype(np.float64)
        offset += 8 * n
        return out

    state = ComposedState(
        header["kind"], int(header["count"]), float(header["basic_epsilon"]),
        float(header["basic_delta"]), float(header["vdi"]),
    )
    for name in ("remove", "add_pmf"):
        if name in header:
            lower, inf_mass, n = header[name]
            setattr(state, name, (int(lower), take(int(n)), float(inf_mass)))
    for name in ("orders", "curve"):
        if name in header:
            setattr(state, name, take(int(header[name])))
    return state
