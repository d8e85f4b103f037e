"""Models by name: what a ``--model`` option maps to, and the releases shipped with dpinfer.

Two families of names:

* :data:`ABCDP_MODELS` (``dpinfer simulate``): the ABCDP paper's models, simulated by the public
  modeler (:func:`make_abcdp_model`);
* :data:`MODELS` (``dpinfer smc-abc``, ``exact-posterior``, ``sppe``, ``sple``): private-data
  models, each with the privacy level ε of its release (:func:`build_model`), some with a shipped
  synthetic release (:func:`builtin_observed`).

A user's own model is named ``package.module:factory`` (:func:`build_user_model`, in
:mod:`~dpinfer.models.user_factory`): the factory is imported and called with the
``--model-args`` (and ``epsilon``, if it takes one) and returns a
:class:`~dpinfer.models.contract.PrivateDataModel`.

An observed release is given as ``"builtin"`` (the shipped release at ε) or as a JSON file holding a
list of numbers or an object ``{"observed": [...]}`` (optionally with ``"epsilon"`` and
``"model_args"``); :func:`load_release` turns it into ``(model, observed, epsilon)``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import InvalidDataError
from ..user_factory import build_user_model, is_user_model

ABCDP_MODELS = ("mixture-uniform", "covid", "tuberculosis")
MODELS = ("gaussian-mean", "linreg", "naive-bayes", "sir", "sir-real")

# one line per --model name, for the command line's --help
MODEL_HELP = {
    "gaussian-mean": "clamped mean of n values + Laplace noise",
    "linreg": "linear regression sufficient statistics + Laplace noise (Ju et al. 2022)",
    "naive-bayes": "naive Bayes category counts + Laplace noise",
    "sir": "SIR epidemic, binomial release of infection proportions (K = 10^6 by default)",
    "sir-real": "SIR with the real-outbreak set-up (K = 10^5, N = 100, prior N((-2, -3), I))",
}


def _model_class(name: str) -> Any:
    from .. import SIR, GaussianMean, LinearRegression, NaiveBayes

    return {"gaussian-mean": GaussianMean, "linreg": LinearRegression, "naive-bayes": NaiveBayes,
            "sir": SIR, "sir-real": SIR}[name]


def model_args(name: str) -> dict[str, Any]:
    """The ``--model-args`` keys model ``name`` accepts, with their defaults (ε is ``--epsilon``)."""
    import inspect

    params = inspect.signature(_model_class(name)).parameters
    defaults = {k: p.default for k, p in params.items() if k != "epsilon"}
    if name == "sir-real":
        defaults.update(population=100_000, n_trials=100, prior="real-outbreak")
    return defaults


def check_model_args(name: str, kwargs: Mapping[str, Any]) -> None:
    """Refuse (``ValueError``, one line) keys that model ``name`` does not accept."""
    if name not in MODELS:
        raise ValueError(
            f"unknown model {name!r}; choose one of {', '.join(MODELS)}, or name your own model's factory "
            "as package.module:factory."
        )
    accepted = model_args(name)
    unknown = [k for k in kwargs if k not in accepted]
    if "epsilon" in kwargs:
        raise ValueError("--model-args: give the release's epsilon with --epsilon, not in --model-args.")
    if unknown:
        raise ValueError(
            f"--model-args: model {name!r} has no argument {', '.join(map(repr, unknown))}; accepted keys: "
            f"{', '.join(accepted)}."
        )


def make_abcdp_model(name: str, n_points: int | None = None, n_datasets: int | None = None) -> Any:
    """The ABCDP model called ``name``.

    Parameters
    ----------
    name
        One of :data:`ABCDP_MODELS`.
    n_points
        Points per data set of ``mixture-uniform`` (default 5000).
    n_datasets
        Data sets per simulation of ``tuberculosis`` (default 100).

    Raises
    ------
    InvalidDataError
        For an unknown name.
    """
    from .. import CovidPolynomial, MixtureOfUniforms, Tuberculosis

    if name == "mixture-uniform":
        return MixtureOfUniforms(n_points=n_points or 5000)
    if name == "covid":
        return CovidPolynomial()
    if name == "tuberculosis":
        return Tuberculosis(n_datasets=n_datasets or 100)
    raise InvalidDataError(f"unknown model {name!r}; choose one of {ABCDP_MODELS}.")


def build_model(name: str, epsilon: float, **kwargs: Any) -> Any:
    """The private-data model called ``name``, with its release's ε and extra keyword arguments.

    Raises
    ------
    ValueError
        For an unknown name.
    """
    from .. import SIR, GaussianMean, LinearRegression, NaiveBayes

    check_model_args(name, kwargs)
    if name == "gaussian-mean":
        return GaussianMean(epsilon=epsilon, **kwargs)
    if name == "linreg":
        return LinearRegression(epsilon=epsilon, **kwargs)
    if name == "naive-bayes":
        return NaiveBayes(epsilon=epsilon, **kwargs)
    if name == "sir":
        return SIR(epsilon=epsilon, **kwargs)
    if name == "sir-real":
        return SIR.real_outbreak(epsilon=epsilon, **kwargs)
    raise ValueError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}.")


def builtin_observed(name: str, epsilon: float) -> Any:
    """The shipped synthetic release of model ``name`` at ``epsilon``.

    Raises
    ------
    ValueError
        If there is no shipped release of ``name``, or none at ``epsilon``.
    """
    from ...datasets import private_data as pdata

    loaders = {
        "linreg": pdata.load_linreg,
        "sir": pdata.load_sir_synthetic,
        "naive-bayes": pdata.load_naive_bayes_synthetic,
    }
    if name not in loaders:
        raise ValueError(f"no built-in release for model {name!r} (available: {', '.join(loaders)}).")
    try:
        return loaders[name]().observed(epsilon)
    except KeyError as exc:
        raise ValueError(str(exc.args[0])) from exc


def read_observed(
    name: str, observed: str, epsilon: float | None = None, model_args: Mapping[str, Any] | None = None
) -> tuple[Any, float | None, dict[str, Any]]:
    """``(observed, epsilon, model_args)`` of a release given as ``"builtin"`` or a JSON file.

    Parameters
    ----------
    name
        The model (one of :data:`MODELS`); used for the shipped release.
    observed
        ``"builtin"`` or the path of a JSON file.
    epsilon, model_args
        Given values; they override those stored in the file.

    Raises
    ------
    ValueError
        ``"builtin"`` without ``epsilon``, or a JSON object without an ``"observed"`` list.
    FileNotFoundError
        If the file does not exist.
    """
    args = dict(model_args or {})
    if observed == "builtin":
        if epsilon is None:
            raise ValueError("--observed builtin needs --epsilon.")
        return builtin_observed(name, epsilon), epsilon, args
    path = Path(observed)
    if not path.exists():
        raise FileNotFoundError(f"observed-statistics file {path} does not exist.")
    try:
        doc = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise ValueError(
            f"observed-statistics file {path} is not JSON{where}: {getattr(exc, 'msg', exc)}. Expected "
            'a JSON list of numbers, e.g. [0.1, 0.5], or an object {"observed": [...], "epsilon": 10, '
            '"model_args": {...}} (a release written by `dpinfer release`).'
        ) from None
    if isinstance(doc, dict):
        if "observed" not in doc:
            raise ValueError(f"{path}: a JSON object needs an 'observed' list.")
        epsilon = epsilon if epsilon is not None else doc.get("epsilon")
        return doc["observed"], epsilon, {**doc.get("model_args", {}), **args}
    return doc, epsilon, args


def load_release(
    name: str, observed: str, epsilon: float | None = None, model_args: Mapping[str, Any] | None = None
) -> tuple[Any, Any, float]:
    """``(model, observed, epsilon)`` of a release (see :func:`read_observed`).

    Raises
    ------
    ValueError
        If the release's ε is neither given nor stored in the file.
    """
    values, eps, kwargs = read_observed(name, observed, epsilon, model_args)
    if is_user_model(name):
        model, eps = build_user_model(name, None if eps is None else float(eps), **kwargs)
        return model, values, eps
    if eps is None:
        raise ValueError("the release's epsilon is needed: pass --epsilon or put 'epsilon' in the JSON file.")
    return build_model(name, float(eps), **kwargs), values, float(eps)


__all__ = [
    "ABCDP_MODELS",
    "MODELS",
    "MODEL_HELP",
    "build_model",
    "build_user_model",
    "is_user_model",
    "check_model_args",
    "builtin_observed",
    "load_release",
    "make_abcdp_model",
    "model_args",
    "read_observed",
]
