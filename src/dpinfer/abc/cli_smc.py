"""``dpinfer smc-abc``: SMC-ABC posterior from privatised statistics.

Examples::

    dpinfer smc-abc --model sir --epsilon 10 --observed obs.json --model-args '{"population": 100000}'
    dpinfer smc-abc --model linreg --epsilon 1 --observed builtin --backend processes --out post.npz

``--observed`` is a JSON file holding a list of numbers or an object ``{"observed": [...]}``
(optionally with ``"epsilon"`` and ``"model_args"``), or ``builtin`` for the synthetic release
shipped with dpinfer at ``--epsilon``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

MODELS = ("gaussian-mean", "linreg", "naive-bayes", "sir", "sir-real")


def build_model(name: str, epsilon: float, **kwargs: Any) -> Any:
    """A private-data model by CLI name, with the release's ε and extra keyword arguments."""
    from ..models import SIR, GaussianMean, LinearRegression, NaiveBayes

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
    """The shipped synthetic release of ``name`` at ``epsilon``."""
    from ..datasets import private_data as pdata

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


def load_observed(args: argparse.Namespace) -> tuple[Any, float | None, dict[str, Any]]:
    """``(observed, epsilon, model_args)`` from ``--observed`` (a JSON file or ``builtin``),
    ``--epsilon`` and ``--model-args``; command-line values override the file's."""
    model_args = json.loads(args.model_args) if args.model_args else {}
    epsilon = args.epsilon
    if args.observed == "builtin":
        if epsilon is None:
            raise ValueError("--observed builtin needs --epsilon.")
        return builtin_observed(args.model, epsilon), epsilon, model_args
    path = Path(args.observed)
    if not path.exists():
        raise FileNotFoundError(f"observed-statistics file {path} does not exist.")
    doc = json.loads(path.read_text())
    if isinstance(doc, dict):
        if "observed" not in doc:
            raise ValueError(f"{path}: a JSON object needs an 'observed' list.")
        epsilon = epsilon if epsilon is not None else doc.get("epsilon")
        model_args = {**doc.get("model_args", {}), **model_args}
        return doc["observed"], epsilon, model_args
    return doc, epsilon, model_args


def load_release(args: argparse.Namespace) -> tuple[Any, Any, float]:
    """``(model, observed, epsilon)`` for the ``--model`` / ``--observed`` / ``--epsilon`` options."""
    observed, epsilon, model_args = load_observed(args)
    if epsilon is None:
        raise ValueError("the release's epsilon is needed: pass --epsilon or put 'epsilon' in the JSON file.")
    return build_model(args.model, float(epsilon), **model_args), observed, float(epsilon)


def _schedule(args: argparse.Namespace) -> Any:
    from .smc_abc import QuantileSchedule

    if args.schedule == "paper":
        return "paper"
    if args.schedule == "adaptive":
        return QuantileSchedule(
            alpha=args.quantile, min_tolerance=args.min_tolerance, max_populations=args.max_populations
        )
    try:
        return [float(v) for v in args.schedule.split(",")]
    except ValueError as exc:
        raise ValueError(
            f"--schedule must be 'paper', 'adaptive' or comma-separated tolerances, got {args.schedule!r}."
        ) from exc


def print_weighted_result(
    args: argparse.Namespace, res: Any, summary: dict[str, Any], r0_center: str
) -> None:
    """Finish a weighted-posterior command: R0 = β/γ for SIR models, ``--out``, then the JSON
    summary (``--json``) or the text summary.

    ``r0_center`` is ``"mean"`` or ``"median"``: the point summary reported as ``R0_<center>``.
    """
    import numpy as np

    from .smc_abc import weighted_quantile

    key = f"R0_{r0_center}"
    if args.model.startswith("sir"):
        r0 = np.exp(res.particles[:, 0] - res.particles[:, 1])
        center = res.weights @ r0 if r0_center == "mean" else weighted_quantile(r0, res.weights, [0.5])[0]
        summary[key] = float(center)
        summary["R0_interval95"] = weighted_quantile(r0, res.weights, [0.025, 0.975]).tolist()
    if args.out:
        summary["saved_to"] = str(res.save(args.out))
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(res.summary())
    if key in summary:
        lo, hi = summary["R0_interval95"]
        label = "" if r0_center == "mean" else "median "
        print(f"  {'R0':>12s}: {label}{summary[key]: .4f}  95% CI ({lo: .4f}, {hi: .4f})")
    if args.out:
        print(f"saved to {summary['saved_to']}")


def _run(args: argparse.Namespace) -> int:
    from .smc_abc import SMCInterrupted, smc_abc

    model, observed, epsilon = load_release(args)
    if args.backend == "dask" or "://" in args.backend:
        try:
            import distributed  # noqa: F401
        except ImportError as exc:
            raise ValueError(
                "the Dask backend needs dask[distributed]: pip install 'dpinfer[dask]'."
            ) from exc
    try:
        res = smc_abc(
            model,
            observed,
            n_particles=args.particles,
            schedule=_schedule(args),
            backend=args.backend,
            seed=args.seed,
            batch_size=args.batch_size,
            n_workers=args.workers,
            max_simulations=args.max_simulations,
            progress=not args.no_progress and sys.stderr.isatty(),
            checkpoint=args.checkpoint,
            callback=None
            if args.json
            else (
                lambda d: print(
                    f"population {d.t}: tolerance {d.tolerance:.4g}, {d.n_simulations} simulations, "
                    f"acceptance {d.acceptance_rate:.3g}, ESS {d.ess:.0f}, {d.wall_time:.1f} s",
                    file=sys.stderr,
                )
            ),
        )
    except SMCInterrupted as exc:
        print(f"dpinfer: {exc}", file=sys.stderr)
        if exc.partial is not None and args.out:
            path = exc.partial.save(args.out)
            print(f"partial result (complete=False) saved to {path}", file=sys.stderr)
        return 130
    summary = {
        "model": args.model,
        "epsilon": float(epsilon),
        "param_names": list(res.param_names),
        "mean": res.mean().tolist(),
        "interval95": res.interval().tolist(),
        "n_simulations": res.n_simulations,
        "populations": len(res.populations),
        "final_tolerance": res.tolerance,
        "ess": res.ess,
        "complete": res.complete,
        "stop_reason": res.stop_reason,
        "privacy_of_release": res.privacy.to_dict() if res.privacy is not None else None,
    }
    print_weighted_result(args, res, summary, r0_center="mean")
    return 0 if res.complete else 3


def register(subparsers: Any) -> None:
    """Add ``smc-abc`` to the ``dpinfer`` command line."""
    p = subparsers.add_parser(
        "smc-abc", help="SMC-ABC posterior from privatised statistics (Xiong et al. 2025)"
    )
    p.add_argument("--model", required=True, choices=MODELS)
    p.add_argument("--observed", required=True, help="JSON file of the observed release, or 'builtin'")
    p.add_argument("--epsilon", type=float, help="privacy level of the observed release")
    p.add_argument("--model-args", default="", help="JSON object of model keyword arguments")
    p.add_argument("--particles", type=int, default=2000, help="particles per population (default 2000)")
    p.add_argument("--schedule", default="paper", help="paper | adaptive | comma-separated tolerances")
    p.add_argument("--quantile", type=float, default=0.5, help="adaptive schedule: distance quantile")
    p.add_argument(
        "--min-tolerance", type=float, default=0.0, help="adaptive schedule: stop at this tolerance"
    )
    p.add_argument("--max-populations", type=int, default=10, help="adaptive schedule: population cap")
    p.add_argument("--backend", default="processes", help="serial | processes | dask | tcp://scheduler:8786")
    p.add_argument("--workers", type=int, help="worker processes (default: all cores)")
    p.add_argument("--seed", type=int, default=0, help="simulation seed (never privacy noise)")
    p.add_argument("--batch-size", type=int, default=1000, help="proposals per batch")
    p.add_argument("--max-simulations", type=int, help="stop (incomplete) beyond this many simulations")
    p.add_argument("--out", help="save the result (.npz)")
    p.add_argument("--checkpoint", help="save the result after every population")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    p.set_defaults(func=_run)


__all__ = [
    "MODELS",
    "build_model",
    "builtin_observed",
    "load_observed",
    "load_release",
    "print_weighted_result",
    "register",
]
