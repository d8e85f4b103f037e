"""ABCDP: differentially private rejection ABC with the sparse vector technique.

Implements Algorithm 1 of Park, Vinaroz & Jitkrittum (2021), "ABCDP: Approximate Bayesian
Computation with Differential Privacy", Entropy 23:961, with the noise scale of Theorem 1.

The data owner's private step (Section 3): given the public stream {(θ_t, Y_t)}, release the
indicators τ̃_t (equivalently the accepted θ_t) computed from the noisy comparisons of
ρ(Y*, Y_t) + Lap(2b) with ε_abc + Lap(b), stopping after c acceptances. The release is
ε_total-DP under the replace-one relation on Y* (Theorem 1), whatever T.

The release path (:class:`~dpinfer.privacy.context.ReleaseContext`): every input is validated
first — the privacy parameters, the stream's declared size T, the distance's sensitivity (from its
public bounds and the number of records N only, :func:`~dpinfer.distances.release_sensitivity`),
the noise scale, the observed data, and the first batch of simulations against them — then the
event is charged, then the sparse vector (:mod:`dpinfer.privacy.mechanisms.svt`) draws its noise
through the context and answers at most T queries, the number its noise is calibrated for.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.inputs import is_source, release_data
from ..data.labels import container_kind
from ..distances.base import count_records
from ..distances.enforce import release_sensitivity
from ..errors import InferenceWarning, InvalidDataError, InvalidPrivacyParameterError, refuse_removed_keywords
from ..privacy.calibration import calibrate_gaussian_svt
from ..privacy.context import FLAT_RELEASE_KEYWORDS, ReleaseContext
from ..privacy.events import REPLACE_ONE, GaussianSparseVectorEvent, PrivacyEvent, SparseVectorEvent
from ..privacy.mechanisms.svt import GaussianSparseVector, SparseVector, check_noise_scale
from ..privacy.report import PrivacyReport
from ..privacy.svt_scale import svt_laplace_scale
from ..privacy.validation import check_epsilon
from .abc_result import ABCDPResult, check_param_names
from .draws import as_draw_source

if TYPE_CHECKING:
    from ..distances.base import Distance


def check_epsilon_abc(epsilon_abc: Any) -> float:
    """ε_abc must be a finite number >= 0."""
    try:
        value = float(epsilon_abc)
    except (TypeError, ValueError):
        value = float("nan")
    if not math.isfinite(value) or value < 0:
        raise InvalidPrivacyParameterError(
            f"epsilon_abc (the ABC threshold) must be a finite number >= 0, got {epsilon_abc!r}. "
            "Distances are >= 0, so a negative threshold would accept only through noise."
        )
    return value


def check_release_options(options: Any, param_names: Any, meta: Any) -> None:
    """The options of an ABCDP call that are not privacy parameters, checked before the charge
    (issue 35): flags are booleans (``resample="no"`` would otherwise resample), ``meta`` a dict and
    ``param_names`` strings."""
    if not isinstance(options.resample, (bool, np.bool_)):
        raise InvalidPrivacyParameterError(
            f"options.resample must be True or False, got {options.resample!r}."
        )
    if options.progress is not None and not isinstance(options.progress, (bool, np.bool_)):
        raise InvalidDataError(f"options.progress must be True, False or None, got {options.progress!r}.")
    if meta is not None and not isinstance(meta, dict):
        raise InvalidDataError(f"meta must be a dict of public facts, got {type(meta).__name__}.")
    if isinstance(param_names, str) or not all(isinstance(n, str) for n in param_names):
        raise InvalidDataError(f"param_names must be a sequence of names (strings), got {param_names!r}.")


def check_c(c: Any, n_draws: int) -> int:
    """c must be an integer with 1 <= c <= T."""
    if isinstance(c, bool) or not isinstance(c, (int, np.integer, float)) or int(c) != c or int(c) < 1:
        raise InvalidPrivacyParameterError(
            f"c (the number of posterior samples to accept) must be an integer >= 1, got {c!r}."
        )
    if int(c) > n_draws:
        raise InvalidPrivacyParameterError(
            f"c={int(c)} exceeds the number of simulations T={n_draws}: ABCDP can accept at most "
            "T samples. Simulate more draws or lower c."
        )
    return int(c)


def _progress(total: int, enabled: bool | None, desc: str) -> Any:
    """A bar on a terminal (None: only there); asked for elsewhere, one line when the run ends
    (:func:`dpinfer.execution.progress.progress_bar`)."""
    import sys

    from ..execution.progress import progress_bar

    return progress_bar(total, desc, sys.stderr.isatty() if enabled is None else enabled, unit="draw")


def _batch_distances(distance: Distance, prepared: Any, theta: np.ndarray, sims: Any) -> np.ndarray:
    """ρ of one batch, checked: one finite distance per θ row (raises InvalidDataError)."""
    rho = np.asarray(distance.batch(prepared, sims), dtype=np.float64)
    theta = np.asarray(theta)
    if rho.ndim != 1 or theta.ndim != 2 or rho.shape[0] != theta.shape[0]:
        raise InvalidDataError(
            f"a batch of the stream has {theta.shape[0] if theta.ndim else '?'} parameter rows but the "
            f"distance returned shape {rho.shape}: a draw source must yield (θ (B, p), sims (B, ...)) "
            "with one simulated data set per θ row."
        )
    if not np.all(np.isfinite(rho)):
        raise InvalidDataError(
            "a distance of the batch is NaN or infinite; check the simulator output and the distance."
        )
    return rho


@dataclass(frozen=True)
class ABCDPOptions:
    """How an ABCDP release is made and run (the settings besides c, ε, ε_abc and δ).

    Attributes
    ----------
    noise
        ``"laplace"`` (default): Algorithm 1 of Park et al. (2021), pure ε_total-DP.
        ``"gaussian"``: threshold N(0, σ1²) and distance N(0, σ2²) noise, (ε_total, δ)-DP by the
        Rényi analysis of Zhu & Wang (2020, Theorem 8; :mod:`dpinfer.privacy.gaussian_svt`) with
        at most T queries (enforced by the engine), σ1, σ2 the least noise meeting the target
        (:func:`dpinfer.privacy.calibrate_gaussian_svt`); the event is a
        :class:`~dpinfer.privacy.GaussianSparseVectorEvent` and the ledger's accountant must be
        ``"rdp"``.
    resample
        Redraw the threshold noise after each acceptance (b = 2cΔρ/ε) instead of once
        (b = (c+1)Δρ/ε) - Theorem 1 of Park et al. (2021).
    release
        ``"svt"`` (default): the sparse vector, whose noise grows with c. ``"embedding"``:
        release once the RFF mean embedding of the observed data with Gaussian noise
        ((ε_total, δ)-DP whatever c and T), then accept θ_t whose simulated data's embedding plus
        simulated mechanism noise lies within ε_abc of it - post-processing, posterior given the
        release (:mod:`dpinfer.release.embedding`). Needs an :class:`~dpinfer.distances.RFFMMD`
        distance; ``noise`` and ``resample`` are then unused.
    batch_size
        Pairs per batch when the draws are arrays.
    progress
        Show a tqdm bar (None: only on a terminal).
    """

    noise: str = "laplace"
    resample: bool = False
    release: str = "svt"
    batch_size: int = 256
    progress: bool | None = False


@refuse_removed_keywords(FLAT_RELEASE_KEYWORDS)
def abcdp(
    observed: Any,
    draws: Any,
    distance: Distance,
    *,
    c: int,
    epsilon_total: float,
    epsilon_abc: float,
    delta: float = 0.0,
    options: ABCDPOptions | None = None,
    seed: Any = 0,
    context: ReleaseContext | None = None,
    param_names: tuple[str, ...] = (),
    meta: dict[str, Any] | None = None,
) -> ABCDPResult:
    """Run ABCDP (Algorithm 1) and release the accepted θ with an ε_total-DP guarantee.

    Parameters
    ----------
    observed
        The confidential data Y* (in the form ``distance`` expects, e.g. (N, d) points); N, the
        length of its first axis, is public (replace-one neighbours have the same size). A table
        or data source (pandas, polars, pyarrow, a Parquet/Arrow/CSV file, a DuckDB query:
        :func:`dpinfer.data.read_table`) gives its numeric columns as the points.
    draws
        The public stream: a ``(thetas (T, p), sims (T, ...))`` pair of arrays, an
        :class:`~dpinfer.release.ArrayDraws`, or a :class:`~dpinfer.release.SimulatedDraws` (prior +
        batched simulator). Consumed batch by batch: memory does not grow with T. At most its
        declared ``n_draws`` = T draws are examined, whatever it yields.
    distance
        A :class:`~dpinfer.distances.Distance`; its sensitivity Δρ = ``distance.sensitivity(N)``
        calibrates the noise. Proven for dpinfer's distances; any other distance is clipped to
        [0, Δρ] (:func:`~dpinfer.distances.release_sensitivity`).
    c
        Number of acceptances after which the algorithm stops (1 <= c <= T).
    epsilon_total
        The privacy level ε_total (pure DP, replace-one on the observed data).
    epsilon_abc
        The ABC threshold ε_abc >= 0.
    delta
        The δ of the guarantee; must be in (0, 1) with ``noise="gaussian"`` or
        ``release="embedding"``, 0 with Laplace.
    options
        :class:`ABCDPOptions`: the noise family (Laplace or Gaussian), resampling of the threshold
        noise, the release (sparse vector or one embedding), the batch size and a progress bar.
    seed
        With ``release="embedding"``: the public randomness of the simulated mechanism noise.
    context
        The :class:`~dpinfer.privacy.ReleaseContext`: the ledger and data set the event is charged
        to before any noise is drawn or anything is answered, and the source of the noise
        (``None``: unaccounted, with a warning, and OS entropy; tests pass
        ``ReleaseContext(privacy_rng=PrivacyRNG.insecure_deterministic(...))``). Its label
        defaults to ``"abcdp"``. The flat ``ledger=``/``dataset=``/``privacy_rng=`` keywords are
        refused with a :class:`TypeError` naming ``context=ReleaseContext(...)``.
    param_names, meta
        Names of the θ coordinates and public facts stored with the result.

    Returns
    -------
    ABCDPResult
        ``accepted`` θ, ``indicators``, ``n_draws`` examined, ``b``, ``posterior_mean`` and
        ``privacy`` (report of ``SparseVectorEvent(c, epsilon_total, resample)``, accountant
        "pure"; the sensitivity and the distance's description are public values only).

    Raises
    ------
    InvalidDataError, InvalidPrivacyParameterError
        Before anything is charged or released: NaN/inf in the observed data, dimensions that
        differ, c < 1 or c > T, a declared T that is not an integer >= 1, ε_abc < 0,
        ε_total <= 0, a sensitivity that is not a finite positive normal double, noise below the
        floating-point resolution of the threshold or the distances, a malformed first batch
        (simulated and its distances computed before the charge). A later batch of a
        :class:`SimulatedDraws` stream that turns out malformed (e.g. a simulator returning
        NaN) raises after the charge: the charge is then kept and marked ``failed`` in the
        ledger, and nothing is released.
    """
    # ---- validation: nothing is charged or released before all of this has passed ----------
    options, eps_total, eps_abc, source = _check_call(
        options, param_names, meta, epsilon_total, epsilon_abc, draws
    )
    noise, resample, release = options.noise, options.resample, options.release
    T = int(source.n_draws)
    c = check_c(c, T)
    ctx = ReleaseContext.of(context, label="abcdp")
    if is_source(observed) or container_kind(observed) != "array":
        # a table or data source (dpinfer.data): its numeric columns as (N, d) points; labels are
        # never stringified into the result
        observed = release_data(observed).X
    if release == "embedding":
        from .embedding import embedding_abc

        return embedding_abc(observed, source, distance, c=c, epsilon=eps_total, delta=delta,
                             epsilon_abc=eps_abc, seed=seed, context=ctx, param_names=tuple(param_names),
                             meta=meta)
    if release != "svt":
        raise InvalidPrivacyParameterError(f"release must be 'svt' or 'embedding', got {release!r}.")
    sens = release_sensitivity(distance, count_records(observed), warn=False)  # public: N and declared bounds
    event, b, sigma_q = _noise_event(noise, delta, c, eps_total, sens.sensitivity, resample, T)
    for scale in (b, sigma_q) if noise == "gaussian" else (b,):
        check_noise_scale(scale, magnitude=max(eps_abc, sens.bound), name="ABCDP noise scale")
    dist = sens.distance
    prepared = dist.prepare(observed)  # checks the observed data (finite, shape)
    batches = source.batches()
    theta0, sims0 = _first_batch(batches)
    rho0 = _batch_distances(dist, prepared, theta0, sims0)  # checks the simulations against Y*
    check_param_names(param_names, theta0.shape[1])
    sens.warn_if_enforced()
    gauss = noise == "gaussian"

    # ---- the private step -------------------------------------------------------------------
    def run(_: Any) -> tuple[list[np.ndarray], list[np.ndarray], int, bool]:
        with _progress(T, options.progress, "ABCDP") as bar:
            engine: SparseVector = (
                GaussianSparseVector.from_event(event, sens.sensitivity, eps_abc, ctx)  # type: ignore[arg-type]
                if gauss
                else SparseVector.from_event(event, sens.sensitivity, eps_abc, ctx,  # type: ignore[arg-type]
                                             max_queries=T)
            )
            return _answer_stream(engine, (theta0, rho0), batches, dist, prepared, c, bar)

    accepted, accepted_index, offset, overflow = ctx.release(event, run, what="ABCDP release")
    if overflow:
        _warn_overflow(T)
    acc = np.concatenate(accepted) if accepted else np.zeros((0, theta0.shape[1]))
    idx = np.concatenate(accepted_index) if accepted_index else np.zeros(0, dtype=np.int64)
    report = _report(event, delta, sens, ctx, (b, sigma_q), c, bool(resample), eps_abc, T, offset)
    return ABCDPResult(
        accepted=acc,
        accepted_index=idx,
        n_draws=offset,
        epsilon_abc=eps_abc,
        param_names=tuple(param_names),
        meta=dict(meta or {}),
        c=c,
        b=b,
        resample=bool(resample),
        privacy=report,
        noise=str(noise),
        sigma_query=sigma_q,
    )


def _check_call(
    options: Any, param_names: Any, meta: Any, epsilon_total: Any, epsilon_abc: Any, draws: Any
) -> tuple[ABCDPOptions, float, float, Any]:
    """The options, ε_total and ε_abc (checked, in this order), and the draw source."""
    if options is None:
        options = ABCDPOptions()
    elif not isinstance(options, ABCDPOptions):
        raise TypeError(f"options= takes an ABCDPOptions(...), got {type(options).__name__}.")
    check_release_options(options, param_names, meta)
    eps_total = check_epsilon(epsilon_total, "epsilon_total")
    eps_abc = check_epsilon_abc(epsilon_abc)
    return options, eps_total, eps_abc, as_draw_source(draws, batch_size=options.batch_size)


def _first_batch(batches: Any) -> tuple[np.ndarray, Any]:
    """The first batch of draws (simulated, and checked, before the charge)."""
    try:
        return next(batches)
    except StopIteration:
        raise InvalidDataError("the stream of simulations is empty (its n_draws said otherwise).") from None


def _warn_overflow(T: int) -> None:
    """The draw source yielded more draws than it declared (at ``abcdp``'s caller)."""
    warnings.warn(
        f"the draw source yielded more than its declared n_draws = {T} draws; ABCDP answered only "
        f"the first {T} (the number its noise is calibrated for) and ignored the rest. Declare "
        "the true number of draws.",
        InferenceWarning,
        stacklevel=3,
    )


def _answer_stream(
    engine: SparseVector, first: tuple[np.ndarray, np.ndarray], batches: Any, dist: Distance, prepared: Any,
    c: int, bar: Any,
) -> tuple[list[np.ndarray], list[np.ndarray], int, bool]:
    """The private step: answer the distances batch by batch until the engine stops. Returns the
    accepted θ and indices per batch, the draws examined, and whether the source yielded more
    than its declared ``n_draws`` (the engine stopped on its query cap with draws left)."""
    accepted: list[np.ndarray] = []
    accepted_index: list[np.ndarray] = []
    offset, overflow = 0, False
    theta, rho = first
    while True:
        answers = engine.process(rho)
        hit = np.flatnonzero(answers)
        if hit.size:
            accepted.append(theta[hit])
            accepted_index.append(hit + offset)
        offset += answers.size
        bar.update(answers.size)
        if engine.done:
            overflow = engine.exhausted and engine.count < c and (
                answers.size < rho.size or next(batches, None) is not None
            )
            break
        try:
            theta, sims = next(batches)
        except StopIteration:
            break
        rho = _batch_distances(dist, prepared, theta, sims)
    return accepted, accepted_index, offset, overflow


def _report(
    event: PrivacyEvent, delta: Any, sens: Any, ctx: ReleaseContext, scales: tuple[float, float], c: int,
    resample: bool, eps_abc: float, T: int, offset: int,
) -> PrivacyReport:
    """The privacy report of an ABCDP release (public values only)."""
    b, sigma_q = scales
    gauss = isinstance(event, GaussianSparseVectorEvent)
    return PrivacyReport.from_event(
        event,
        delta=float(delta) if gauss else 0.0,
        accountant="rdp" if gauss else "pure",
        sensitivity=sens.sensitivity,
        accounted=ctx.accounted,
        mechanism="abcdp-gaussian-svt" if gauss else "abcdp-svt",
        insecure_rng=ctx.insecure,
        details={
            "b": b,
            "threshold_noise": f"N(0, {b:.6g}^2)" if gauss else f"Lap({b:.6g})",
            "distance_noise": f"N(0, {sigma_q:.6g}^2)" if gauss else f"Lap({2 * b:.6g})",
            "c": c,
            "resample": bool(resample),
            "epsilon_abc": eps_abc,
            "distance": sens.config,
            "sensitivity_proof": sens.proof,
            "max_queries": T,
            "n_draws_examined": offset,
            "theorem": "Zhu & Wang 2020, Theorem 8 (Renyi DP), max_queries = T"
            if gauss
            else "Park et al. 2021, Theorem 1",
            "noise_source": "OS CSPRNG (PrivacyRNG); continuous noise by inverse CDF of 52-bit "
            "uniforms, only compared, never released",
        },
    )


def _noise_event(
    noise: str, delta: Any, c: int, eps_total: float, delta_rho: float, resample: bool, n_draws: int
) -> tuple[PrivacyEvent, float, float]:
    """(event, threshold noise scale, distance noise std or 0) of the chosen noise family."""
    if noise == "laplace":
        if delta not in (0, 0.0):
            raise InvalidPrivacyParameterError(
                f"Laplace ABCDP is pure epsilon-DP: delta must be 0, got {delta!r}; use "
                "noise='gaussian' for an (epsilon, delta) guarantee."
            )
        b = svt_laplace_scale(c, eps_total, delta_rho, resample=resample)  # Theorem 1, eq. (9)
        return SparseVectorEvent(c, eps_total, resample=bool(resample), neighbouring=REPLACE_ONE), b, 0.0
    if noise != "gaussian":
        raise InvalidPrivacyParameterError(f"noise must be 'laplace' or 'gaussian', got {noise!r}.")
    try:
        d = float(delta)
    except (TypeError, ValueError):
        d = float("nan")
    if not 0.0 < d < 1.0:
        raise InvalidPrivacyParameterError(
            f"Gaussian ABCDP needs a delta in (0, 1), got {delta!r} (e.g. delta=1e-6)."
        )
    event: GaussianSparseVectorEvent = calibrate_gaussian_svt(eps_total, d, c, n_draws, bool(resample))
    return (
        event,
        event.threshold_noise_multiplier * delta_rho,
        event.query_noise_multiplier * delta_rho,
    )


__all__ = ["ABCDPOptions", "abcdp", "check_c", "check_epsilon_abc"]
