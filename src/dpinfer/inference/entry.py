"""One entry point: ``dpinfer.infer(model, observed, method="auto")``.

``method="auto"`` decides from two facts it measures or reads, and records them in the result
(``InferenceResult.method``, ``.reason``, ``.details``); nothing is printed:

1. the mechanism has a density (``model.mechanism.has_density``) and the exact sampler fits the
   time budget → ``"exact"``: :func:`~dpinfer.inference.tempered_smc`, the mechanism density as ABC
   kernel (no tolerance: the exact posterior, Wilkinson 2013). Its likelihood is an estimate from
   ``n_inner`` simulations per particle; when the simulator's spread dwarfs the noise those
   estimates are almost always 0 and the population sticks to a few lucky particles (a 12-week
   chain-binomial SIR with Laplace(1) counts: 1-15 distinct θ of 1000). The sampler detects this
   (``settings["degenerate"]``), and ``"auto"`` then tries plain importance sampling and SMC-ABC
   (:data:`FALLBACK_ORDER`) and returns the first whose own diagnostics pass (weights, R-hat, ABC
   convergence), with a :class:`~dpinfer.errors.MethodFallbackWarning` naming each method tried
   and why it failed (``details["tried"]``); an explicit ``method="exact"`` is returned as it is,
   with the warning;
2. else SMC-ABC (:func:`~dpinfer.inference.smc_abc`, scale-free adaptive schedule) when its expected
   simulations fit the time budget → ``"smc-abc"``;
3. else → ``"sppe"`` (:class:`~dpinfer.inference.neural.SPPE`, rounds until the posterior stops
   moving, within 5000 simulations): the fewest simulations, for expensive simulators.

A :class:`~dpinfer.inference.exact.density_only.DensityOnlyModel` (a release known only by its
noise density) cannot simulate its release, so SMC-ABC, SPPE and SPLE do not apply to it: ``"auto"``
picks ``"exact"`` (tempered SMC), or ``"importance"`` when only importance sampling accepts the
options passed, whatever the budget (the reason says when it is over), and asking for one of the
simulating methods by name is refused in one line.

The cost of one confidential simulation is measured on a small batch of prior draws (seed
``spawn_key (99,)``, public randomness). The expected simulations of each method are rough
planning numbers (below); ``budget_seconds`` is the time the user is willing to wait.

Afterwards the diagnostics of :mod:`dpinfer.diagnostics.checks` run (weights, R-hat when the
method has chains, mass at a prior bound, observed statistic against prior-predictive
simulations); each finding is issued as a warning of its category and stored in the result.
The observed release is checked against the prior predictive by one shared test
(:mod:`dpinfer.diagnostics.conflict`), run by the method itself or, for a method that does not,
here; a :class:`~dpinfer.errors.PriorDataConflictWarning` names what to change.
"""

from __future__ import annotations

import inspect
import re
import time
import warnings
from typing import Any

import numpy as np

from .. import errors
from ..diagnostics import checks
from ..diagnostics.conflict import prior_data_conflict
from ..errors import InvalidDataError
from .posterior import InferenceResult

METHODS = ("auto", "exact", "importance", "smc-abc", "sppe", "sple")
#: the methods that need only the mechanism's density (the others simulate the release)
DENSITY_METHODS = ("exact", "importance")
#: rough simulations per run, for planning only: tempered SMC (1000 particles × 50 inner ×
#: ~20 likelihood estimates), SMC-ABC (2000 particles, ~8 populations at falling acceptance),
#: SPPE (rounds="auto" within its default budget of 5000 simulations; it often stops earlier)
NEURAL_SIMULATION_BUDGET = 5_000
EXPECTED_SIMULATIONS = {"exact": 1_000_000, "smc-abc": 400_000, "sppe": NEURAL_SIMULATION_BUDGET}
#: seconds of network training per training simulation of the neural methods, for planning only:
#: rounded up from ``benchmarks/results/neural.json`` (Gaussian mean, 200 simulations: SPPE 3.2 s,
#: SPLE 4.6 s with its MCMC, i.e. 0.016 and 0.023 s per simulation on one CPU). A constant, not a
#: timing of this machine, so the same call makes the same choice everywhere.
TRAINING_SECONDS_PER_SIMULATION = {"sppe": 0.02, "sple": 0.03}


def expected_seconds(method: str, per_sim: float, options: dict[str, Any] | None = None) -> float:
    """Planned seconds of ``method``: its simulations at ``per_sim`` seconds each plus, for the
    neural methods, training at :data:`TRAINING_SECONDS_PER_SIMULATION` per training simulation
    (``rounds × simulations_per_round``, or the ``simulations`` budget of ``rounds="auto"``, default
    5000). ``per_sim`` is the only measured input."""
    opts = dict(options or {})
    if method in ("sppe", "sple"):
        rounds = opts.get("rounds", "auto")
        if rounds == "auto":  # at most the simulation budget (the estimators' default: 5000)
            n = int(opts.get("simulations", NEURAL_SIMULATION_BUDGET))
        else:
            n = int(rounds) * int(opts.get("simulations_per_round", 1000))
        return n * (per_sim + TRAINING_SECONDS_PER_SIMULATION[method])
    key = "exact" if method in ("exact", "importance") else method
    return EXPECTED_SIMULATIONS[key] * per_sim


def simulation_seconds(model: Any, n: int = 200, seed: Any = None) -> float:
    """Seconds per confidential simulation, measured on ``n`` prior draws."""
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    rng = np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (99,)))
    theta = model.prior.sample(n, rng)
    start = time.perf_counter()
    model.simulate_confidential(theta, rng)
    return (time.perf_counter() - start) / n


def density_only(model: Any) -> bool:
    """Whether ``model``'s release is known only by its noise density (it cannot be simulated)."""
    from .exact.density_only import DensityOnlyModel

    return isinstance(model, DensityOnlyModel)


def _stuck(result: Any) -> str | None:
    """The stuck-population message of a tempered exact SMC result (``settings["degenerate"]``),
    shortened to its first clause, or None."""
    settings = getattr(result, "settings", None)
    msg = settings.get("degenerate") if isinstance(settings, dict) else None
    if not msg:
        return None
    m = re.search(r"\d+ distinct θ of \d+ particles", str(msg))
    return m.group(0) if m else "collapsed onto a few particles"


def _abc_can_run(model: Any, options: dict[str, Any]) -> bool:
    """SMC-ABC accepts this model (it can be simulated) and these options."""
    if density_only(model):
        return False
    try:
        check_options("smc-abc", options)
    except InvalidDataError:
        return False
    return True


def refuse_simulating_method(model: Any, method: str) -> None:
    """One-line refusal of SMC-ABC, SPPE or SPLE for a density-only model."""
    if method not in DENSITY_METHODS and method != "auto" and density_only(model):
        raise InvalidDataError(
            f"method {method!r} needs to simulate the release, but {model.name!r} is a DensityOnlyModel "
            f"(its release is known only by its noise density, {model.mechanism.name}); use method="
            "'exact' (tempered SMC), 'importance' (importance sampling) or 'auto'."
        )


def _choose_density_only(
    model: Any, per_sim: float, budget_seconds: float, options: dict[str, Any] | None
) -> tuple[str, str]:
    """``"auto"`` for a density-only model: tempered SMC, or importance sampling when only it takes
    the options; never a method that simulates the release."""
    opts = dict(options or {})
    fits = [m for m in DENSITY_METHODS if not unknown_options(m, opts)]
    if not fits:
        check_options("exact", opts, "the release is known only by its density")  # raises
    best = fits[0]
    cost = expected_seconds(best, per_sim, opts)
    over = "" if cost <= budget_seconds else f", over the budget {budget_seconds:g} s; nothing else applies"
    why = "" if best == "exact" else f"; the options {', '.join(sorted(opts))} are taken by importance only"
    name = "exact tempered SMC" if best == "exact" else "importance sampling"
    return best, (
        f"the release is known only by its noise density ({model.mechanism.name}), so SMC-ABC, SPPE and "
        f"SPLE (which simulate it) do not apply{why}: {name} with the density (~{cost:.0f} s expected at "
        f"{per_sim:.2g} s per simulation{over})"
    )


def choose_method(
    model: Any, per_sim: float, budget_seconds: float, options: dict[str, Any] | None = None
) -> tuple[str, str]:
    """The method ``"auto"`` picks, and why (module docstring).

    Only methods that accept every option the caller passed are candidates, so the same call
    never fails on one machine and succeeds on another because the measured simulation cost
    (which depends on load) moved the choice to a method that does not take the options.
    A density-only model gets a method that needs only the density (module docstring).
    """
    if density_only(model):
        return _choose_density_only(model, per_sim, budget_seconds, options)
    has_density = bool(getattr(getattr(model, "mechanism", None), "has_density", False))
    cost = {m: expected_seconds(m, per_sim, options) for m in EXPECTED_SIMULATIONS}
    if options:
        order = tuple(EXPECTED_SIMULATIONS)  # exact, smc-abc, sppe: the default's preference
        fits = [m for m in order if not unknown_options(m, options) and (m != "exact" or has_density)]
        if not fits:
            check_options("smc-abc", options)  # raises, naming the methods that accept them
        if len(fits) < len(order):
            best = min(fits, key=lambda m: (cost[m] > budget_seconds, order.index(m)))
            return best, (
                f"the options {', '.join(sorted(options))} are accepted by {', '.join(fits)} only; "
                f"{best} (~{cost[best]:.0f} s expected at {per_sim:.2g} s per simulation, budget "
                f"{budget_seconds:g} s)"
            )
    if has_density and cost["exact"] <= budget_seconds:
        return "exact", (
            f"the mechanism has a density and a simulation takes {per_sim:.2g} s (~{cost['exact']:.0f} s "
            f"expected, budget {budget_seconds:g} s): exact tempered SMC with the mechanism density"
        )
    why = "the mechanism has no density" if not has_density else (
        f"exact inference would take ~{cost['exact']:.0f} s > budget {budget_seconds:g} s"
    )
    if cost["smc-abc"] <= budget_seconds or cost["smc-abc"] <= cost["sppe"]:
        how = "fits the budget" if cost["smc-abc"] <= budget_seconds else "is still cheaper than SPPE"
        return "smc-abc", f"{why}; SMC-ABC {how} (~{cost['smc-abc']:.0f} s expected)"
    over = "" if cost["sppe"] <= budget_seconds else f", over the budget {budget_seconds:g} s: the cheapest"
    return "sppe", (
        f"{why}; SMC-ABC would take ~{cost['smc-abc']:.0f} s > budget {budget_seconds:g} s, so SPPE "
        f"(at most {NEURAL_SIMULATION_BUDGET} simulations and training: ~{cost['sppe']:.0f} s expected{over})"
    )


def _target(method: str) -> Any:
    """The callable that runs ``method`` (its signature lists the options it accepts)."""
    if method == "exact":
        from .exact.tempered import tempered_smc

        return tempered_smc
    if method == "importance":
        from .exact.importance import mechanism_importance_sampling

        return mechanism_importance_sampling
    if method == "smc-abc":
        from .smc.smc_abc import smc_abc

        return smc_abc
    from .neural import SPLE, SPPE

    return SPPE if method == "sppe" else SPLE


def method_options(method: str) -> frozenset[str]:
    """The options ``infer(..., method=method, **options)`` accepts for ``method``."""
    target = _target(method)
    is_class = inspect.isclass(target)
    inits = [k.__init__ for k in target.__mro__ if "__init__" in vars(k)] if is_class else [target]
    fixed = {"self", "model", "observed", "seed", "backend"}
    names: set[str] = set()
    for fn in inits:  # a class's **kwargs reach its bases' __init__
        params = inspect.signature(fn).parameters.values()
        names |= {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return frozenset(names - fixed)


def unknown_options(method: str, options: dict[str, Any]) -> list[str]:
    """The names in ``options`` that ``method`` does not accept."""
    return sorted(set(options) - method_options(method))


def check_options(method: str, options: dict[str, Any], reason: str = "") -> None:
    """Refuse options that ``method`` does not take, naming the methods that do."""
    bad = unknown_options(method, options)
    if not bad:
        return
    takers = [m for m in METHODS[1:] if not unknown_options(m, options)]
    hint = (f"methods that accept them: {', '.join(takers)}; pass method=..." if takers
            else "no method accepts all of them; check the spelling")
    why = f" (chosen because {reason})" if reason else ""
    raise InvalidDataError(
        f"method {method!r}{why} does not accept the option(s) {', '.join(bad)}; {hint}. "
        f"It accepts: {', '.join(sorted(method_options(method)))}."
    )


def _with_progress(method: str, options: dict[str, Any], progress: bool | None) -> dict[str, Any]:
    """``options`` plus the progress switch in the form ``method`` takes (unless the caller set it):
    ``run=RunOptions(progress=...)`` for SMC-ABC, ``run=NeuralRunOptions(progress=...)`` for SPPE
    and SPLE, ``progress=`` for a method that has it."""
    from .smc.progress import resolve

    opts = dict(options)
    if method == "smc-abc" and "run" not in opts:
        from .smc.options import RunOptions

        opts["run"] = RunOptions(progress=progress)
    elif method in ("sppe", "sple"):
        import dataclasses

        from .neural.run_options import NeuralRunOptions

        run = opts.get("run") or NeuralRunOptions(warn=False)
        opts["run"] = run if "run" in opts else dataclasses.replace(run, progress=resolve(progress))
    elif "progress" in method_options(method) and "progress" not in opts:
        opts["progress"] = resolve(progress)
    return opts


def _run(method: str, model: Any, obs: np.ndarray, seed: Any, backend: Any, options: dict[str, Any]) -> Any:
    if method == "exact":
        from .exact.tempered import tempered_smc

        return tempered_smc(model, obs, seed=seed, backend=backend, **options)
    if method == "importance":
        from .exact.importance import mechanism_importance_sampling

        return mechanism_importance_sampling(model, obs, seed=seed, backend=backend, **options)
    if method == "smc-abc":
        from .smc.smc_abc import smc_abc

        return smc_abc(model, obs, seed=seed, backend=backend, **options)
    from .neural import SPLE, SPPE

    estimator = SPPE if method == "sppe" else SPLE
    # the estimator's own defaults (rounds="auto" within its simulation budget); its findings are
    # issued once, by infer (diagnose reads them from settings["diagnostics"])
    import dataclasses

    from .neural.run_options import NeuralRunOptions

    run = options.get("run") or NeuralRunOptions(warn=False)
    options = {**options, "run": dataclasses.replace(run, backend=backend)}
    return estimator(model, seed=seed, **options).fit(obs)


#: what ``"auto"`` tries, in order, when the exact sampler it chose is stuck: plain importance
#: sampling with the mechanism density (no likelihood-estimate stickiness: each θ is weighted once),
#: then SMC-ABC (no likelihood estimate at all)
FALLBACK_ORDER = ("importance", "smc-abc")
#: the diagnostics that judge a method's own run (the others judge the model or the prior)
OWN_FAILURES = (errors.WeightDegeneracyWarning, errors.ConvergenceWarning, errors.ABCConvergenceWarning)


def own_failures(found: list[checks.Finding]) -> list[checks.Finding]:
    """The findings of :func:`diagnose` that say the method's own run failed (weights, chains,
    ABC convergence), not the model or the prior."""
    return [f for f in found if issubclass(f.category, OWN_FAILURES)]


def _fallback(
    model: Any, obs: np.ndarray, root: np.random.SeedSequence, backend: Any, options: dict[str, Any],
    progress: bool | None, tried: list[dict[str, Any]],
) -> tuple[str, Any] | None:
    """Run the :data:`FALLBACK_ORDER` methods that apply until one's own diagnostics pass; record
    each in ``tried``; return ``(method, result)`` of the passing one, else of the last run."""
    has_density = bool(getattr(model.mechanism, "has_density", False))
    last = None
    for alt in FALLBACK_ORDER:
        if alt == "importance" and (not has_density or unknown_options(alt, options)):
            continue
        if alt == "smc-abc" and not _abc_can_run(model, options):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", errors.InferenceWarning)  # judged by diagnose() below
            res = _run(alt, model, obs, root, backend, _with_progress(alt, options, progress))
        failed = own_failures(diagnose(res, model, obs, root))
        tried.append({"method": alt, "passed": not failed,
                      "failed": "; ".join(f.message.split(":")[0] for f in failed)})
        last = (alt, res)
        if not failed:
            return last
    return last


def _fallback_finding(tried: list[dict[str, Any]], chosen: str) -> checks.Finding:
    """The :class:`~dpinfer.errors.MethodFallbackWarning` naming every method tried and why."""
    parts = [f"{t['method']} ({'its diagnostics passed' if t['passed'] else 'failed: ' + t['failed']})"
             for t in tried]
    passed = any(t["passed"] and t["method"] == chosen for t in tried)
    verdict = (f"{chosen} is returned" if passed else
               f"none passed its own diagnostics; {chosen}, the last tried, is returned with its warnings")
    return checks.Finding(
        errors.MethodFallbackWarning,
        f"infer: the method it chose did not pass its own diagnostics, so it tried others: "
        f"{', '.join(parts)}; {verdict}. Pass method=... to run one yourself.",
    )


def diagnose(result: Any, model: Any, observed: np.ndarray, seed: Any = None) -> list[checks.Finding]:
    """Every :mod:`~dpinfer.diagnostics.checks` finding for ``result`` (not yet issued), and the
    prior–data conflict check (:mod:`~dpinfer.diagnostics.conflict`) unless the method ran it."""
    found: list[checks.Finding] = []
    names = tuple(result.param_names)
    settings = getattr(result, "settings", None)
    neural = settings.get("diagnostics") if isinstance(settings, dict) else None
    if neural is not None:  # SPPE/SPLE checked themselves: prior bounds, observed range, R-hat/ESS
        return [
            checks.Finding(getattr(errors, f["category"], errors.InferenceWarning), f["message"])
            for f in neural
        ]
    if hasattr(result, "log_weights"):
        found += checks.check_weights(np.exp(result.log_weights - np.max(result.log_weights)))
    elif hasattr(result, "weights") and hasattr(result, "particles"):
        found += checks.check_weights(result.weights)
    lo, hi = model.prior.support
    found += checks.check_prior_bounds(result.sample(2000, 0), lo, hi, names)
    mcmc = getattr(result, "mcmc", None)  # SPLE: filled by its MCMC sampling
    rhat = mcmc.get("rhat") if isinstance(mcmc, dict) else None
    if rhat is not None:
        found += checks.check_rhat(rhat, names)
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    stuck = settings.get("degenerate") if isinstance(settings, dict) else None
    if stuck:  # tempered exact SMC: a population collapsed by sticky pseudo-marginal moves
        found.append(checks.Finding(errors.WeightDegeneracyWarning, stuck))
    own = settings.get("findings") if isinstance(settings, dict) else None
    if own is not None:  # SMC-ABC, importance sampling and tempered SMC ran the conflict check
        found += [checks.Finding(getattr(errors, f["category"]), f["message"]) for f in own]
        return found
    conflict, _ = prior_data_conflict(  # none for a density-only model: it cannot be simulated
        model, observed, seed=np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (98,))
    )
    return found + conflict


def infer(
    model: Any,
    observed: Any,
    method: str = "auto",
    *,
    seed: int | np.random.SeedSequence | None = None,
    backend: Any = "auto",
    budget_seconds: float = 120.0,
    warn: bool = True,
    progress: bool | None = None,
    **options: Any,
) -> InferenceResult:
    """The posterior ``p(θ | s_dp)`` of a private-data model, by the method that suits it.

    Parameters
    ----------
    model
        A :class:`~dpinfer.models.contract.PrivateDataModel`.
    observed
        The observed privatised statistic.
    method
        ``"auto"`` (module docstring), ``"exact"`` (tempered SMC with the mechanism density),
        ``"importance"`` (mechanism-density importance sampling), ``"smc-abc"``, ``"sppe"`` or
        ``"sple"`` (neural: rounds until the posterior stops moving, within ``simulations=5000``,
        unless ``rounds`` / ``simulations_per_round`` are given; SPLE's MCMC R-hat is checked).
    seed
        Public randomness only (simulations, resampling, network initialisation).
    backend
        Execution backend of the simulations (``"auto"``: serial unless simulations are slow).
    budget_seconds
        How long ``"auto"`` may plan to run: simulations at the measured cost per simulation plus,
        for the neural methods, training by a fixed per-simulation cost
        (:func:`expected_seconds`; recorded in ``details["expected_seconds"]``).
    warn
        Issue the diagnostics' findings as warnings (they are stored in the result either way).
    progress
        The chosen method's ``tqdm.auto`` progress bar on standard error (SMC-ABC populations,
        neural rounds); None: on a terminal or in a notebook (:mod:`dpinfer.inference.smc.progress`).
    **options
        Passed to the chosen method (e.g. ``n_particles``).

    Returns
    -------
    InferenceResult
        The posterior, with ``method``, ``reason``, ``findings`` and ``details``.
    """
    if method not in METHODS:
        raise InvalidDataError(f"unknown method {method!r}: use one of {', '.join(METHODS)}.")
    refuse_simulating_method(model, method)
    obs = model.check_observed(observed)
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    per_sim = simulation_seconds(model, seed=root)
    if method == "auto":
        chosen, reason = choose_method(model, per_sim, float(budget_seconds), options)
    else:
        chosen, reason = method, "requested by the caller"
        if chosen in ("exact", "importance") and not getattr(model.mechanism, "has_density", False):
            raise InvalidDataError(
                f"method {chosen!r} needs a mechanism with a density; {type(model.mechanism).__name__} has "
                "none. Use method='smc-abc' or 'sppe' (or 'auto')."
            )
    check_options(chosen, options, reason if method == "auto" else "")
    start = time.perf_counter()
    with warnings.catch_warnings():
        # SMC-ABC issues its own findings; diagnose() collects them and they are issued once below
        warnings.simplefilter("ignore", errors.ABCConvergenceWarning)
        warnings.simplefilter("ignore", errors.ObservedOutsideSimulationsWarning)
        warnings.filterwarnings("ignore", "tempered exact SMC: the final population is stuck",
                                errors.WeightDegeneracyWarning)  # a finding of diagnose(), issued below
        result = _run(chosen, model, obs, root, backend, _with_progress(chosen, options, progress))
        n_distinct = _stuck(result) if method == "auto" and chosen == "exact" else None
        tried: list[dict[str, Any]] = []
        fallback: checks.Finding | None = None
        if n_distinct:
            # "auto" chose the exact sampler and it failed in a way it can see (its final population
            # collapsed onto a few particles: pseudo-marginal moves that never leave a lucky
            # likelihood estimate); "auto" then tries the other methods in FALLBACK_ORDER and returns
            # the first whose own diagnostics pass (else the last tried), and says so in a warning
            stuck = f"final population stuck ({n_distinct})"
            tried.append({"method": "exact", "passed": False, "failed": stuck})
            alt = _fallback(model, obs, root, backend, options, progress, tried)
            if alt is not None:
                chosen, result = alt
                fallback = _fallback_finding(tried, chosen)
                reason = f"{reason}; it ran, but {fallback.message[len('infer: '):]}"
    wall = time.perf_counter() - start
    found = diagnose(result, model, obs, root)
    if fallback is not None:
        found.insert(0, fallback)
    if warn:
        checks.emit(found, stacklevel=3)
    details: dict[str, Any] = {
        "seconds_per_simulation": per_sim, "wall_time": wall, "budget_seconds": float(budget_seconds),
        "expected_seconds": expected_seconds(chosen, per_sim, options),
    }
    if tried:
        details["tried"] = tried
    return InferenceResult(result, chosen, reason, [f.to_dict() for f in found], details)


def calibration_check(
    model: Any,
    method: str = "auto",
    n_replicates: int = 100,
    n_draws: int = 99,
    *,
    seed: int | np.random.SeedSequence | None = None,
    analysis_model: Any = None,
    budget_seconds: float = 120.0,
    backend: Any = "auto",
    **options: Any,
) -> Any:
    """SBC ranks and expected coverage of ``method`` on ``model`` (:mod:`dpinfer.diagnostics.calibration`).

    Data come from ``model``; the posterior is computed with ``analysis_model`` (default: the same
    model) — pass a deliberately different one to see what a wrong mechanism does. ``"auto"`` is
    resolved once, as :func:`infer` would, and recorded in the result's ``method``. Diagnostic
    warnings of the individual fits are not issued (the calibration is the diagnostic).

    Returns
    -------
    CalibrationResult
        ``verdict()`` is the one-line answer; :func:`dpinfer.plots.plot_calibration` draws it.
    """
    from ..diagnostics.calibration import sbc

    if method not in METHODS:
        raise InvalidDataError(f"unknown method {method!r}: use one of {', '.join(METHODS)}.")
    fit_model = model if analysis_model is None else analysis_model
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    chosen = method
    if method == "auto":
        per_sim = simulation_seconds(fit_model, seed=root)
        chosen, _ = choose_method(fit_model, per_sim, budget_seconds, options)
    refuse_simulating_method(fit_model, chosen)
    check_options(chosen, options)

    def fit(obs: np.ndarray, fit_seed: np.random.SeedSequence) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # per-fit diagnostics: the SBC judges
            return _run(chosen, fit_model, obs, fit_seed, backend, _with_progress(chosen, options, False))

    res = sbc(model, fit, n_replicates, n_draws, seed=root)
    res.method = chosen
    return res


__all__ = [
    "calibration_check", "check_options", "choose_method", "density_only", "diagnose", "expected_seconds",
    "infer", "method_options",
    "simulation_seconds",
]
