"""The one release path: validate → charge → draw on a data-independent grid → report.

Every value that leaves the data owner is produced inside :meth:`ReleaseContext.release`:

1. every input and size is validated (nothing may be charged before all checks pass): by the
   caller before it calls :meth:`ReleaseContext.release`, or by ``prepare``, a function passed to
   it that does the checks and returns the draw, and runs *before* the charge;
2. the event is charged to the ledger (or, without one, the release warns loudly that it is
   unaccounted and its report says so);
3. the draw runs with the context's :class:`~dpinfer.privacy.rng.PrivacyRNG` (OS entropy unless a
   test passes the insecure deterministic one); draws are privacy's own samplers
   (:mod:`dpinfer.privacy.discrete`, :mod:`dpinfer.privacy.grid`, :mod:`dpinfer.privacy.mechanisms`);
4. the caller builds the report from the same event.

Code outside :mod:`dpinfer.privacy` never holds a ``PrivacyRNG`` of its own: it receives a
:class:`ReleaseContext` and hands it to privacy's release functions. Every release takes it the same
way, ``context=ReleaseContext(ledger=..., dataset=..., privacy_rng=..., purpose=..., charged_by=...)``
as a keyword (issue 37: the flat ``ledger=``/``dataset=``/``privacy_rng=``/``rng=`` keywords are
refused with a TypeError naming it, :data:`FLAT_RELEASE_KEYWORDS`). The architecture test
(``tests/test_architecture.py``) fails when a module outside ``privacy/`` imports the RNG or a
sampler, or when a public function that takes ``context`` also takes ``ledger``, ``privacy_rng``
or ``rng``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import DPInferError, InvalidPrivacyParameterError
from .events import PrivacyEvent
from .ledger import charge_or_warn
from .rng import PrivacyRNG, as_privacy_rng

if TYPE_CHECKING:
    from .ledger import Ledger

T = TypeVar("T")


@dataclass(frozen=True)
class ReleaseContext:
    """Where a release is charged and where its secret randomness comes from.

    Parameters
    ----------
    ledger, dataset
        The budget the release is charged to (both, or neither: an unaccounted release warns).
    privacy_rng
        A :class:`~dpinfer.privacy.PrivacyRNG`, or None for a fresh one (OS entropy). Seeds and
        numpy Generators are refused: a user's seed never determines privacy noise.
    label
        The ledger label of the release.
    purpose
        Why the release is made (free text, recorded with its charge).
    charged_by
        An application identity recorded with the charge (e.g. the analyst a service acts for),
        next to the OS user or database role the ledger authenticates; None: that identity alone.
    """

    ledger: Ledger | None = None
    dataset: str | None = None
    privacy_rng: Any = None
    label: str = ""
    purpose: str = ""
    charged_by: str | None = None
    _gen: PrivacyRNG = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.label, str):
            raise InvalidPrivacyParameterError(
                f"a release label must be a string, got {type(self.label).__name__}."
            )
        object.__setattr__(self, "_gen", as_privacy_rng(self.privacy_rng))
        if self.ledger is not None and (self.purpose or self.charged_by is not None):
            # every charge through this context's ledger (also those made by privacy's release
            # functions that take the ledger itself) records the purpose and identity
            object.__setattr__(
                self, "ledger", self.ledger.acting(purpose=self.purpose, charged_by=self.charged_by)
            )
        if self.ledger is not None and not self.dataset:
            raise InvalidPrivacyParameterError(
                "a ledger charge needs the dataset name: ReleaseContext(ledger=..., dataset=...) (with a "
                "schema, the name of its data set)."
            )

    @classmethod
    def of(cls, context: ReleaseContext | None = None, *, label: str = "") -> ReleaseContext:
        """``context`` checked (a fresh unaccounted context when None), labelled ``label`` unless it
        has a label of its own: how a release gives its ledger label a default.

        The flat keywords ``ledger=``, ``dataset=`` and ``privacy_rng=`` that this method once
        merged into a context are gone (issue 37): every release takes
        ``context=ReleaseContext(...)`` and refuses them (:data:`FLAT_RELEASE_KEYWORDS`).

        Raises
        ------
        TypeError
            ``context`` is not a :class:`ReleaseContext`.
        """
        if context is None:
            return cls(label=label)
        if not isinstance(context, ReleaseContext):
            raise TypeError(
                f"context must be a ReleaseContext, got {type(context).__name__}: pass "
                "context=ReleaseContext(ledger=..., dataset=..., privacy_rng=...)."
            )
        if not label or context.label:
            return context
        return cls(context.ledger, context.dataset, context._gen, label, context.purpose, context.charged_by)

    @property
    def insecure(self) -> bool:
        """True when the noise comes from the deterministic test RNG (flagged in reports)."""
        return bool(self._gen.deterministic)

    @property
    def accounted(self) -> bool:
        """True when releases are charged to a ledger."""
        return self.ledger is not None

    def release(
        self,
        event: PrivacyEvent,
        draw: Callable[[PrivacyRNG], T] | None = None,
        *,
        what: str,
        label: str = "",
        stacklevel: int = 4,
        prepare: Callable[[], Callable[[PrivacyRNG], T]] | None = None,
    ) -> T:
        """Validate (``prepare``), charge ``event`` (or warn that it is unaccounted), then return
        ``draw(rng)``.

        Every check that can fail must have run before the charge: in the caller, or in
        ``prepare()``, which runs first and returns the draw (pass ``draw`` or ``prepare``, not
        both). An error after the charge keeps the charge (marked ``failed`` in the ledger)
        because the noise may already depend on the data; such an error (a
        :class:`~dpinfer.errors.DPInferError`) is marked ``charged = True`` and its message says
        that the release was charged, so that it is never mistaken for a refusal.
        """
        if not isinstance(event, PrivacyEvent):
            raise InvalidPrivacyParameterError(f"a release needs a PrivacyEvent, got {type(event).__name__}.")
        if (draw is None) == (prepare is None):
            raise InvalidPrivacyParameterError("a release takes draw= or prepare=, exactly one of them.")
        run = draw if prepare is None else prepare()  # the checks run here, before the charge
        with charge_or_warn(
            self.ledger, self.dataset, event, label=label or self.label or what, insecure=self.insecure,
            what=what, stacklevel=stacklevel, purpose=self.purpose, charged_by=self.charged_by,
        ):
            try:
                return run(self._gen)  # type: ignore[misc]
            except DPInferError as exc:
                if self.ledger is not None and not getattr(exc, "charged", False):
                    exc.args = (f"{exc} (This error came AFTER the release was charged to {self.dataset!r}: "
                                "the charge is kept, marked failed in the ledger.)",)
                    exc.charged = True  # type: ignore[attr-defined]
                raise

    def draw(self, draw: Callable[[PrivacyRNG], T]) -> T:
        """Run ``draw`` with this context's RNG *inside* a release already charged by the caller
        (e.g. the later queries of a sparse vector whose whole event was charged up front)."""
        return draw(self._gen)


#: The flat keywords that ``context=ReleaseContext(...)`` replaced in every release (issue 37): a
#: release entry point decorated with ``refuse_removed_keywords(FLAT_RELEASE_KEYWORDS)`` refuses
#: ``ledger=``, ``dataset=`` and ``privacy_rng=`` with a TypeError naming the one convention.
FLAT_RELEASE_KEYWORDS: dict[str, str | tuple[str, str]] = {
    "ledger": "context=ReleaseContext",
    "dataset": "context=ReleaseContext",
    "privacy_rng": "context=ReleaseContext",
    "rng": ("context=ReleaseContext", "privacy_rng"),
}
