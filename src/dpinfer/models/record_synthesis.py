"""What a model implements to give synthetic records, and how synthesis finds it.

Each synthetic *record* is an independent draw from the posterior predictive: θ_i from the released
posterior, then one record y_i ~ p(y | θ_i). What a record is depends on the model, so the model
says it itself, by implementing one of two protocols:

* :class:`SupportsRecordSynthesis`, a model that simulates whole records from θ:
  ``record_columns()`` names the columns of one record and ``simulate_records(theta, rng)`` draws
  one record per row of ``theta``. The shipped models do: one point of the mixture of uniforms, a
  whole 18-day curve of the COVID polynomial (the data are one series), one value of the
  Gaussian-mean model, one (x1, x2, y) row of the regression model (its covariates drawn from the
  model's declared public law);
* :class:`SupportsConditionalRecordSynthesis`, a regression that models y given covariates x only
  (DPVI's logistic regression): ``conditional_record_columns(covariates)`` and
  ``simulate_conditional_records(theta, rng, covariates=..., design=...)``, the covariates coming
  from a :class:`~dpinfer.models.covariates.CovariateSource` the caller supplies.

:func:`record_simulator` dispatches on these protocols only, never on a model's type or type name,
so a model of your own gets synthetic records by implementing the methods, without any change to
the library::

    class Coin:
        def record_columns(self):
            return ("heads",)

        def simulate_records(self, theta, rng):
            return (rng.uniform(size=(theta.shape[0], 1)) < theta[:, :1]).astype(float)

    posterior.synthesize(1000, model=Coin(), seed=0)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import InvalidDataError
from .covariates import CovariateSource, as_covariate_source

RecordSimulator = Callable[[np.ndarray, np.random.Generator], np.ndarray]


@runtime_checkable
class SupportsRecordSynthesis(Protocol):
    """A model that simulates whole synthetic records from θ (module docstring)."""

    def record_columns(self) -> tuple[str, ...]:
        """The names of the columns of one record."""

    def simulate_records(self, theta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One record per row of ``theta`` (n, p): an array (n, len(record_columns())), drawn with
        the public simulation randomness ``rng`` only."""


@runtime_checkable
class SupportsConditionalRecordSynthesis(Protocol):
    """A regression that simulates y given covariates x from a :class:`CovariateSource`."""

    def conditional_record_columns(self, covariates: CovariateSource) -> tuple[str, ...]:
        """The names of the columns of one record: the covariates', then one response column."""

    def simulate_conditional_records(
        self,
        theta: np.ndarray,
        rng: np.random.Generator,
        *,
        covariates: CovariateSource,
        design: Mapping[str, Any] | None = None,
    ) -> np.ndarray:
        """One record (x, y) per row of ``theta``: x drawn from ``covariates`` with ``rng``, y from
        the model at θ. ``design``: the fit's design (``result.config["design"]``: public
        ``bounds`` and ``intercept``) that turns raw covariates into the columns θ multiplies."""


def record_simulator(
    model: Any, covariates: Any = None, design: Mapping[str, Any] | None = None
) -> tuple[RecordSimulator, tuple[str, ...]]:
    """``(simulate(thetas, rng) -> records, column names)`` of a model implementing
    :class:`SupportsRecordSynthesis` or :class:`SupportsConditionalRecordSynthesis`.

    ``design``: a conditional model's fit design (``result.config["design"]``).

    Raises
    ------
    InvalidDataError
        For a model implementing neither protocol (e.g. SIR, tuberculosis), for covariates given to
        a model that simulates its own, and for a conditional model without covariates from a
        public or DP source (:func:`~dpinfer.models.covariates.as_covariate_source`).
    """
    if isinstance(model, SupportsConditionalRecordSynthesis):
        source = as_covariate_source(covariates)
        columns = tuple(model.conditional_record_columns(source))

        def conditional(th: np.ndarray, rng: np.random.Generator) -> np.ndarray:
            return model.simulate_conditional_records(th, rng, covariates=source, design=design)

        return conditional, columns
    if not isinstance(model, SupportsRecordSynthesis):
        raise InvalidDataError(
            f"no record-level simulator for model {type(model).__name__}: to give synthetic records a "
            "model implements record_columns() and simulate_records(theta, rng) "
            "(dpinfer.models.record_synthesis.SupportsRecordSynthesis), or, for a regression of y on "
            "covariates, conditional_record_columns(covariates) and simulate_conditional_records(theta, "
            "rng, *, covariates, design) (SupportsConditionalRecordSynthesis). The shipped "
            "mixture-uniform, covid, gaussian-mean and linreg models and DPVI's logistic regression do."
        )
    if covariates is not None:
        raise InvalidDataError(
            f"model {type(model).__name__} simulates whole records from θ: covariates are taken only by "
            "conditional models (a DPVI regression)."
        )
    return model.simulate_records, tuple(model.record_columns())


__all__ = [
    "RecordSimulator",
    "SupportsConditionalRecordSynthesis",
    "SupportsRecordSynthesis",
    "record_simulator",
]
