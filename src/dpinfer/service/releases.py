"""Declarative release requests: validated from public facts, planned, charged, drawn, stored.

No analyst code runs on the owner's host: a request is a JSON object (pydantic models below) that
names a data set, columns of its public schema and the release's parameters. Its handling:

1. **plan** (:func:`plan`): the mechanism is built from the request and the *public* schema only
   (bounds, categories, the public n under replace-one); a request that cannot be served is
   refused here naming the field (:class:`~dpinfer.service.data.FieldError`). The plan holds the
   privacy event the release will charge.
2. **reserve**: the analyst's allowance and the data set's budget are checked against that event
   *before any work on the data* (:meth:`dpinfer.service.store.Store.reserve`, atomic).
3. **execute**: the library's own release function runs on the records —
   :meth:`~dpinfer.privacy.mechanisms.clamped.ClampedRelease.release_records` (clamped
   mean/sum/sum-and-count), :meth:`~dpinfer.privacy.mechanisms.counts.GeometricMechanism.release`
   (count, histogram), :func:`~dpinfer.release.glm.release_glm_statistics` (private GLM),
   :func:`~dpinfer.release.synthesis.release_covariate_model` (covariate model for synthesis) — with a
   :class:`~dpinfer.privacy.context.ReleaseContext` whose ledger is :class:`ServiceLedger`: the
   library's charge goes to the real ledger, labelled with the request and the analyst, after
   checking that the event is the planned one (else nothing is charged).
4. **store** the release with the request (:meth:`~dpinfer.service.store.Store.finish`) before
   the answer is sent.

A **dry run** plans and executes the same request on the public dummy data set
(:func:`dpinfer.service.data.dummy_records`) with no ledger: free, and marked ``dry_run``.

Crash recovery (:func:`recover`): a request found ``reserved``/``charged`` when the service starts
was interrupted. If its charge is in the ledger (the label carries the request id), the release is
drawn now under that charge (:class:`ServiceLedger` with ``prepaid``: the event is checked, nothing
is charged again) and stored, marked ``recovered``: the interrupted process never sent its draw
(answers are sent only after :meth:`finish`), so exactly one value is published per charge. If the
ledger has no such charge, the request is ``aborted`` (nothing charged, nothing released).
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..data import Schema
from ..errors import InvalidPrivacyParameterError
from ..privacy.context import ReleaseContext
from ..privacy.event_conversion import event_to_dict
from ..privacy.events import PrivacyEvent
from ..privacy.mechanisms.clamped import clamped_release
from ..privacy.mechanisms.counts import GeometricMechanism
from ..privacy.mechanisms.gaussian import GaussianMechanism
from .data import FieldError, category_labels, column_bounds, is_numeric, releasable_column

# ---- request models -----------------------------------------------------------------------------


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset: str = Field(min_length=1, max_length=64)
    epsilon: float = Field(gt=0, le=100, allow_inf_nan=False)
    dry_run: bool = False
    purpose: str = Field(default="", max_length=200)


class ClampedRequest(_Request):
    """A clamped mean, sum, or sum and count of one numeric column
    (:func:`~dpinfer.privacy.mechanisms.clamped.clamped_release`). ``lower``/``upper`` default to
    the column's declared bounds."""

    column: str = Field(min_length=1, max_length=64)
    statistic: Literal["mean", "sum", "sum_and_count"] = "mean"
    mechanism: Literal["laplace", "gaussian", "geometric"] = "laplace"
    lower: float | None = Field(default=None, allow_inf_nan=False)
    upper: float | None = Field(default=None, allow_inf_nan=False)
    delta: float = Field(default=0.0, ge=0, lt=1)
    count_share: float = Field(default=0.5, gt=0, lt=1)


class CountRequest(_Request):
    """The number of records, released by the geometric mechanism (add-remove data sets; under
    replace-one n is public and listed with the data set)."""


class HistogramRequest(_Request):
    """Counts of every category (or 0/1, or integer value) of one column, geometric noise."""

    column: str = Field(min_length=1, max_length=64)


class _FeaturesRequest(_Request):
    """A request over named feature columns (at most 16, distinct)."""

    features: list[str] = Field(min_length=1, max_length=16)

    @field_validator("features")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("features must be distinct column names")
        return v


class GLMRequest(_FeaturesRequest):
    """Noisy sufficient statistics of a GLM (:func:`~dpinfer.release.glm.release_glm_statistics`);
    feature and response bounds come from the schema."""

    target: str = Field(min_length=1, max_length=64)
    family: Literal["logistic", "probit", "poisson", "linear"] = "logistic"
    delta: float = Field(default=1e-6, gt=0, lt=1)
    intercept: bool = True


class CovariatesRequest(_FeaturesRequest):
    """A product-of-marginals model of numeric columns, for synthetic records
    (:func:`~dpinfer.release.synthesis.release_covariate_model`): noisy counts on a public grid
    (``bins`` equal-width bins per float column, one per integer value of an int or bool column)."""

    bins: int = Field(default=20, ge=1, le=1000)


class ABCDPRequest(_Request):
    """ABCDP (Park, Vinaroz & Jitkrittum 2021; :func:`~dpinfer.release.abcdp.abcdp`, Laplace sparse
    vector) on simulations the analyst uploaded (``POST /v1/uploads``): the owner computes the RFF
    MMD between each simulated data set and the records of ``columns`` and releases the accepted θ.
    ``bandwidth`` is the analyst's (from the simulations, never from the data)."""

    upload: str = Field(min_length=1, max_length=64)
    columns: list[str] = Field(min_length=1, max_length=16)
    c: int = Field(ge=1, le=100000)
    epsilon_abc: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    bandwidth: float = Field(gt=0, allow_inf_nan=False)
    n_features: int = Field(default=100, ge=1, le=5000)
    feature_seed: int = Field(default=0, ge=0)
    resample: bool = False


class DPVIRequest(_FeaturesRequest):
    """A DPVI fit (Jälkö, Dikmen & Honkela 2017; :class:`~dpinfer.release.dpvi.DPVI`) of a built-in
    model of ``target`` on ``features`` (scaled to [−1, 1] by their declared bounds, with an
    intercept by default), calibrated to (ε, δ) with the data set's accountant. ``steps`` is
    capped by the service (``service.dpvi_max_steps``); ``seed`` drives only the public Monte
    Carlo draws (the batches and the noise come from the owner's CSPRNG)."""

    target: str = Field(min_length=1, max_length=64)
    model: Literal["logistic", "poisson", "gaussian-linear"] = "logistic"
    delta: float = Field(default=1e-6, gt=0, lt=1)
    intercept: bool = True
    steps: int = Field(default=1000, ge=1)
    sampling_rate: float = Field(default=0.05, gt=0, le=1)
    family: Literal["auto", "meanfield", "fullrank"] = "auto"
    prior_scale: float = Field(default=1.0, gt=0, le=1e6, allow_inf_nan=False)
    noise_scale: float = Field(default=1.0, gt=0, le=1e6, allow_inf_nan=False)
    seed: int | None = Field(default=None, ge=0, lt=2**63)


REQUESTS: dict[str, type[_Request]] = {
    "clamped": ClampedRequest,
    "count": CountRequest,
    "histogram": HistogramRequest,
    "glm": GLMRequest,
    "covariates": CovariatesRequest,
    "abcdp": ABCDPRequest,
    "dpvi": DPVIRequest,
}


# ---- plans --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DatasetView:
    """What the planner may know of a data set: its schema and its public n (None under add-remove)."""

    name: str
    schema: Schema
    n: int | None
    dummy_n: int
    #: the accountant of the data set's budget (a DPVI fit is calibrated with it)
    accountant: str = "pld"
    #: the service's cap on a DPVI fit's steps (``service.dpvi_max_steps``)
    dpvi_max_steps: int = 5000


@dataclass
class Plan:
    """A planned release: its kind, normalised parameters, the event it charges and how it runs."""

    kind: str
    dataset: str
    params: dict[str, Any]
    event: PrivacyEvent
    epsilon: float
    #: ``execute(records, context)`` (a DPVI plan also takes ``stop=``, a per-step callback
    #: that may raise to end a dry run)
    execute: Callable[..., dict[str, Any]]


def _report(release: Any) -> dict[str, Any]:
    return release.privacy.to_dict()


def _clamped(req: ClampedRequest, ds: DatasetView, n: int | None) -> Plan:
    spec = releasable_column(ds.schema, req.column)
    if not is_numeric(spec):
        raise FieldError(
            "column",
            f"column {req.column!r} is a {spec.type} column; a clamped {req.statistic} "
            "needs a numeric (float, int or bool) column.",
        )
    lo0, hi0 = column_bounds(spec)
    lo = lo0 if req.lower is None else req.lower
    hi = hi0 if req.upper is None else req.upper
    if not lo < hi:
        raise FieldError("lower", "lower must be below upper.")
    if req.statistic == "mean" and n is None:
        raise FieldError(
            "statistic",
            f"data set {ds.name!r} is add-remove: its n is private, so a mean has no "
            "data-independent sensitivity; request statistic 'sum_and_count'.",
        )
    if req.statistic == "sum_and_count" and ds.schema.neighbouring == "replace-one":
        raise FieldError(
            "statistic", f"data set {ds.name!r} is replace-one (n public): request 'mean' or 'sum'."
        )
    if (req.mechanism == "gaussian") != (req.delta > 0):
        raise FieldError("delta", "delta > 0 goes with mechanism 'gaussian' only.")
    try:
        mech = clamped_release(
            req.statistic,
            lo,
            hi,
            req.epsilon,
            n=n,
            mechanism=req.mechanism,
            delta=req.delta,
            neighbouring=ds.schema.neighbouring,
            count_share=req.count_share,
            data_range=(lo0, hi0),
        )
    except InvalidPrivacyParameterError as exc:
        raise FieldError("epsilon", str(exc)) from None
    except ValueError as exc:  # InvalidDataError: bounds, geometric on non-integers, ...
        field = "mechanism" if "geometric" in str(exc) else "lower"
        raise FieldError(field, str(exc)) from None
    column = req.column

    def execute(records: dict[str, np.ndarray], ctx: ReleaseContext) -> dict[str, Any]:
        rel = mech.release_records(records[column], context=ctx)
        out: dict[str, Any] = {"value": np.asarray(rel.value).tolist(), "privacy": _report(rel)}
        if req.statistic == "mean" and req.mechanism == "laplace" and n is not None:
            # what `dpinfer release --model gaussian-mean` writes: the analyst's commands read it
            out["release_file"] = {
                "observed": out["value"],
                "epsilon": req.epsilon,
                "model": "gaussian-mean",
                "model_args": {"clamp": [lo, hi], "n": n},
                "privacy": out["privacy"],
            }
        return out

    params = {**req.model_dump(), "lower": lo, "upper": hi, "n": n}
    return Plan("clamped", ds.name, params, mech.event(), req.epsilon, execute)


def _count(req: CountRequest, ds: DatasetView) -> Plan:
    if ds.schema.neighbouring == "replace-one":
        raise FieldError(
            "dataset",
            f"data set {ds.name!r} is replace-one: its number of records is public "
            f"({ds.n}) and listed with the data set; nothing to release.",
        )
    mech = GeometricMechanism(1, 1, req.epsilon, "add-remove", ([0.0], [np.inf]))

    def execute(records: dict[str, np.ndarray], ctx: ReleaseContext) -> dict[str, Any]:
        count = float(len(next(iter(records.values()))))
        rel = mech.release(np.array([count]), context=ctx)
        return {"value": np.asarray(rel.value).tolist(), "privacy": _report(rel)}

    return Plan("count", ds.name, req.model_dump(), mech.event(), req.epsilon, execute)


def _histogram(req: HistogramRequest, ds: DatasetView, n: int | None) -> Plan:
    spec = releasable_column(ds.schema, req.column)
    if spec.type == "category":
        labels = category_labels(spec)
    elif spec.type == "bool":
        labels = ["0", "1"]
    elif spec.type == "int":
        lo, hi = column_bounds(spec)
        if hi - lo + 1 > 1000:
            raise FieldError(
                "column",
                f"column {req.column!r} spans more than 1000 integers; a histogram needs at most 1000 bins.",
            )
        labels = [str(v) for v in range(int(math.ceil(lo)), int(math.floor(hi)) + 1)]
    else:
        raise FieldError(
            "column",
            f"column {req.column!r} is a {spec.type} column; a histogram needs a category, "
            "bool or int column.",
        )
    k = len(labels)
    relation = ds.schema.neighbouring
    sens = 2 if relation == "replace-one" else 1  # one record moves one count down and one up
    bounds = ([0.0] * k, [float(n)] * k) if n is not None else ([0.0] * k, [np.inf] * k)
    mech = GeometricMechanism(k, sens, req.epsilon, relation, bounds)
    column = req.column
    offset = 0 if spec.type != "int" else int(math.ceil(column_bounds(spec)[0]))

    def execute(records: dict[str, np.ndarray], ctx: ReleaseContext) -> dict[str, Any]:
        codes = records[column].astype(np.int64) - offset
        counts = np.bincount(codes, minlength=k).astype(np.float64)
        rel = mech.release(counts, context=ctx)
        return {"value": np.asarray(rel.value).tolist(), "labels": labels, "privacy": _report(rel)}

    params = {**req.model_dump(), "labels": labels}
    return Plan("histogram", ds.name, params, mech.event(), req.epsilon, execute)


@functools.lru_cache(maxsize=256)
def _gaussian_event(dim: int, sensitivity: float, epsilon: float, delta: float) -> PrivacyEvent:
    """The event of the GLM's discrete Gaussian release (its calibration is a numerical search:
    remembered for repeated requests; the library calibrates again when it releases, and the two
    events must agree or nothing is charged)."""
    return GaussianMechanism(dim, sensitivity, epsilon, delta, "replace-one").event()


def _glm(req: GLMRequest, ds: DatasetView, n: int | None) -> Plan:
    from ..models.data_spec import DataSpec
    from ..models.glm_release import StatisticLayout
    from ..release.glm import release_glm_statistics

    if ds.schema.neighbouring != "replace-one" or n is None:
        raise FieldError(
            "dataset",
            f"data set {ds.name!r} is add-remove; the private GLM releases under "
            "replace-one neighbours (n public).",
        )
    if req.target in req.features:
        raise FieldError("target", "the target must not also be a feature.")
    y = releasable_column(ds.schema, req.target, field_name="target")
    for j, f in enumerate(req.features):
        spec = releasable_column(ds.schema, f, field_name=f"features[{j}]")
        if not is_numeric(spec):
            raise FieldError(
                f"features[{j}]", f"feature {f!r} is a {spec.type} column; features must be numeric."
            )
    y_bounds: Any = None
    if req.family in ("logistic", "probit"):
        if not (y.type == "bool" or (y.type == "int" and column_bounds(y) == (0.0, 1.0))):
            raise FieldError(
                "target", f"a {req.family} GLM needs a 0/1 target (bool, or int with bounds [0, 1])."
            )
    elif req.family == "poisson":
        lo, hi = column_bounds(y) if is_numeric(y) else (None, None)
        if y.type != "int" or lo != 0:
            raise FieldError("target", "a Poisson GLM needs an int target with declared lower bound 0.")
        y_bounds = hi
    else:
        if not is_numeric(y):
            raise FieldError("target", "a linear GLM needs a numeric target.")
        y_bounds = column_bounds(y)
    bounds = {f: column_bounds(ds.schema.columns[f]) for f in req.features}
    layout = StatisticLayout(len(req.features), False, req.family == "linear")
    try:
        event = _gaussian_event(layout.dim, layout.sensitivity, req.epsilon, req.delta)
    except InvalidPrivacyParameterError as exc:
        raise FieldError("epsilon", str(exc)) from None
    features, target = list(req.features), req.target

    def execute(records: dict[str, np.ndarray], ctx: ReleaseContext) -> dict[str, Any]:
        X = np.column_stack([records[f] for f in features])
        rel = release_glm_statistics(
            X,
            records[target],
            family=req.family,
            epsilon=req.epsilon,
            delta=req.delta,
            data=DataSpec(bounds=bounds, y_bounds=y_bounds, intercept=req.intercept, feature_names=features),
            context=ctx,
        )
        return {"glm_release": rel.to_dict(), "privacy": rel.to_dict()["privacy"], "target": target}

    return Plan("glm", ds.name, {**req.model_dump(), "n": n}, event, req.epsilon, execute)


def _covariates(req: CovariatesRequest, ds: DatasetView) -> Plan:
    from ..release.synthesis import release_covariate_model

    specs = []
    for j, f in enumerate(req.features):
        spec = releasable_column(ds.schema, f, field_name=f"features[{j}]")
        if not is_numeric(spec):
            raise FieldError(
                f"features[{j}]",
                f"feature {f!r} is a {spec.type} column; the covariate model "
                "takes float, int and bool columns.",
            )
        if spec.type == "int":
            lo, hi = column_bounds(spec)
            if hi - lo + 1 > 1000:
                raise FieldError(f"features[{j}]", f"int column {f!r} spans more than 1000 values.")
        specs.append(spec)
    relation = ds.schema.neighbouring
    d = len(specs)
    sens = 2 * d if relation == "replace-one" else d  # one record moves one count per column (x2)
    event = GeometricMechanism(1, sens, req.epsilon, relation).event()
    bounds = [column_bounds(s) for s in specs]
    integer = [s.type in ("int", "bool") for s in specs]
    features = list(req.features)

    def execute(records: dict[str, np.ndarray], ctx: ReleaseContext) -> dict[str, Any]:
        X = np.column_stack([records[f] for f in features])
        model = release_covariate_model(
            X,
            bounds=bounds,
            epsilon=req.epsilon,
            bins=req.bins,
            integer=integer,
            columns=features,
            neighbouring=relation,
            context=ctx,
        )
        doc = model.to_dict()
        return {"covariate_model": doc, "privacy": doc["privacy"]}

    return Plan("covariates", ds.name, req.model_dump(), event, req.epsilon, execute)


def _abcdp(req: ABCDPRequest, ds: DatasetView, upload: Any) -> Plan:
    from ..privacy.events import SparseVectorEvent

    if ds.schema.neighbouring != "replace-one":
        raise FieldError("dataset", f"data set {ds.name!r} is add-remove; ABCDP releases under replace-one.")
    if upload is None:
        raise FieldError("upload", f"no upload {req.upload!r} of yours (POST /v1/uploads first).")
    for j, col in enumerate(req.columns):
        if not is_numeric(releasable_column(ds.schema, col, field_name=f"columns[{j}]")):
            raise FieldError(f"columns[{j}]", f"column {col!r} is not numeric.")
    shapes = upload.shapes
    T, d = shapes["sims"][0], shapes["sims"][2]
    if d != len(req.columns):
        raise FieldError(
            "columns",
            f"the uploaded simulations have {d} value(s) per record, the request "
            f"names {len(req.columns)} column(s).",
        )
    if req.c > T:
        raise FieldError("c", f"c = {req.c} exceeds the number of uploaded draws ({T}).")
    event = SparseVectorEvent(req.c, req.epsilon, resample=req.resample, neighbouring="replace-one")
    columns = list(req.columns)

    def execute(records: dict[str, np.ndarray], ctx: ReleaseContext) -> dict[str, Any]:
        import base64
        import tempfile

        from ..distances import RFFMMD
        from ..release.abcdp import ABCDPOptions, abcdp

        theta, sims = upload.arrays()
        X = np.column_stack([records[c] for c in columns])
        res = abcdp(
            X,
            (theta, sims),
            RFFMMD(req.bandwidth, req.n_features, seed=req.feature_seed),
            c=req.c,
            epsilon_total=req.epsilon,
            epsilon_abc=req.epsilon_abc,
            options=ABCDPOptions(noise="laplace", resample=req.resample, progress=False),
            context=ctx,
            meta={"upload": req.upload, "dataset": ds.name},
        )
        with tempfile.TemporaryDirectory() as tmp:  # the library's own result file, as the answer
            path = res.save(f"{tmp}/abcdp.npz")
            blob = path.read_bytes()
        return {
            "abcdp": res.release_dict(),
            "result_file": base64.b64encode(blob).decode(),
            "privacy": res.privacy.to_dict() if res.privacy else None,
        }

    return Plan("abcdp", ds.name, req.model_dump(), event, req.epsilon, execute)


def _dpvi_target(req: DPVIRequest, y: Any) -> None:
    """Refuse a target the model cannot fit (naming the field ``target``)."""
    if req.model == "logistic" and not (
        y.type == "bool" or (y.type == "int" and column_bounds(y) == (0.0, 1.0))
    ):
        raise FieldError("target", "a logistic model needs a 0/1 target (bool, or int with bounds [0, 1]).")
    if req.model == "poisson" and (y.type != "int" or column_bounds(y)[0] != 0):
        raise FieldError("target", "a Poisson model needs an int target with declared lower bound 0.")
    if req.model == "gaussian-linear" and not is_numeric(y):
        raise FieldError("target", "a gaussian-linear model needs a numeric target.")


def _dpvi(req: DPVIRequest, ds: DatasetView, n: int | None) -> Plan:
    if ds.schema.neighbouring != "replace-one" or n is None:
        raise FieldError(
            "dataset",
            f"data set {ds.name!r} is add-remove; the service's DPVI fits release under replace-one "
            "neighbours (n public, adaptive clipping).",
        )
    if req.steps > ds.dpvi_max_steps:
        raise FieldError("steps", f"steps = {req.steps} exceeds this service's cap of {ds.dpvi_max_steps}.")
    if req.target in req.features:
        raise FieldError("target", "the target must not also be a feature.")
    _dpvi_target(req, releasable_column(ds.schema, req.target, field_name="target"))
    for j, f in enumerate(req.features):
        if not is_numeric(releasable_column(ds.schema, f, field_name=f"features[{j}]")):
            raise FieldError(f"features[{j}]", f"feature {f!r} is not numeric; features must be numeric.")
    if req.sampling_rate * n < 1:
        raise FieldError(
            "sampling_rate", f"sampling_rate * n = {req.sampling_rate * n:g}: batches would be empty."
        )
    accountant = ds.accountant
    if accountant not in ("pld", "rdp"):
        raise FieldError(
            "dataset", f"data set {ds.name!r} is accounted with {accountant!r}; DPVI needs 'pld' or 'rdp'."
        )
    # imported only for a request that passed the checks above (torch loads with them)
    from ..errors import CalibrationError
    from ..models.data_spec import DataSpec
    from ..release.dpvi import DPVI, PrivacyOptions, TrainingOptions, make_model, plan_privacy
    from ..release.dpvi.optim import count_noise_std, gradient_noise_multiplier

    try:  # the fit's own calibration (remembered: the fit finds the same σ and event)
        pp = plan_privacy(
            sampling_rate=req.sampling_rate,
            steps=req.steps,
            delta=req.delta,
            epsilon=req.epsilon,
            accountant=accountant,
        )
        gradient_noise_multiplier(
            pp.noise_multiplier, count_noise_std(req.sampling_rate * n, pp.noise_multiplier)
        )
    except (InvalidPrivacyParameterError, CalibrationError) as exc:
        raise FieldError("epsilon", f"{exc} Nothing was charged.") from None
    dim = len(req.features) + int(req.intercept)
    model_args: dict[str, Any] = {"prior_scale": req.prior_scale}
    if req.model == "gaussian-linear":
        model_args["noise_scale"] = req.noise_scale
    bounds = [column_bounds(ds.schema.columns[f]) for f in req.features]
    features, target = list(req.features), req.target

    def execute(records: dict[str, np.ndarray], ctx: ReleaseContext, stop: Any = None) -> dict[str, Any]:
        X = np.column_stack([records[f] for f in features])
        training = TrainingOptions(steps=req.steps, sampling_rate=req.sampling_rate, callback=stop)
        fit = DPVI(make_model(req.model, dim, **model_args), family=req.family).fit(
            X,
            records[target],
            epsilon=req.epsilon,
            delta=req.delta,
            privacy=PrivacyOptions(accountant=accountant),
            training=training,
            seed=req.seed,
            context=ctx,
            data=DataSpec(intercept=req.intercept, bounds=bounds),
        )
        doc = fit.to_dict()
        doc["config"]["feature_names"] = (["intercept"] if req.intercept else []) + features
        return {"dpvi_result": doc, "privacy": doc["privacy"], "target": target}

    return Plan("dpvi", ds.name, {**req.model_dump(), "n": n}, pp.event, req.epsilon, execute)


def plan(kind: str, req: _Request, ds: DatasetView, upload: Any = None) -> Plan:
    """The plan of a validated request on data set ``ds`` (public facts only; module docstring)."""
    n = ds.n if not req.dry_run or ds.n is None else ds.dummy_n
    if kind == "clamped":
        assert isinstance(req, ClampedRequest)
        return _clamped(req, ds, n)
    if kind == "count":
        assert isinstance(req, CountRequest)
        return _count(req, ds)
    if kind == "histogram":
        assert isinstance(req, HistogramRequest)
        return _histogram(req, ds, n)
    if kind == "glm":
        assert isinstance(req, GLMRequest)
        return _glm(req, ds, n)
    if kind == "covariates":
        assert isinstance(req, CovariatesRequest)
        return _covariates(req, ds)
    if kind == "abcdp":
        assert isinstance(req, ABCDPRequest)
        return _abcdp(req, ds, upload)
    if kind == "dpvi":
        assert isinstance(req, DPVIRequest)
        return _dpvi(req, ds, n)
    raise FieldError("kind", f"unknown release kind {kind!r}.")  # pragma: no cover - routes are fixed


# ---- the ledger seen by the library -------------------------------------------------------------
def _charge_extras(ledger: Any, analyst: str, purpose: str) -> dict[str, Any]:
    """``charged_by``/``purpose`` for ledgers that record who charged (passed where supported)."""
    try:
        params = inspect.signature(ledger.charge).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return {}
    out: dict[str, Any] = {}
    if "charged_by" in params:
        out["charged_by"] = analyst
    if "purpose" in params:
        out["purpose"] = purpose
    return out


def charge_label(rid: str, kind: str, analyst: str) -> str:
    """The ledger label of a service request (the request id is how recovery finds it)."""
    return f"service [request {rid}] {kind} for analyst {analyst}"


class ServiceLedger:
    """The ``ledger`` a release's :class:`ReleaseContext` charges (module docstring, step 3).

    ``charge`` refuses an event other than the planned one (nothing charged), charges the real
    ledger under the request's label (and who charged it, where the ledger records that), calls
    ``on_charged(charge_id)`` right after the commit, and yields to the draw; ``before_charge()``
    (the request's clock, :mod:`dpinfer.service.timeouts`) runs first and may refuse. With ``prepaid`` (a
    charge id, crash recovery) it checks the event and yields without charging.
    """

    def __init__(
        self,
        ledger: Any,
        *,
        planned: PrivacyEvent,
        label: str,
        analyst: str,
        purpose: str = "",
        on_charged: Callable[[int], None] | None = None,
        prepaid: int | None = None,
        before_charge: Callable[[], None] | None = None,
    ) -> None:
        self.ledger, self.planned, self.label = ledger, event_to_dict(planned), label
        self.analyst, self.purpose, self.on_charged, self.prepaid = analyst, purpose, on_charged, prepaid
        self.before_charge = before_charge
        self.location = getattr(ledger, "location", "")
        self.charge_id: int | None = None

    @contextmanager
    def charge(
        self, dataset: str, event: PrivacyEvent, label: str = "", *, insecure: bool = False, **_: Any
    ) -> Iterator[Any]:
        if event_to_dict(event) != self.planned:
            raise InvalidPrivacyParameterError(
                "the release's privacy event differs from the planned one; nothing was charged."
            )
        if self.prepaid is not None:
            self.charge_id = self.prepaid
            yield self.prepaid
            return
        if self.before_charge is not None:  # e.g. the request's clock: may refuse, nothing charged
            self.before_charge()
        extras = _charge_extras(self.ledger, self.analyst, self.purpose)
        with self.ledger.charge(dataset, event, self.label, insecure=insecure, **extras) as c:
            self.charge_id = int(c.id)
            if self.on_charged is not None:
                self.on_charged(self.charge_id)
            yield c


__all__ = [
    "ABCDPRequest",
    "ClampedRequest",
    "CovariatesRequest",
    "CountRequest",
    "DPVIRequest",
    "DatasetView",
    "GLMRequest",
    "HistogramRequest",
    "Plan",
    "REQUESTS",
    "ServiceLedger",
    "charge_label",
    "plan",
]
