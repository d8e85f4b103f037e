"""Results of rejection ABC and ABCDP: the accepted θ, persistence and ArviZ export.

``save(PATH)`` writes ``PATH.npz`` in the common ``dpinfer.result`` format
(:mod:`dpinfer.results.format`: arrays ``accepted`` and ``accepted_index``; ``n_draws``,
``epsilon_abc``, ``meta`` and, for ABCDP, ``c``, ``b`` and ``resample`` as JSON fields; the privacy
report in the common metadata) and returns its path. :meth:`ABCResult.write_release_json` writes the
human-readable :meth:`ABCResult.release_dict` (the ABCDP release as it is published, what
``dpinfer abcdp --out release.json`` writes beside ``release.npz``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidDataError
from ..models.shipped.registry import make_abcdp_model
from ..models.synthesis import synthesize_from
from ..privacy.report import PrivacyReport
from ..results.format import Record, ResultFile, draws_to_arviz
from ..results.synthetic import SyntheticData
from ..sizes import check_allocation


def _paths(path: str | Path) -> tuple[Path, Path]:
    p = Path(path)
    if p.suffix in (".npz", ".json"):
        p = p.with_suffix("")
    return p.with_name(p.name + ".npz"), p.with_name(p.name + ".json")


def check_param_names(param_names: Any, p: int) -> None:
    """``param_names``: none, or one per θ coordinate (checked on the first batch, before the charge)."""
    if len(param_names) not in (0, p):
        raise InvalidDataError(f"{len(param_names)} param_names for θ of {p} coordinates.")


@dataclass
class ABCResult(ResultFile):
    """Accepted parameters of a (non-private) rejection-ABC run.

    Attributes
    ----------
    accepted
        The accepted θ, shape (n_accepted, p), in stream order.
    accepted_index
        Their positions t (0-based) in the stream.
    n_draws
        How many (θ_t, Y_t) pairs were examined (the algorithm may stop early).
    epsilon_abc
        The ABC threshold.
    param_names
        Names of the p parameters.
    meta
        Free-form JSON-ready facts (model, distance, seed, ...).
    """

    accepted: np.ndarray
    accepted_index: np.ndarray
    n_draws: int
    epsilon_abc: float
    param_names: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.accepted_index = np.asarray(self.accepted_index, dtype=np.int64).reshape(-1)
        acc = np.asarray(self.accepted, dtype=np.float64)
        if acc.ndim == 1:
            acc = acc.reshape(self.accepted_index.size, -1) if acc.size else acc.reshape(0, 1)
        self.accepted = acc
        self.n_draws = int(self.n_draws)
        if not self.param_names:
            self.param_names = tuple(f"theta_{i}" for i in range(self.accepted.shape[1]))
        self.param_names = tuple(self.param_names)

    @property
    def private(self) -> bool:
        """Whether the result carries a differential-privacy guarantee."""
        return False

    @property
    def n_accepted(self) -> int:
        return int(self.accepted_index.size)

    @property
    def indicators(self) -> np.ndarray:
        """The 0/1 answers τ̃_1..τ̃_{n_draws} (rebuilt from the accepted positions)."""
        out = np.zeros(self.n_draws, dtype=np.uint8)
        out[self.accepted_index] = 1
        return out

    @property
    def posterior_mean(self) -> np.ndarray:
        """Mean of the accepted θ (NaN if nothing was accepted)."""
        if self.n_accepted == 0:
            return np.full(self.accepted.shape[1], np.nan)
        return self.accepted.mean(axis=0)

    @property
    def privacy(self) -> PrivacyReport | None:
        """None: rejection ABC releases nothing private (:class:`ABCDPResult` carries a report)."""
        return None

    def mean(self) -> np.ndarray:
        """``(1/c) Σ θ_accepted``, the posterior mean (NaN if nothing was accepted)."""
        return self.posterior_mean

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        """``n`` draws from the accepted θ, uniformly with replacement (post-processing)."""
        if self.n_accepted == 0:
            raise InvalidDataError("nothing was accepted: there is no posterior sample to draw from.")
        rng = np.random.default_rng(seed)
        check_allocation(f"sample({n})", n, len(self.param_names))
        return self.accepted[rng.integers(0, self.n_accepted, size=int(n))]

    def synthesize(self, n: int, seed: Any = None, model: Any = None) -> SyntheticData:
        """``n`` synthetic records from the posterior predictive: θ from this posterior, data from
        the model (:func:`dpinfer.models.synthesis.synthesize_from`). Post-processing of the
        release: no further privacy cost; the result's ``privacy_report()`` says so.
        ``model`` defaults to the ABCDP model named in ``meta["model"]``."""
        if model is None and self.meta.get("model"):
            model = make_abcdp_model(str(self.meta["model"]))
        return synthesize_from(self, n, seed, model)
    # -- persistence -------------------------------------------------------------------------
    def _json(self) -> dict[str, Any]:
        return {
            "kind": type(self).__name__,
            "n_draws": self.n_draws,
            "epsilon_abc": self.epsilon_abc,
            "param_names": list(self.param_names),
            "meta": self.meta,
        }

    def release_dict(self) -> dict[str, Any]:
        """Everything the result holds, JSON-ready (indicators as accepted positions): for ABCDP,
        the release as published (``dpinfer abcdp --out`` and the ``.json`` of :meth:`save`)."""
        out = self._json()
        out["accepted"] = self.accepted.tolist()
        out["accepted_index"] = self.accepted_index.tolist()
        out["posterior_mean"] = self.posterior_mean.tolist()
        return out

    def _to_record(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        fields = {k: v for k, v in self._json().items() if k not in ("kind", "param_names", "privacy")}
        return fields, {"accepted": self.accepted, "accepted_index": self.accepted_index}

    @classmethod
    def _from_record(cls, record: Record, **kwargs: Any) -> ABCResult:
        f = dict(record.fields)
        common = dict(
            accepted=record.arrays["accepted"],
            accepted_index=record.arrays["accepted_index"],
            n_draws=f.pop("n_draws"),
            epsilon_abc=f.pop("epsilon_abc"),
            param_names=record.param_names,
            meta=f.pop("meta", {}),
        )
        if issubclass(cls, ABCDPResult):
            return cls(privacy=record.privacy, **f, **common)
        return cls(**common)

    def save(self, path: str | Path) -> Path:
        """Write ``PATH.npz`` (``release.json`` → ``release.npz``); returns its path."""
        return super().save(_paths(path)[0])

    def write_release_json(self, path: str | Path) -> Path:
        """Write the readable :meth:`release_dict` to ``path`` (``.json`` appended without a
        suffix), beside the result file; returns its path."""
        p = _paths(path)[1]
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(self.release_dict(), indent=2, default=float))
        return p

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> ABCResult:
        """Read a result written by :meth:`save` (an :class:`ABCDPResult` if private); for
        ``release.json`` the ``release.npz`` beside it."""
        return super().load(_paths(path)[0], **kwargs)

    def to_arviz(self, n_draws: int | None = None, seed: Any = 0) -> Any:
        """The accepted θ as an ``arviz.InferenceData`` (one chain of the accepted samples, or
        ``n_draws`` draws from them), with the ABCDP release's privacy report on the ``posterior``
        group (needs arviz installed)."""
        draws = self.accepted if n_draws is None else self.sample(int(n_draws), seed)
        return draws_to_arviz(draws, tuple(self.param_names), self.privacy, n_draws_simulated=self.n_draws,
                              epsilon_abc=self.epsilon_abc)

    def summary(self) -> str:
        mean = ", ".join(f"{n}={v:.4g}" for n, v in zip(self.param_names, self.posterior_mean, strict=True))
        return (
            f"{type(self).__name__}: {self.n_accepted} accepted of {self.n_draws} draws "
            f"(epsilon_abc={self.epsilon_abc:g}); posterior mean: {mean}"
            + ("" if self.private else "\n  NON-PRIVATE: NOT differentially private (rejection ABC on the "
               "observed data without noise): do not publish it or anything computed from it")
        )


@dataclass
class ABCDPResult(ABCResult):
    """The release of ABCDP (Algorithm 1): indicators / accepted θ and the privacy report.

    Attributes (besides those of :class:`ABCResult`)
    ------------------------------------------------
    c
        The requested number of acceptances (the run stops at the c-th).
    b
        The threshold noise scale: the Laplace scale (threshold Lap(b), distance Lap(2b)), or with
        ``noise="gaussian"`` the threshold noise std σ1.
    resample
        Whether the threshold was redrawn after each acceptance.
    privacy
        The :class:`~dpinfer.privacy.PrivacyReport` of the :class:`SparseVectorEvent` (or the
        :class:`GaussianSparseVectorEvent`).
    noise
        ``"laplace"`` (Algorithm 1) or ``"gaussian"`` (Gaussian SVT in Rényi DP).
    sigma_query
        With ``noise="gaussian"``, the distance noise std σ2 (0 for Laplace: Lap(2b)).
    """

    c: int = 1
    b: float = 0.0
    resample: bool = False
    privacy: PrivacyReport | None = None
    noise: str = "laplace"
    sigma_query: float = 0.0

    @property
    def private(self) -> bool:
        return self.privacy is not None

    def _json(self) -> dict[str, Any]:
        out = super()._json()
        out.update(
            c=int(self.c),
            b=float(self.b),
            resample=bool(self.resample),
            privacy=self.privacy.to_dict() if self.privacy is not None else None,
            noise=str(self.noise),
            sigma_query=float(self.sigma_query),
        )
        return out

    def summary(self) -> str:
        text = super().summary() + f"\n  c={self.c}, b={self.b:.4g}, resample={self.resample}"
        if self.privacy is not None:
            text += "\n" + self.privacy.summary()
        return text
