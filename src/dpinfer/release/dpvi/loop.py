"""Step 4 of a DPVI fit: the training loop (Jälkö, Dikmen & Honkela 2017, Algorithm 1).

For t = 1..T::

    B_t   = a minibatch (Poisson(q) or the paper's B = int(qN) with replacement)
    θ     = u + L ε,  ε ~ N(0, I)                              (reparameterisation, S draws)
    g̃_t   = Σ_{i ∈ B_t} clip(∇ ELBO_i, C) + N(0, (σC)² I)         (the release of step t)
    u, L  ← ascent step of the optimizer on s·g̃_t (+ the data-free terms)

(with the default ``per_example="theta"`` the clipped rows are ∇_θ log p(y_i | θ_s) and g̃_t is
pulled back to (u, L) after the noise; :mod:`dpinfer.release.dpvi.gradients`)

with ``s = 1/q`` (Poisson) or ``n/B`` (fixed batches). With ``clip="auto"`` (or ``clip_count``)
each step also releases the private count of unclipped rows, and C_t adapts to it
(:mod:`dpinfer.release.dpvi.optim`); the per-step private estimates are returned for the report.
Randomness: the minibatches and the noise of a private fit are drawn by the privacy core
(:mod:`dpinfer.privacy.subsampling`, :mod:`dpinfer.privacy.mechanisms.gaussian_sum`) through the
fit's :class:`~dpinfer.privacy.context.ReleaseContext`, inside the release
:meth:`~dpinfer.release.dpvi.DPVI.fit` charged before the loop (never from the seed); the seed's
three children drive,
respectively, the minibatches of a *non-private* baseline, the Monte Carlo draws ε and
(``init_scale > 0``) the initial means — see :mod:`dpinfer.release.dpvi.engine`.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ...errors import InvalidDataError
from ...privacy.context import ReleaseContext
from .diagnostics import Trajectory
from .families import LOW_NOISE, GaussianFamily
from .gradients import combine, elbo_estimate, per_example_terms
from .models import Model
from .optim import DPOptimizer, count_noise_std, default_clip_quantile, noise_error_per_clip
from .sampling import draw_batch
from .schedule import phase_of_step
from .validation import FitSpec

#: the tail average starts at step ⌊AVERAGE_FROM·T⌋ (with ``average=True``)
AVERAGE_FROM = 0.5
#: the default AdaGrad learning rate when the gradient noise is small (OptimizerOptions.lr)
LOW_NOISE_LR = 0.05
#: with the default learning rate (``lr=None``) and tail averaging, the steps before the averaged
#: tail run at this multiple of it: the windowed AdaGrad step is about lr/sqrt(10) in parameter
#: units whatever the gradient, so at lr 0.05 a mean several units from its start on a
#: correlated (uncentred features + intercept) logistic regression was still 2-3 posterior sd
#: away after 1000 non-private steps (issue 29); the averaged tail keeps the small step. Measured
#: by ``benchmarks/dpvi_calibration.py`` (non-private default fits within 0.53 sd of the exact
#: posterior on both of its problems, ``benchmarks/results/dpvi_calibration.json``)
BURN_IN_FACTOR = 4.0
#: ... but only where the gradient noise is small (λ <= this, the LOW_NOISE rule of the default
#: rate): where the privacy noise dominates, the windowed AdaGrad's normalised step is mostly
#: noise, and 4x that step before the tail left the iterates far from the optimum when the
#: averaging started (issue 39 item 7: held-out GLMs against exact posteriors, average |z| at
#: ε = 0.5 from 4.8 to 8.6 on logistic and 5.1 to 7.5 on Poisson regressions). Held-out table of
#: ``benchmarks/dpvi_accuracy.py`` (4 GLMs, one fit per cell; ``benchmarks/results/dpvi_accuracy.json``),
#: average |z| 4x burn-in everywhere -> here: 2.68 -> 2.29 (ε = 0.5), 1.28 -> 1.07 (ε = 1),
#: 1.01 -> 0.88 (ε = 2), 0.14 -> 0.14 (ε = 100, unchanged: the low-noise path is the same)
BURN_IN_MAX_NOISE = LOW_NOISE


def _seed_ints(seq: np.random.SeedSequence) -> int:
    return int(seq.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


@dataclass
class LoopState:
    """Everything the loop starts from (prepared before the ledger charge).

    Attributes
    ----------
    params
        The initial variational parameters.
    X, y
        The data as tensors of ``dtype``.
    batch_source
        The fit's ReleaseContext (private fits: secret batches drawn by the privacy core) or a
        seeded torch Generator (non-private baselines).
    mc_generator
        The seeded generator of the Monte Carlo draws ε.
    scale
        ``1/q`` (Poisson) or ``n/B`` (fixed batches).
    track_elbo, every
        Whether and how often the (confidential) minibatch ELBO is recorded.
    seed
        The simulation seed (its entropy goes into the result's config).
    """

    params: torch.Tensor
    X: torch.Tensor
    y: torch.Tensor
    batch_source: Any
    mc_generator: torch.Generator
    scale: float
    dtype: torch.dtype
    track_elbo: bool
    every: int
    seed: np.random.SeedSequence


def prepare_loop(
    model: Model,
    family: GaussianFamily,
    spec: FitSpec,
    context: ReleaseContext | None,
    seed: int | np.random.SeedSequence | None,
) -> LoopState:
    """Tensors, generators and initial parameters; ``context`` None means a non-private fit."""
    tr = spec.training
    tdtype = torch.float64 if tr.dtype == "float64" else torch.float32
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    ss_sub, ss_mc, ss_init = ss.spawn(3)
    # the batches of a private fit are secret: drawn through the context, never from the seed
    batch_source: Any = (
        context if context is not None else torch.Generator().manual_seed(_seed_ints(ss_sub))
    )
    params = family.init_params(tdtype)
    if tr.init_scale > 0:
        u0 = np.random.default_rng(ss_init).normal(0.0, float(tr.init_scale), model.dim)
        params[: model.dim] = torch.as_tensor(u0, dtype=tdtype)
    dev = spec.device  # everything random is drawn on the CPU and moved (a no-op on the CPU)
    track = (not spec.private) if tr.track_elbo is None else tr.track_elbo
    return LoopState(
        params=params.to(dev),
        X=torch.as_tensor(spec.X, dtype=tdtype).to(dev),
        y=torch.as_tensor(spec.y, dtype=tdtype).to(dev),
        batch_source=batch_source,
        mc_generator=torch.Generator().manual_seed(_seed_ints(ss_mc)),
        scale=1.0 / spec.q if spec.sampling == "poisson" else spec.n / spec.batch,
        dtype=tdtype,
        track_elbo=bool(track),
        every=int(tr.elbo_every) if tr.elbo_every else max(1, spec.steps // 200),
        seed=ss,
    )


def run_loop(
    model: Model,
    family: GaussianFamily,
    spec: FitSpec,
    state: LoopState,
    noise_multiplier: float,
    context: ReleaseContext | None,
    *,
    draw: Callable[..., torch.Tensor] = draw_batch,
    progress: bool = False,
    callback: Callable[[int, np.ndarray], None] | None = None,
    record: Trajectory | None = None,
) -> tuple[torch.Tensor, list[tuple[float, float]], dict[str, Any] | None]:
    """Run the T steps (module docstring); returns the final parameters, the ELBO trace and the
    private clip record (``None`` without the private count; see :func:`clip_record`).

    ``context`` is the fit's :class:`~dpinfer.privacy.context.ReleaseContext` (``None``: a
    non-private fit); the caller has charged the whole fit before this call, and every secret draw
    of the loop runs inside that release. ``draw(n, q, source, sampling)`` draws each minibatch
    (default :func:`dpinfer.release.dpvi.sampling.draw_batch`). ``record``, when given, is filled
    with the public per-step quantities of :mod:`dpinfer.release.dpvi.diagnostics` (the noise sd
    and effective rate of the mean coordinates, the half-tail sums of the iterates).

    Raises
    ------
    InvalidDataError
        The parameters diverged (the fit stays charged).
    """
    counting = spec.clip_count and context is not None and noise_multiplier > 0
    dp = DPOptimizer(
        spec.optimizer,
        spec.clip,
        noise_multiplier,
        context,
        count_noise=count_noise_std(spec.q * spec.n, noise_multiplier) if counting else None,
        expected_batch=spec.q * spec.n,
        adaptive=counting and spec.adaptive,
        target_quantile=_target_quantile(spec, noise_multiplier, model.dim),
    )
    lam = noise_error(spec, noise_multiplier, model.dim)
    if spec.optimizer_options.lr is None and spec.optimizer_options.optimizer == "adagrad":
        low_noise = lam <= LOW_NOISE
        dp.optimizer.lr = LOW_NOISE_LR if low_noise else dp.optimizer.lr  # options.OptimizerOptions
    params, scale, mode = state.params, state.scale, spec.per_example
    base_lr = dp.optimizer.lr
    # the faster burn-in only where the noise is small (BURN_IN_MAX_NOISE)
    burn_in = spec.optimizer_options.lr is None and spec.training.average and lam <= BURN_IN_MAX_NOISE
    S, D = spec.mc_samples, model.dim
    trace: list[tuple[float, float]] = []
    # Polyak–Ruppert average from step ⌊AVERAGE_FROM·T⌋ on (post-processing)
    tail, total = int(AVERAGE_FROM * spec.steps), None
    if record is not None:
        record.tail, record.split = tail, tail + (spec.steps - tail) // 2
        record.fit_from = spec.steps // 4
        record.momentum = float(getattr(dp.optimizer, "momentum", 0.0))
    # the privacy noise on each mean coordinate of the released gradient, per unit of σ_Δ·C_t
    noise_factor = {"theta": math.sqrt(S), "likelihood": 1.0, "elbo": 1.0}[mode]
    starts = {} if spec.phases is None else dict(phase_of_step(spec.phases))
    q = spec.q
    iterator: Any = range(spec.steps)
    if progress:
        from tqdm.std import tqdm  # a terminal only: tqdm.auto would warn in a kernel without widgets

        iterator = tqdm(iterator, desc="dpvi", disable=not sys.stderr.isatty())
    for t in iterator:
        if t in starts:  # a new phase of the schedule: q_k, σ_k (and C_k)
            ph = starts[t]
            q, scale, z = ph.rate, 1.0 / ph.rate, noise_multiplier * ph.noise_scale
            dp.set_phase(
                z,
                count_noise=count_noise_std(q * spec.n, z) if counting else None,
                expected_batch=q * spec.n,
                clip=None if spec.adaptive else (spec.clip if ph.clip is None else ph.clip),
            )
        if burn_in and t <= tail:  # the default rate: BURN_IN_FACTOR x until the averaged tail
            dp.optimizer.lr = base_lr * (BURN_IN_FACTOR if t < tail else 1.0)
        idx = draw(spec.n, q, state.batch_source, spec.sampling).to(state.X.device)
        Xb, yb = state.X[idx], state.y[idx]
        eps = torch.randn(S, D, generator=state.mc_generator, dtype=state.dtype).to(state.X.device)
        rows, free = per_example_terms(model, family, params, Xb, yb, eps, scale, mode)
        step_noise = dp.noise_std * noise_factor * (1.0 if mode == "elbo" else scale)
        gradient = combine(dp.privatize(rows), free, scale, mode, family, params, eps)
        if state.track_elbo and t % state.every == 0:
            trace.append((t, elbo_estimate(model, family, params, Xb, yb, eps, scale)))
        if record is not None:
            record.add_response(
                t,
                params[:D].detach().to(torch.float64).cpu().numpy(),
                gradient[:D].detach().to(torch.float64).cpu().numpy(),
            )
        params = dp.step(params, gradient)
        if record is not None:
            rate = dp.optimizer.last_rate
            rate_u = (
                rate[:D].detach().to(torch.float64).cpu().numpy()
                if isinstance(rate, torch.Tensor)
                else np.full(D, float(rate))
            )
            record.rates.append(rate_u)
            record.noise.append(float(step_noise))
            if t >= tail:
                record.add_iterate(
                    t,
                    params[:D].detach().to(torch.float64).cpu().numpy(),
                    gradient[:D].detach().to(torch.float64).cpu().numpy(),
                )
        if spec.training.average and t >= tail:
            total = params.clone() if total is None else total + params
        if callback is not None:
            callback(t, params.detach().cpu().numpy().copy())
    if total is not None:
        params = total / (spec.steps - tail)
    if not bool(torch.all(torch.isfinite(params))):
        raise InvalidDataError(
            "the variational parameters diverged (non-finite values); lower lr or clip. The "
            "privacy budget of this fit stays charged."
        )
    return params, trace, clip_record(dp) if counting else None


def noise_error(spec: FitSpec, noise_multiplier: float, dim: int) -> float:
    """λ of :func:`~dpinfer.release.dpvi.optim.noise_error_per_clip` for this fit: public σ, q, n, D and
    the number of averaged steps (1 for the last iterate); 0 for a non-private fit. Under
    add-remove n is secret, so nothing may depend on it: λ = inf there (the defaults for a noisy
    fit: mean-field, lr 0.1)."""
    if noise_multiplier > 0 and spec.privacy.neighbouring != "replace-one":
        return math.inf
    averaged = spec.steps - int(AVERAGE_FROM * spec.steps) if spec.training.average else 1
    return noise_error_per_clip(noise_multiplier, spec.q, spec.n, averaged, dim)


def _target_quantile(spec: FitSpec, noise_multiplier: float, dim: int) -> float:
    """The adaptive clip's γ: the user's, or :func:`~dpinfer.release.dpvi.optim.default_clip_quantile` of
    λ."""
    if spec.privacy.clip_quantile is not None:
        return float(spec.privacy.clip_quantile)
    return default_clip_quantile(noise_error(spec, noise_multiplier, dim))


def clip_record(dp: DPOptimizer) -> dict[str, Any]:
    """The private clipping record of a fit: only post-processing of the released counts.

    ``clipped_fraction`` is 1 − b̃ averaged over the last half of the steps (the adaptive clip
    settles within tens of steps) and ``clip_final`` the last clip norm. The per-step noisy counts
    (and the per-step clip norms, from which they can be read back) are NOT kept (issue 35): each
    is a float64 sum of a half-integer count and float Gaussian noise, whose low-order bits could
    reveal the count (Mironov 2012), and the fit does not need them once it has run. What is kept
    are aggregates of the whole transcript, post-processing like the fitted parameters, under the
    floating-point caveat of :mod:`dpinfer.privacy.mechanisms.gaussian_sum`.
    """
    clipped = 1.0 - np.asarray(dp.unclipped_trace, dtype=np.float64)
    half = clipped[len(clipped) // 2 :]
    return {
        "clipped_fraction": float(np.clip(half.mean(), 0.0, 1.0)) if half.size else None,
        "clip_final": float(dp.clip_norm),  # type: ignore[arg-type]
        "clip_quantile": dp.target_quantile if dp.adaptive else None,
        "gradient_noise_multiplier": dp.gradient_multiplier,
        "count_noise_std": dp.count_noise,
    }


def warn_clipped(clipping: dict[str, Any] | None) -> None:
    """Warn when the private estimate says more than half the rows were clipped."""
    frac = None if clipping is None else clipping["clipped_fraction"]
    if frac is not None and frac > 0.5:
        warnings.warn(
            f"about {100 * frac:.0f}% of the per-example gradients were clipped (private estimate, "
            "last half of the steps): the fit may target a clipping artefact rather than the "
            "posterior. Raise the clip (or use clip='auto') or standardise the features.",
            UserWarning,
            stacklevel=3,
        )


__all__ = [
    "LoopState", "clip_record", "draw_batch", "noise_error", "prepare_loop", "run_loop", "warn_clipped",
]
