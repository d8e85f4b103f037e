"""``dpinfer smc-abc`` and ``dpinfer exact-posterior``: weighted posteriors from privatised statistics.

Examples::

    dpinfer smc-abc --model sir --epsilon 10 --observed obs.json --model-args '{"population": 100000}'
    dpinfer smc-abc --model linreg --epsilon 1 --observed builtin --backend processes --out post.npz
    dpinfer exact-posterior --model sir --epsilon 10 --observed builtin --model-args '{"population": 10000}'
    dpinfer exact-posterior --model naive-bayes --epsilon 1 --observed builtin --theta 50000 --json

``--observed`` is a JSON file holding a list of numbers or an object ``{"observed": [...]}``
(optionally with ``"epsilon"`` and ``"model_args"``), or ``builtin`` for the synthetic release
shipped with dpinfer at ``--epsilon`` (:mod:`dpinfer.models.shipped.registry`). ``exact-posterior`` is
mechanism-density importance sampling: only models whose release mechanism has a density are
accepted (all built-in models).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .common import (
    add_backend_options,
    add_command,
    add_output_options,
    add_release_options,
    add_run_options,
    one_line,
    pick,
    release_from_args,
    shown_warnings,
    without_warning_lines,
)

# options passed on under their own names (the dests of --theta, --inner are n_theta, n_inner)
_SMC_OPTIONS = (
    "backend", "seed", "batch_size", "n_workers", "max_simulations", "runs", "resume"
)
_IS_OPTIONS = ("n_theta", "n_inner", "pilot_theta", "pilot_inner", "backend", "n_workers", "seed")
_WORKERS = "worker processes (default: all cores)"
_SEED = "simulation seed (never privacy noise)"


def _batch_size(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got {text!r}")
    return value


def _schedule(args: argparse.Namespace) -> Any:
    from ..inference.smc.adaptive_schedule import AdaptiveSchedule
    from ..inference.smc.schedule import QuantileSchedule

    if args.schedule == "paper":
        return "paper"
    if args.schedule == "adaptive":  # the library's default: scale-free stopping rule
        return AdaptiveSchedule(
            alpha=args.quantile, max_populations=args.max_populations, patience=args.patience,
            min_acceptance_rate=args.min_acceptance_rate,
        )  # fmt: skip
    if args.schedule == "quantile":
        return QuantileSchedule(
            alpha=args.quantile, min_tolerance=args.min_tolerance, max_populations=args.max_populations
        )
    try:
        return [float(v) for v in args.schedule.split(",")]
    except ValueError as exc:
        raise ValueError(
            f"--schedule must be 'adaptive', 'paper', 'quantile' or comma-separated tolerances, got "
            f"{args.schedule!r}."
        ) from exc


def print_weighted_result(
    args: argparse.Namespace, res: Any, summary: dict[str, Any], r0_center: str
) -> None:
    """Finish a weighted-posterior command: R0 = β/γ for SIR models, ``--out``, then the JSON
    summary (``--json``) or the text summary.

    ``r0_center`` is ``"mean"`` or ``"median"``: the point summary reported as ``R0_<center>``.
    """
    from ..inference.weighted import weighted_quantile

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
    print(without_warning_lines(res.summary()))  # its findings were shown as warnings
    if key in summary:
        lo, hi = summary["R0_interval95"]
        label = "" if r0_center == "mean" else "median "
        print(f"  {'R0':>12s}: {label}{summary[key]: .4f}  95% CI ({lo: .4f}, {hi: .4f})")
    if args.out:
        print(f"saved to {summary['saved_to']}")


def _summary(args: argparse.Namespace, res: Any, epsilon: float) -> dict[str, Any]:
    """The summary keys every weighted-posterior command reports."""
    return {
        "model": args.model,
        "epsilon": float(epsilon),
        "param_names": list(res.param_names),
        "mean": res.mean().tolist(),
        "interval95": res.interval().tolist(),
        "n_simulations": res.n_simulations,
    }


def max_populations(args: argparse.Namespace) -> int | None:
    """K, the most populations the schedule of ``--schedule`` can run (None if unknown)."""
    if args.schedule == "paper":
        from ..inference.smc.schedule import GeometricSchedule

        s = GeometricSchedule()
        tolerance, k = s.start, 1
        while tolerance > s.stop and k < s.max_populations:
            tolerance, k = tolerance * s.factor, k + 1
        return k
    if args.schedule in ("adaptive", "quantile"):
        return args.max_populations
    return len(args.schedule.split(","))


class PopulationReporter:
    """One line per finished population: k of K, simulations so far, elapsed, and a lower bound on
    the time left (later populations, at smaller tolerances, cost more than the last one)."""

    def __init__(self, total: int | None, file: Any = None) -> None:
        import time

        self.total = total
        self.file = file
        self.start = time.monotonic()
        self.simulations = 0

    def __call__(self, d: Any) -> None:
        import time

        # the simulations the result depends on, as the result's total counts them (the discarded
        # speculative batches of a parallel run are in n_simulations_run only)
        self.simulations = int(d.n_simulations_total) or self.simulations + int(d.n_simulations)
        elapsed = time.monotonic() - self.start
        of = f" of {self.total}" if self.total else ""
        left = ""
        if self.total:
            todo = max(self.total - (d.t + 1), 0)
            left = f", ETA >= {todo * d.wall_time:.0f} s" if todo else ", last population"
        print(
            f"population {d.t + 1}{of}: tolerance {d.tolerance:.4g}, {d.n_simulations} simulations "
            f"({self.simulations} so far), acceptance {d.acceptance_rate:.3g}, ESS {d.ess:.0f}, "
            f"{d.wall_time:.1f} s, elapsed {elapsed:.1f} s{left}",
            file=self.file or sys.stderr,
            flush=True,
        )


def _smc_abc(args: argparse.Namespace) -> int:
    from ..inference.smc.options import RunOptions
    from ..inference.smc.smc_abc import SMCInterrupted, smc_abc

    model, observed, epsilon = release_from_args(args)
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
            run=RunOptions(
                progress=False if args.no_progress else None,  # None: on a terminal
                callback=None if args.json else PopulationReporter(max_populations(args)),
                checkpoint=args.checkpoint,
            ),
            **pick(args, *_SMC_OPTIONS),
        )
    except SMCInterrupted as exc:
        n_done = 0 if exc.partial is None else len(exc.partial.populations)
        what = "interrupted (Ctrl-C)" if exc.interrupted else f"stopped: {one_line(exc.__cause__ or exc)}"
        kept = f" {n_done} completed population(s), nothing kept."
        if exc.partial is not None and args.out:  # beside --out, never in place of a complete result
            out = Path(args.out)
            path = exc.partial.save(out.with_name(f"{out.stem}.partial{out.suffix or '.npz'}"))
            kept = (f" {n_done} completed population(s) (complete=False) are in {path}; "
                    f"{args.out} was not written.")
        elif exc.partial is not None:
            kept = f" {n_done} completed population(s); give --out to keep them."
        resume = " Rerun with --resume RUN_ID to continue." if getattr(args, "runs", None) else ""
        print(f"dpinfer: SMC-ABC {what}.{kept}{resume}", file=sys.stderr)
        return 130 if exc.interrupted else 1
    summary = {
        **_summary(args, res, epsilon),
        "populations": len(res.populations),
        "final_tolerance": res.tolerance,
        "ess": res.ess,
        "complete": res.complete,
        "stop_reason": res.stop_reason,
        "privacy_of_release": res.privacy.to_dict() if res.privacy is not None else None,
        "run_id": res.settings.get("run_id"),
    }
    print_weighted_result(args, res, summary, r0_center="mean")
    return 0 if res.complete else 3


def _exact_posterior(args: argparse.Namespace) -> int:
    from ..inference.exact.importance import mechanism_importance_sampling

    model, observed, epsilon = release_from_args(args)
    with shown_warnings():  # each once, in this command's flags
        res = mechanism_importance_sampling(model, observed, **pick(args, *_IS_OPTIONS))
    summary = {
        **_summary(args, res, epsilon),
        "ess": res.ess,
        "pareto_k": res.khat,
        "log_evidence": res.log_evidence,
        "privacy_of_release": model.privacy_report().to_dict(),
    }
    print_weighted_result(args, res, summary, r0_center="median")
    return 0 if res.khat <= 0.7 else 3


#: SMC-ABC's option names in its errors and warnings, as this command's flags
HINTS = (
    ("schedule=AdaptiveSchedule(patience=6) (dpinfer.inference.smc.adaptive_schedule)", "--patience 6"),
    ("AdaptiveSchedule(min_acceptance_rate=...)", "--min-acceptance-rate"),
    ("min_acceptance_rate", "--min-acceptance-rate"),
    ("schedule='adaptive'", "--schedule adaptive"),
    ("max_simulations", "--max-simulations"),
    ("max_populations", "--max-populations"),
    ("patience", "--patience"),
    ("method='exact'", "`dpinfer exact-posterior`"),
)


def register(subparsers: Any) -> None:
    """Add ``smc-abc`` and ``exact-posterior`` to the ``dpinfer`` command line."""
    p = add_command(
        subparsers,
        "smc-abc", help="SMC-ABC posterior from privatised statistics (Xiong et al. 2025)"
    )
    add_release_options(p)
    p.add_argument("--particles", type=int, default=2000, help="particles per population")
    p.add_argument(
        "--schedule", default="adaptive",
        help="adaptive (quantile tolerances, stops when the acceptance rate keeps halving: no units "
        "involved) | paper (the authors' 1.0*0.7^k down to 0.2) | quantile (--quantile, "
        "--min-tolerance, --max-populations) | comma-separated tolerances",
    )
    p.add_argument("--quantile", type=float, default=0.5, help="adaptive/quantile: distance quantile")
    p.add_argument(
        "--min-tolerance", type=float, default=0.0, help="quantile schedule: stop at this tolerance"
    )
    p.add_argument("--max-populations", type=int, default=30, help="adaptive/quantile: population cap")
    p.add_argument(
        "--patience", type=int, default=3,
        help="adaptive: populations in a row that must look converged before the run stops",
    )
    p.add_argument(
        "--min-acceptance-rate", type=float, default=0.01,
        help="adaptive: stop (on its budget, with a warning) when the acceptance rate falls below this",
    )
    add_backend_options(p, "auto", _WORKERS, _SEED)
    p.add_argument(
        "--batch-size", type=_batch_size, default=1000,
        help="proposals per batch (fixes the results with --seed); 'auto': sized for the backend's "
        "workers, recorded in the result",
    )
    p.add_argument(
        "--max-simulations", type=int, help="stop (incomplete) beyond this many simulations (None: no cap)"
    )
    p.add_argument("--out", help="save the result (.npz; None: not saved)")
    p.add_argument("--checkpoint", help="save the result after every population (None: no checkpoint)")
    add_run_options(p, "population")
    add_output_options(
        p, progress="no progress bar (shown on a terminal: population, simulations, elapsed, ETA)"
    )
    p.set_defaults(func=_smc_abc, cli_hints=HINTS)

    e = add_command(
        subparsers,
        "exact-posterior",
        help="exact private-data posterior by importance sampling with the mechanism's density",
    )
    add_release_options(e)
    e.add_argument("--theta", type=int, default=20_000, dest="n_theta", metavar="THETA",
                   help="parameter draws of the main stage")
    e.add_argument("--inner", type=int, default=100, dest="n_inner", metavar="INNER",
                   help="confidential simulations per parameter draw")
    e.add_argument("--pilot-theta", type=int, default=10_000, help="parameter draws per pilot stage")
    e.add_argument("--pilot-inner", type=int, default=20, help="simulations per draw in the pilot")
    add_backend_options(e, "serial", _WORKERS, _SEED)
    e.add_argument("--out", help="save the weighted draws (.npz; None: not saved)")
    add_output_options(e)
    e.set_defaults(func=_exact_posterior)


__all__ = ["print_weighted_result", "register"]
