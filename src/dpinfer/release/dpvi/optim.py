"""The DP gradient step, split into clip / accumulate / noise / step.

For a batch of per-example gradients g_i (rows of a (B, P) tensor) one DPVI iteration releases

    g̃ = Σ_i clip(g_i, C) + N(0, (σ C)² I),     clip(g, C) = g · min(1, C / ||g||₂)

(Jälkö et al. 2017, Algorithm 1; the Gaussian sum query of DP-SGD), and an optimizer turns g̃ into
a parameter update. The optimizers *ascend* the ELBO:

* :class:`WindowedAdaGrad`: PyMC3's ``adagrad_window`` used by the authors,
  θ ← θ + lr · g / sqrt(Σ_{last `window` steps} g² + stabiliser), window 10, stabiliser 0.1;
* :class:`Adam` (Kingma & Ba 2015);
* :class:`SGD`, plain ascent (the privatised gradient enters the update linearly).

The release itself — clipping, the sum, the Gaussian noise of std σC and the private count — is
the privacy core's :mod:`dpinfer.privacy.mechanisms.gaussian_sum`: its noise comes from the
:class:`~dpinfer.privacy.context.ReleaseContext` the optimizer holds (the OS CSPRNG at every step,
never the user's seed), drawn inside the fit's release, which the caller charges up front. That
module also states the floating-point position of the transcript (plain float noise, as Opacus's
secure mode: the released gradients are not on a grid; a fit returns parameters, post-processing
of them) and why non-finite rows become zero rows inside the clipped contribution.

Private clip count and adaptive clipping (Andrew, Thakkar, McMahan & Ramaswamy 2021,
"Differentially private learning with adaptive clipping", Algorithm 1). With ``count_noise`` σ_b
set, each step also releases the centred count ``Σ_{i∈B} (1[‖g_i‖ ≤ C_t] − ½) + N(0, σ_b²)`` and
turns it into the unclipped fraction b̃_t = count/(qn) + ½ (qn: the public expected batch size, so
n must be public: replace-one only). With ``adaptive=True`` the clip follows the geometric update
C_{t+1} = C_t · exp(−η_C (b̃_t − γ)) (γ the target unclipped quantile; η_C from
:func:`clip_learning_rate`: Andrew et al.'s 0.2, lowered when the count is noisier than theirs). The gradient
noise is then σ_Δ·C_t with σ_Δ = (σ⁻² − (2σ_b)⁻²)^(−1/2) (:func:`gradient_noise_multiplier`):
each record's joint contribution (clip(g_i)/(σ_Δ C_t), (b_i − ½)/σ_b)·σ lies in the unit ball
(its squared norm is at most σ²(σ_Δ⁻² + (2σ_b)⁻²) = 1) and the noise is σ·I, so the pair is one
Poisson-subsampled Gaussian sum query with multiplier σ: the same event as without the count,
under add-remove and replace-one alike (the ball is centred at the origin, which is why the count
is centred). C_t depends only on earlier releases (post-processing).
"""

from __future__ import annotations

import math

import torch

from ...errors import InvalidPrivacyParameterError
from ...privacy.context import ReleaseContext
from ...privacy.mechanisms.gaussian_sum import (
    add_gaussian_noise,
    clip_per_example,
    noisy_centred_count,
)
from .families import LOW_NOISE

Tensor = torch.Tensor


def count_noise_std(expected_batch: float, noise_multiplier: float) -> float:
    """σ_b of the private count, in count units: max(qn/20, σ).

    Andrew et al. (2021) use σ_b = m/20 for m expected participants (noise std 0.05 on the
    unclipped fraction). With small batches and large σ that is below σ/2, where σ_Δ does not
    exist, so σ_b is at least σ: the gradient noise then grows by at most (1 − 1/4)^(−1/2) ≈ 1.155
    (about 15%), and the fraction's per-step noise std is max(0.05, σ/qn), averaged out by the
    geometric update. Both inputs are public (qn under replace-one).
    """
    return max(float(expected_batch) / 20.0, float(noise_multiplier))


#: the adaptive clip's quantile γ, and the higher one it targets when the noise is small
CLIP_QUANTILE, CLIP_QUANTILE_LOW_NOISE = 0.995, 0.999


def noise_error_per_clip(
    noise_multiplier: float, sampling_rate: float, n: int, steps_averaged: int, dim: int
) -> float:
    """λ = σ·sqrt(D) / (q·sqrt(n·T_avg)): the error the gradient noise leaves in the averaged
    iterate, in posterior sd, per unit of the clip C measured in rms per-example gradient norms.

    The noise of one step's gradient estimate is σC/q per coordinate; over T_avg averaged steps it
    shrinks by sqrt(T_avg), and the posterior sd is about 1/sqrt(n·v) for a per-example Fisher
    information v ≈ rms²/D per coordinate. All public: σ, q, T and D, and n under replace-one (the
    only relation the adaptive clip allows).
    """
    return float(noise_multiplier) * math.sqrt(dim) / (
        float(sampling_rate) * math.sqrt(max(float(n) * float(steps_averaged), 1.0))
    )


def default_clip_quantile(noise_error: float) -> float:
    """γ of ``clip_quantile=None`` (the default): :data:`CLIP_QUANTILE_LOW_NOISE` (0.999) when
    λ = :func:`noise_error_per_clip` <= :data:`LOW_NOISE` (0.05), else :data:`CLIP_QUANTILE`
    (0.995).

    Clipping the largest rows biases the fit (the clipped rows are the informative tails: the
    misclassified points with large |x| of a logistic regression, the large counts of a Poisson
    one), and a larger clip costs noise. Raising C from the 0.995 to the 0.999 quantile of the
    norms adds about one or two rms norms to C, i.e. about λ to 2λ posterior sd of noise error,
    and removes 0.07-0.09 sd of clipping bias (logistic, probit and Poisson regressions with
    n = 2000 at ε = 100, 8 seeds each: λ = 0.016); at ε = 1 (λ = 0.41) the same raise adds about
    0.3 sd of spread (Poisson), so the quantile stays at 0.995.
    """
    return CLIP_QUANTILE_LOW_NOISE if float(noise_error) <= LOW_NOISE else CLIP_QUANTILE


def clip_learning_rate(expected_batch: float, count_noise: float, base: float = 0.2) -> float:
    """η_C = base · min(1, (qn/20)/σ_b): Andrew et al.'s 0.2 at their fraction noise std 0.05,
    scaled down in proportion when σ_b/(qn) is larger (σ_b = σ > qn/20, small ε or batches).

    The per-step noise the update puts into log C is η_C·σ_b/(qn); at a high quantile the count
    barely moves with C, so with η_C = 0.2 and the fraction noise 0.32 of Abalone at ε = 0.12 C
    wandered over a factor 10 (5-95% of the trace: 1.4 to 14 around the quantile 4), and the
    gradient noise σ_Δ·C_t with it. The scaling caps that per-step noise at Andrew et al.'s
    0.2 × 0.05. Public: qn, σ and σ_b are (replace-one), and C_t stays post-processing.
    """
    return float(base) * min(1.0, (float(expected_batch) / 20.0) / float(count_noise))


def gradient_noise_multiplier(noise_multiplier: float, count_noise: float) -> float:
    """σ_Δ = (σ⁻² − (2σ_b)⁻²)^(−1/2): the gradient multiplier that leaves room for the count noise
    σ_b within one Gaussian mechanism of multiplier σ (Andrew et al. 2021, Theorem 1).

    Raises
    ------
    InvalidPrivacyParameterError
        σ_b <= σ/2 (σ_Δ undefined: the count alone would use the whole budget).
    """
    z, zb = float(noise_multiplier), float(count_noise)
    if not (zb > z / 2.0):
        raise InvalidPrivacyParameterError(
            f"the private clip count needs count noise sigma_b = {zb:g} > sigma/2 = {z / 2:g}; "
            "raise the sampling rate (sigma_b grows with the expected batch size), lower the "
            "privacy target, or give a numeric clip with clip_count=False."
        )
    return (z**-2 - (2.0 * zb) ** -2) ** -0.5


class WindowedAdaGrad:
    """PyMC3's windowed AdaGrad (ascent): θ ← θ + lr g / sqrt(Σ_{last n_win} g² + stabiliser)."""

    def __init__(self, lr: float = 0.1, window: int = 10, stabiliser: float = 0.1) -> None:
        self.lr, self.window, self.stabiliser = float(lr), int(window), float(stabiliser)
        self._hist: Tensor | None = None
        self._i = 0
        #: the last step's effective rate per parameter, lr / sqrt(window sum + stabiliser): the
        #: preconditioner of the noise propagation (:mod:`dpinfer.release.dpvi.diagnostics`)
        self.last_rate: Tensor | float = self.lr

    #: the update has no momentum (the noise propagation's β)
    momentum = 0.0

    def step(self, params: Tensor, g: Tensor) -> Tensor:
        if self._hist is None:
            self._hist = torch.zeros(self.window, g.numel(), dtype=g.dtype, device=g.device)
        self._hist[self._i] = g * g
        self._i = (self._i + 1) % self.window
        self.last_rate = self.lr / torch.sqrt(self._hist.sum(0) + self.stabiliser)
        return params + self.last_rate * g


class SGD:
    """Plain gradient ascent θ ← θ + lr·g (DP-SGD's update; its noise passes through linearly)."""

    momentum = 0.0

    def __init__(self, lr: float = 0.01) -> None:
        self.lr = float(lr)
        self.last_rate: Tensor | float = self.lr

    def step(self, params: Tensor, g: Tensor) -> Tensor:
        self.last_rate = self.lr
        return params + self.lr * g


class Adam:
    """Adam (ascent) with bias correction."""

    def __init__(
        self, lr: float = 0.01, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8
    ) -> None:
        self.lr, self.b1, self.b2, self.eps = float(lr), float(betas[0]), float(betas[1]), float(eps)
        self._m: Tensor | None = None
        self._v: Tensor | None = None
        self._t = 0
        #: the last step's rate on the bias-corrected momentum, lr / ((sqrt(v̂) + eps)(1 − β₁ᵗ))
        self.last_rate: Tensor | float = self.lr

    @property
    def momentum(self) -> float:
        """β₁: the update moves along m_t = β₁ m_{t−1} + (1 − β₁) g_t."""
        return self.b1

    def step(self, params: Tensor, g: Tensor) -> Tensor:
        m, v = self._m, self._v
        if m is None or v is None:
            m, v = torch.zeros_like(g), torch.zeros_like(g)
        self._t += 1
        self._m = m = self.b1 * m + (1 - self.b1) * g
        self._v = v = self.b2 * v + (1 - self.b2) * g * g
        vhat = v / (1 - self.b2**self._t)
        self.last_rate = self.lr / ((torch.sqrt(vhat) + self.eps) * (1 - self.b1**self._t))
        return params + self.last_rate * m


def make_optimizer(name: str, lr: float) -> WindowedAdaGrad | Adam | SGD:
    """``"adagrad"`` (windowed, the paper's), ``"adam"`` or ``"sgd"``."""
    if not (math.isfinite(float(lr)) and float(lr) > 0):
        raise InvalidPrivacyParameterError(f"lr must be a positive number, got {lr!r}.")
    if name == "adagrad":
        return WindowedAdaGrad(lr)
    if name == "adam":
        return Adam(lr)
    if name == "sgd":
        return SGD(lr)
    raise InvalidPrivacyParameterError(f"optimizer must be 'adagrad', 'adam' or 'sgd', got {name!r}.")


class DPOptimizer:
    """One private gradient step: :meth:`clip`, :meth:`accumulate`, :meth:`noise`, :meth:`step`.

    Parameters
    ----------
    optimizer
        The base optimizer (ascent) applied to the privatised gradient.
    clip
        Per-example L2 clip norm C (``None``: no clipping; only for non-private runs).
    noise_multiplier
        σ: the noise std is σ·C. 0 disables the noise (non-private runs only).
    context
        The :class:`~dpinfer.privacy.context.ReleaseContext` of the release the steps belong to
        (``None`` only without noise): the noise and the private count are drawn with its
        PrivacyRNG (:mod:`dpinfer.privacy.mechanisms.gaussian_sum`), inside a release that the
        caller has charged (:meth:`dpinfer.release.dpvi.DPVI.fit` charges the whole fit before
        the first step). A bare PrivacyRNG is refused: pass ``ReleaseContext(privacy_rng=...)``.
    count_noise, expected_batch
        σ_b (count units) and the public expected batch size qn: release the private unclipped
        count every step (module docstring); the gradient noise becomes σ_Δ·C.
    adaptive, target_quantile, clip_lr
        Adapt C geometrically towards the γ = ``target_quantile`` quantile of the norms.
    """

    def __init__(
        self,
        optimizer: WindowedAdaGrad | Adam | SGD,
        clip: float | None,
        noise_multiplier: float,
        context: ReleaseContext | None,
        *,
        count_noise: float | None = None,
        expected_batch: float | None = None,
        adaptive: bool = False,
        target_quantile: float = 0.995,
        clip_lr: float = 0.2,
    ) -> None:
        if noise_multiplier < 0 or not math.isfinite(noise_multiplier):
            raise InvalidPrivacyParameterError(f"noise_multiplier must be >= 0, got {noise_multiplier!r}.")
        if context is not None and not isinstance(context, ReleaseContext):
            raise TypeError(
                f"DPOptimizer draws its noise through a ReleaseContext, got {type(context).__name__}; "
                "pass ReleaseContext(privacy_rng=...) (or None without noise)."
            )
        finite_clip = clip is not None and math.isfinite(float(clip)) and float(clip) > 0
        if noise_multiplier > 0 and (not finite_clip or context is None):
            raise InvalidPrivacyParameterError("noise needs a finite clip norm and a ReleaseContext.")
        self.optimizer = optimizer
        self.clip_norm = clip
        self.noise_multiplier = float(noise_multiplier)
        self.context = context
        self.count_noise = None if count_noise is None else float(count_noise)
        if self.count_noise is not None and (not finite_clip or expected_batch is None or context is None):
            raise InvalidPrivacyParameterError("the private count needs a clip, qn and a ReleaseContext.")
        self.expected_batch = expected_batch
        self.adaptive = bool(adaptive)
        self.target_quantile, self.base_clip_lr = float(target_quantile), float(clip_lr)
        self.clip_lr = self._clip_lr()
        self.gradient_multiplier = (
            self.noise_multiplier
            if self.count_noise is None
            else gradient_noise_multiplier(self.noise_multiplier, self.count_noise)
        )
        #: the private per-step estimates of the unclipped fraction and the clip norms, held in
        #: memory while the fit runs; a fit's report keeps only their aggregates
        #: (:func:`dpinfer.release.dpvi.loop.clip_record`: the per-step floats are not released)
        self.unclipped_trace: list[float] = []
        self.clip_trace: list[float] = []

    def set_phase(
        self,
        noise_multiplier: float,
        *,
        count_noise: float | None = None,
        expected_batch: float | None = None,
        clip: float | None = None,
    ) -> None:
        """Start a new phase of a schedule (:mod:`dpinfer.release.dpvi.schedule`): its σ_k, its count noise
        and expected batch q_k n (with the private count) and, for a numeric clip, its C_k. The
        optimizer state and the adaptive clip carry over."""
        if noise_multiplier < 0 or not math.isfinite(noise_multiplier):
            raise InvalidPrivacyParameterError(f"noise_multiplier must be >= 0, got {noise_multiplier!r}.")
        self.noise_multiplier = float(noise_multiplier)
        if clip is not None:
            self.clip_norm = float(clip)
        if self.count_noise is not None:
            self.count_noise, self.expected_batch = float(count_noise), expected_batch  # type: ignore[arg-type]
        self.gradient_multiplier = (
            self.noise_multiplier
            if self.count_noise is None
            else gradient_noise_multiplier(self.noise_multiplier, self.count_noise)
        )
        self.clip_lr = self._clip_lr()

    def _clip_lr(self) -> float:
        if self.count_noise is None or self.expected_batch is None:
            return self.base_clip_lr
        return clip_learning_rate(self.expected_batch, self.count_noise, self.base_clip_lr)

    @property
    def noise_std(self) -> float:
        """σ_Δ·C (σ·C without the count), the standard deviation of each noise coordinate."""
        if self.noise_multiplier == 0:
            return 0.0
        if self.clip_norm is None:  # noise is calibrated to the clip norm: never silently zero
            raise InvalidPrivacyParameterError("a noisy step needs a clip norm (clip_norm is None).")
        return self.gradient_multiplier * float(self.clip_norm)

    def private_count(self, per_example: Tensor) -> float:
        """The released unclipped fraction b̃ = (Σ(1[‖g_i‖ ≤ C] − ½) + N(0, σ_b²))/(qn) + ½."""
        centred = noisy_centred_count(
            self.context, per_example, clip=float(self.clip_norm), std=float(self.count_noise)  # type: ignore[arg-type]
        )
        return centred / float(self.expected_batch) + 0.5  # type: ignore[arg-type]

    def clip(self, per_example: Tensor) -> Tensor:
        """Clip each row to norm C."""
        return clip_per_example(per_example, self.clip_norm)

    @staticmethod
    def accumulate(clipped: Tensor) -> Tensor:
        """Sum over the examples of the batch (shape (P,); zeros for an empty batch)."""
        return clipped.sum(0)

    def noise(self, summed: Tensor) -> Tensor:
        """Add N(0, (σC)²) to every coordinate, drawn by the privacy core
        (:func:`~dpinfer.privacy.mechanisms.gaussian_sum.add_gaussian_noise`) with the context's
        PrivacyRNG; unchanged without noise."""
        if self.noise_multiplier == 0:
            return summed
        return add_gaussian_noise(self.context, summed, self.noise_std)  # type: ignore[arg-type]

    def privatize(self, per_example: Tensor) -> Tensor:
        """``noise(accumulate(clip(per_example)))``: the released gradient sum (with the private
        count and the clip update when counting; module docstring)."""
        out = self.noise(self.accumulate(self.clip(per_example)))
        if self.count_noise is not None:
            frac = self.private_count(per_example)
            self.unclipped_trace.append(frac)
            self.clip_trace.append(float(self.clip_norm))  # type: ignore[arg-type]
            if self.adaptive:
                step = math.exp(-self.clip_lr * (frac - self.target_quantile))
                self.clip_norm = float(self.clip_norm) * step  # type: ignore[arg-type]
        return out

    def step(self, params: Tensor, gradient: Tensor) -> Tensor:
        """Apply the base optimizer to an (already privatised) gradient."""
        return self.optimizer.step(params, gradient)
