"""The option groups of :meth:`dpinfer.release.dpvi.DPVI.fit`: privacy, optimizer and training.

As Opacus separates ``make_private`` (noise, clipping, accountant) from the optimizer and the
training loop, a DPVI fit takes the settings given on every call as keywords (ε, δ, the seed, the
:class:`~dpinfer.privacy.context.ReleaseContext`) and everything else in three frozen groups:

* :class:`PrivacyOptions` — how the guarantee is reached and accounted: σ (instead of ε), the clip
  norm C, the accountant, the neighbouring relation, the sampling scheme and the paper's
  accounting convention (δ');
* :class:`OptimizerOptions` — the ascent rule and its learning rate;
* :class:`TrainingOptions` — T, q, the Monte Carlo draws, initialisation, the per-example split,
  the float type, the (confidential) ELBO trace, the device, and how the run is watched (progress
  bar, per-step callback).

Each setting has one place: ``fit(X, y, epsilon=1.0, delta=1e-5,
privacy=PrivacyOptions(clip=5.0), training=TrainingOptions(steps=1000))``. ε and δ may also be
given in :class:`PrivacyOptions` (e.g. a group built once for several fits), but not in both
places (:func:`merge_privacy`). The groups only hold values; they are validated, with everything
else, before anything is charged (:func:`dpinfer.release.dpvi.validation.validate_fit`). What the
data are (bounds, offset, intercept, names, schema) is :class:`dpinfer.DataSpec`
(:mod:`dpinfer.models.data_spec`), the one description of the data that ``private_glm`` takes too
(``DataOptions`` before issue 40 item 4, refused with a message naming it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ...models.data_spec import removed_name
from ...privacy.accountants import Accountant


@dataclass(frozen=True)
class PrivacyOptions:
    """How private a fit is and how that is accounted (see :mod:`dpinfer.release.dpvi.engine`).

    Attributes
    ----------
    epsilon, noise_multiplier
        Exactly one for a private fit: the ε target σ is calibrated to (usually given as
        ``fit(..., epsilon=...)``), or σ itself (noise std σC).
    delta
        δ of the guarantee (> 0; usually ``fit(..., delta=...)``).
    clip
        ``"auto"`` (default): adaptive clipping estimated privately (Andrew et al. 2021; see
        :mod:`dpinfer.release.dpvi.optim`), replace-one and Poisson batches only; for ``private=False``
        it means no clipping. A number: the fixed per-example L2 clip norm C. ``None``: only for
        a non-private fit.
    clip_count
        Release the private count of unclipped rows every step (the clipped fraction in the
        report; costs the σ → σ_Δ adjustment of the gradient noise, no extra event). Always on
        for ``clip="auto"``; default off for a numeric clip.
    clip_quantile
        γ: the quantile of the per-example norms the adaptive clip targets. ``None`` (default):
        0.999 when the gradient noise is small (high ε; public rule of
        :func:`dpinfer.release.dpvi.optim.default_clip_quantile`), else 0.995 (about 0.5% of
        the rows clipped at the fixed point; Andrew et al. use 0.5, which clips half and, on a
        standardised logistic regression with n = 2000, moves the means by several posterior
        sd; 0.98 still moves them by about 0.4 sd at ε = 100). Lower quantiles trade this bias
        for less noise: at very small ε (Abalone, ε = 0.12) γ = 0.9 predicts better.
    accountant
        ``"pld"`` (default for Poisson), ``"rdp"``, ``"advanced"`` (default and required for
        with-replacement batches) or an accountant instance.
    neighbouring
        ``"replace-one"`` (default; the paper's) or ``"add-remove"``.
    sampling
        ``"poisson"`` (default) or ``"with-replacement"`` (the paper's fixed-size batches).
    paper_accounting, delta_prime
        The authors' ``2·act(2σ_paper, δ/2, δ')`` convention and the δ' of advanced composition.
    """

    epsilon: float | None = None
    delta: float | None = None
    noise_multiplier: float | None = None
    clip: float | str | None = "auto"
    clip_count: bool | None = None
    clip_quantile: float | None = None
    accountant: str | Accountant | None = None
    neighbouring: str = "replace-one"
    sampling: str = "poisson"
    paper_accounting: bool = False
    delta_prime: float | None = None


@dataclass(frozen=True)
class OptimizerOptions:
    """The ascent rule: ``"adagrad"`` (windowed, window 10; the paper's), ``"adam"`` or ``"sgd"``,
    with learning rate ``lr``. ``None`` (default): 0.1 (the paper's for DP), or 0.05 for the
    windowed AdaGrad when the gradient noise is small (λ <= 0.05 of
    :func:`dpinfer.release.dpvi.optim.noise_error_per_clip`, 0 without privacy): the normalised AdaGrad step
    is about lr/sqrt(10) in parameter units whatever the gradient, so the iterates jitter by about
    a posterior sd around the optimum and, through a nonlinear likelihood, their average is
    biased (Poisson regression, n = 2000, ε = 100, 8 seeds: −0.25 posterior sd at 0.1, −0.14 at
    0.05; an unknown noise scale's log σ 0.25 against 0.10). Where the noise dominates the scale
    parameters need the larger step to come down from their start within T steps (at ε = 1 the
    sd ratios go from about 2 to about 4 at 0.05), so 0.1 stays."""

    optimizer: str = "adagrad"
    lr: float | None = None


@dataclass(frozen=True)
class TrainingOptions:
    """The iterations of Algorithm 1 (Jälkö et al. 2017).

    Attributes
    ----------
    steps
        T >= 1 iterations.
    sampling_rate
        q in (0, 1]: Poisson inclusion probability, or the batch fraction for with-replacement
        batches (B = int(qN)).
    mc_samples
        Monte Carlo draws of θ per step; ``None``: 4 with ``per_example="theta"``, 1 (the
        paper's) otherwise. One draw makes the scale gradient's ε² factor (a χ²₁ with median
        0.45 against mean 1) so skewed that the self-normalised AdaGrad step settles with the sd
        about 15-25% too large (and the means inflated with it); four draws remove this.
    init_scale
        Initial means ~ N(0, init_scale²) from the seed (0: u = 0, unit scales, as PyMC3).
    per_example
        ``"theta"`` (default: the per-example likelihood gradients with respect to θ at the shared
        draws are clipped before any 1/q or N scaling and pulled back to the variational
        parameters after the noise, prior and entropy exact outside the clipping),
        ``"likelihood"`` (the same, but clipping and noising the gradients with respect to the
        variational parameters: the scale parameters then get the full noise) or ``"elbo"`` (the DPVI
        paper's reproduction: scaled per-example ELBO terms are clipped, so with C = 5 nearly
        every row is clipped and the fit is not the ELBO optimum; use it to reproduce the paper).
    average
        Return the mean of the iterates over the last half of the steps (Polyak–Ruppert tail
        averaging; post-processing of the released gradients, no privacy cost) instead of the
        last iterate, whose fixed-learning-rate jitter is about one posterior sd on its own.
        ``False`` returns the last iterate (the DPVI paper's).
    dtype
        ``"float64"`` or ``"float32"``.
    track_elbo, elbo_every
        Record minibatch ELBO estimates every ``elbo_every`` steps (computed on the confidential
        data without noise: default on for non-private fits only).
    schedule
        A sequence of :class:`dpinfer.release.dpvi.schedule.Phase` (σ, C or q per phase, composed by the
        accountant); its phases replace ``steps`` (T is their total) and a phase without a
        sampling rate takes ``sampling_rate``. ``None``: one phase.
    device
        ``"cpu"`` (default), ``"cuda"`` or ``"auto"`` (CUDA when torch sees a GPU): where the
        per-example gradients, clipping, sums and updates run
        (:func:`dpinfer.execution.device.resolve_device`; an unavailable ``"cuda"`` is refused
        at validation, before anything is charged). The minibatch indices and the Gaussian noise
        are still drawn on the CPU by the privacy core (:mod:`dpinfer.privacy.subsampling`,
        :mod:`dpinfer.privacy.mechanisms.gaussian_sum`) from the fit's
        :class:`~dpinfer.privacy.context.ReleaseContext` (and the Monte Carlo draws from the seed)
        and then moved to the device, so the release has the same distribution on every device;
        the CPU path is unchanged.
    threads
        torch's intra-op threads during the fit (default 1; ``None`` leaves torch's setting). One
        thread is fastest for the usual batches and on a shared machine, where several threads wait
        for each other at every operation (a batch of 1000 records with 100 features: 2.2 ms per
        step on one thread against 93–176 ms on two, with one other busy process on 2 cores;
        :mod:`dpinfer.execution.threads`). Batches of 10⁵ records on a quiet many-core machine run
        faster with ``threads=None``. The released distribution does not depend on it.
    progress
        Show a progress bar (on a TTY).
    callback
        ``callback(step, params)`` after every step (e.g. to record a trajectory); it may call
        :meth:`~dpinfer.release.dpvi.DPVI.privacy_spent` for the ε of the steps done so far.
    """

    steps: int = 1000
    sampling_rate: float = 0.05
    mc_samples: int | None = None
    init_scale: float = 0.0
    per_example: str = "theta"
    average: bool = True
    dtype: str = "float64"
    track_elbo: bool | None = None
    elbo_every: int | None = None
    schedule: Any = None
    device: Any = "cpu"
    threads: int | None = 1
    progress: bool = False
    callback: Callable[[int, Any], None] | None = None


def __getattr__(name: str) -> object:
    """``DataOptions`` became :class:`dpinfer.DataSpec` (issue 40 item 4): refused, naming it."""
    if name == "DataOptions":
        raise removed_name(__name__, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: fit keywords that moved into ``data=DataSpec(...)`` (issues 37 and 40): refused, naming the new place
MOVED_TO_DATA = ("intercept", "bounds", "offset", "feature_names", "schema")


def refuse_moved(removed: dict[str, Any]) -> None:
    """Refuse the keywords :meth:`~dpinfer.release.dpvi.DPVI.fit` no longer takes.

    Raises
    ------
    TypeError
        Always, when ``removed`` is not empty: a moved keyword names ``data=DataSpec(...)``,
        anything else is an unknown keyword.
    """
    if not removed:
        return
    moved = [k for k in removed if k in MOVED_TO_DATA]
    if moved:
        spelled = ", ".join(f"{k}=..." for k in moved)
        raise TypeError(
            f"DPVI.fit no longer takes {', '.join(moved)} as keywords: give "
            f"data=dpinfer.DataSpec({spelled}). Nothing was charged."
        )
    raise TypeError(f"DPVI.fit got unexpected keyword argument(s) {', '.join(sorted(removed))}.")


def check_group(name: str, group: Any, cls: type) -> Any:
    """``group``, or ``cls()`` for None; anything else is refused with the group's name."""
    if group is None:
        return cls()
    if not isinstance(group, cls):
        raise TypeError(
            f"{name}= takes a {cls.__name__}(...), got {type(group).__name__}; e.g. "
            f"{name}={cls.__name__}(...) from dpinfer.release.dpvi."
        )
    return group


def merge_privacy(
    privacy: PrivacyOptions | None, epsilon: float | None, delta: float | None
) -> PrivacyOptions:
    """The privacy group of a fit with the ``epsilon``/``delta`` keywords of ``fit`` filled in.

    Raises
    ------
    TypeError
        ``privacy`` is not a :class:`PrivacyOptions`, or it sets ε (or δ) and the keyword gives it
        too (each value is given once, so none is silently ignored).
    """
    group = check_group("privacy", privacy, PrivacyOptions)
    given = {k: v for k, v in (("epsilon", epsilon), ("delta", delta)) if v is not None}
    twice = sorted(k for k in given if getattr(group, k) is not None)
    if twice:
        raise TypeError(
            f"{', '.join(twice)} given both as a keyword of fit and in privacy=PrivacyOptions(...); "
            "give each value once."
        )
    return replace(group, **given) if given else group


__all__ = [
    "MOVED_TO_DATA", "OptimizerOptions", "PrivacyOptions", "TrainingOptions", "check_group",
    "merge_privacy", "refuse_moved",
]
