"""One posterior interface for every inference method: :class:`InferenceResult`.

:func:`dpinfer.infer` wraps whatever its chosen method returned (an SMC-ABC population, tempered
SMC particles, importance-sampling draws, a neural posterior) in an :class:`InferenceResult`,
which offers the same operations for all of them:

* ``sample(n, seed)``, ``mean()``, ``sd()``, ``interval(level)`` — weighted summaries for
  particle methods, summaries of ``n_draws`` draws otherwise;
* ``weights`` (None for methods without), ``param_names``, ``privacy`` / ``epsilon`` / ``delta``
  of the release analysed;
* ``method`` and ``reason`` (what :func:`~dpinfer.infer` chose and why), ``findings`` (the
  warnings of :mod:`dpinfer.diagnostics.checks`);
* ``to_arviz()`` (parameter names as variables, ε, δ and the method as attributes, the weighted
  particles and their weights as ``constant_data``), ``save``/``load`` in the one
  ``dpinfer.result`` format (the wrapped result's fields and arrays inside), ``plot()`` a pair plot
  (:meth:`dpinfer.results.format.ResultFile.plot`, titled with the method chosen).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..results.format import Record, ResultFile, draws_to_arviz, result_class
from ..results.weighted import weighted_to_arviz
from ..sizes import check_allocation


def decimals_for(sd: float) -> int:
    """Decimals that show ``sd`` to three significant digits (0 to 6): a count with sd 10 prints
    as ``412.6``, a rate with sd 0.004 as ``0.12345``."""
    if not (np.isfinite(sd) and sd > 0):
        return 4
    return int(min(6, max(0, 2 - math.floor(math.log10(sd)))))


def summary_rows(names: tuple[str, ...], mean: Any, sd: Any, ci: Any) -> list[str]:
    """One aligned line per parameter: mean, sd and 95% interval, each to the precision its sd
    warrants (:func:`decimals_for`); the columns line up whatever the magnitudes."""
    cells = []
    for i, name in enumerate(names):
        k = decimals_for(float(sd[i]))
        values = (mean[i], sd[i], ci[i, 0], ci[i, 1])
        cells.append((str(name), *(f"{v:.{k}f}" for v in values)))
    widths = [max(len(c[j]) for c in cells) for j in range(5)] if cells else [0] * 5
    return [
        f"  {c[0]:>{widths[0]}s}: mean {c[1]:>{widths[1]}s}  sd {c[2]:>{widths[2]}s}  "
        f"95% CI ({c[3]:>{widths[3]}s}, {c[4]:>{widths[4]}s})"
        for c in cells
    ]


class InferenceResult(ResultFile):
    """A posterior from :func:`dpinfer.infer` (module docstring)."""

    def __init__(
        self,
        result: Any,
        method: str,
        reason: str,
        findings: list[dict[str, str]] | None = None,
        details: dict[str, Any] | None = None,
        n_draws: int = 4000,
    ) -> None:
        self.result = result
        self.method = method
        self.reason = reason
        self.findings = list(findings or [])
        self.details = dict(details or {})
        self.n_draws = int(n_draws)
        self._draws: np.ndarray | None = None

    # -- the common interface ------------------------------------------------------------------
    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(self.result.param_names)

    @property
    def privacy(self) -> Any:
        return getattr(self.result, "privacy", None)

    @property
    def epsilon(self) -> float | None:
        return None if self.privacy is None else float(self.privacy.epsilon)

    @property
    def delta(self) -> float | None:
        return None if self.privacy is None else float(self.privacy.delta)

    @property
    def weights(self) -> np.ndarray | None:
        """Normalised weights of the particles (None for a method that returns draws)."""
        if hasattr(self.result, "particles") and hasattr(self.result, "weights"):
            return np.asarray(self.result.weights)
        return None

    @property
    def particles(self) -> np.ndarray | None:
        return np.asarray(self.result.particles) if self.weights is not None else None

    def draws(self) -> np.ndarray:
        """``n_draws`` equal-weight draws (cached; seed 0)."""
        if self._draws is None:
            self._draws = np.asarray(self.sample(self.n_draws, 0), dtype=np.float64)
        return self._draws

    def sample(self, n: int, seed: Any = 0) -> np.ndarray:
        """``n`` draws of θ, shape ``(n, dim)``."""
        check_allocation(f"sample({n})", n, len(self.param_names))
        return np.asarray(self.result.sample(int(n), seed), dtype=np.float64)

    def mean(self) -> np.ndarray:
        w = self.weights
        return w @ self.particles if w is not None else self.draws().mean(axis=0)

    def sd(self) -> np.ndarray:
        w = self.weights
        if w is None:
            return self.draws().std(axis=0, ddof=1)
        d = self.particles - self.mean()
        return np.sqrt(w @ d**2)

    def interval(self, level: float = 0.95) -> np.ndarray:
        """Equal-tailed marginal credible intervals, shape ``(dim, 2)``."""
        if self.weights is not None:
            return np.asarray(self.result.interval(level))
        return np.quantile(self.draws(), [0.5 - level / 2, 0.5 + level / 2], axis=0).T

    def summary(self) -> str:
        mean, sd, ci = self.mean(), self.sd(), self.interval()
        lines = [f"{self.method}: {self.reason}"]
        lines += summary_rows(tuple(self.param_names), mean, sd, ci)
        lines += [f"  warning: {f['message']}" for f in self.findings]
        return "\n".join(lines)

    def to_arviz(self, n_draws: int | None = None, seed: Any = 0) -> Any:
        """An ``arviz.InferenceData``: draws under the parameter names, the analysed release's
        privacy report and the method chosen on the ``posterior`` group; for a weighted method
        (default one draw per particle) chains of independent resamples, the weights' ESS in the
        attrs, the particles and weights as ``constant_data`` and the observed release as
        ``observed_data`` (:func:`~dpinfer.results.weighted.weighted_to_arviz`)."""
        if self.weights is not None and self.particles is not None:
            # a weighted particle set: chains of independent resamples, the weights' ESS in attrs
            return weighted_to_arviz(self, n_draws or self.weights.size, seed,
                                     observed=getattr(self.result, "observed", None),
                                     method=self.method, reason=self.reason)
        if hasattr(self.result, "log_prob") and hasattr(self.result, "to_arviz"):
            # a neural posterior: its own chains and log densities, labelled with infer's choice
            idata = self.result.to_arviz(n_draws or self.n_draws, seed)
            idata.posterior.attrs.update(method=self.method, reason=self.reason)
            return idata
        draws = self.sample(n_draws or self.n_draws, seed)
        return draws_to_arviz(draws, tuple(self.param_names), self.privacy, method=self.method,
                              reason=self.reason)

    # -- persistence --------------------------------------------------------------------------
    def _to_record(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        inner_fields, inner_arrays = self.result._to_record()
        fields = {
            "method": self.method,
            "reason": self.reason,
            "findings": self.findings,
            "details": self.details,
            "n_draws": self.n_draws,
            "inner_type": type(self.result).__name__,
            "inner_module": type(self.result).__module__,
            "inner_fields": inner_fields,
        }
        return fields, {f"inner__{k}": v for k, v in inner_arrays.items()}

    @classmethod
    def _from_record(cls, record: Record, **kwargs: Any) -> InferenceResult:
        f = record.fields
        meta = {"version": 1, "type": f["inner_type"], "module": f["inner_module"]}
        klass = result_class(meta, Path("<inner result>"))
        inner = Record(
            type=f["inner_type"],
            param_names=record.param_names,
            privacy=record.privacy,
            fields=f["inner_fields"],
            arrays={k[len("inner__"):]: v for k, v in record.arrays.items() if k.startswith("inner__")},
        )
        result = klass._from_record(inner, **kwargs)
        return cls(
            result, f["method"], f["reason"], f.get("findings"), f.get("details"), f.get("n_draws", 4000)
        )


__all__ = ["InferenceResult"]
