"""Plots (matplotlib, Agg backend).

ABCDP: flip probability (Fig. 1), error vs threshold (Fig. 3), COVID fits (Fig. 4), TB posterior
histograms (Fig. 5) of Park et al. (2021). ``dpinfer demo``: credible intervals side by side,
DPVI coefficients, posterior draws against the truth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .diagnostics.flip import flip_probability


def _save(fig: Any, path: str | Path | None, dpi: int = 120, tight: bool = True) -> Any:
    """Write ``fig`` to ``path`` (if given) and close it; ``tight``: crop to the drawn area."""
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=dpi, bbox_inches="tight" if tight else None)
        plt.close(fig)
    return fig


def plot_flip_probability(
    rho: Any,
    epsilon_abc: float,
    b_by_label: Mapping[str, float],
    ax: Any = None,
    title: str = "",
) -> Any:
    """Flip probability G_b(|ρ - ε_abc|) (Proposition 1) against ρ, one curve per noise scale."""
    rho = np.sort(np.asarray(rho, dtype=np.float64))
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 3))
    for label, b in b_by_label.items():
        ax.plot(rho, flip_probability(rho, epsilon_abc, b), label=label)
    ax.axvline(epsilon_abc, color="k", lw=0.6, ls=":")
    ax.set_xlabel("ρ")
    ax.set_ylabel("flip probability")
    ax.set_ylim(-0.02, 0.52)
    if title:
        ax.set_title(title, fontsize=9)
    return ax


def plot_flip_curves(rho: Any, epsilon_abc: float, b_by_label: dict[str, float], ax: Any = None) -> Any:
    """Plot G_b(|ρ - ε_abc|) against ρ for several noise scales (:func:`plot_flip_probability`)."""
    return plot_flip_probability(rho, epsilon_abc, b_by_label, ax=ax)


def plot_flip_grid(
    rho: Any,
    epsilon_abc: float,
    n_values: Sequence[int],
    c_values: Sequence[int],
    eps_totals: Sequence[float],
    noise_scale: Any,
    path: str | Path | None = None,
) -> Any:
    """Fig. 1: a grid (rows c, columns N) of flip-probability curves for several ε_total.

    ``noise_scale(c, eps_total, n) -> b``.
    """
    fig, axes = plt.subplots(len(c_values), len(n_values), figsize=(3.2 * len(n_values), 2.6 * len(c_values)),
                             squeeze=False, sharex=True, sharey=True)
    for i, c in enumerate(c_values):
        for j, n in enumerate(n_values):
            b_by = {f"ε={e:g}": noise_scale(c, e, n) for e in eps_totals}
            plot_flip_probability(rho, epsilon_abc, b_by, ax=axes[i, j], title=f"N={n}, c={c}")
    axes[0, -1].legend(fontsize=6, loc="upper right")
    fig.tight_layout()
    return _save(fig, path)


def plot_error_vs_threshold(
    table: Sequence[Mapping[str, Any]],
    path: str | Path | None = None,
    prior_error: float | None = None,
) -> Any:
    """Fig. 3: mean absolute error of the posterior mean vs ε_abc, one panel per c.

    ``table`` rows: c, epsilon_abc, epsilon_total (inf for non-private), resample, error.
    """
    cs = sorted({r["c"] for r in table})
    fig, axes = plt.subplots(1, len(cs), figsize=(4 * len(cs), 3.2), squeeze=False)
    for ax, c in zip(axes[0], cs, strict=True):
        rows = [r for r in table if r["c"] == c]
        keys = sorted({(r["epsilon_total"], r["resample"]) for r in rows}, key=lambda k: (k[0], k[1]))
        for eps, res in keys:
            sel = sorted((r for r in rows if r["epsilon_total"] == eps and r["resample"] == res),
                         key=lambda r: r["epsilon_abc"])
            x = [r["epsilon_abc"] for r in sel]
            y = [r["error"] for r in sel]
            if np.isinf(eps):
                if res:
                    continue
                ax.plot(x, y, "k-o", ms=3, label="non-private")
            else:
                label = f"ε={eps:g}" + (" R" if res else "")
                ax.plot(x, y, "-" if res else ":", marker="o", ms=3, label=label)
        if prior_error is not None:
            ax.axhline(prior_error, color="r", lw=0.8, label="prior")
        ax.set_xscale("log")
        ax.set_xlabel("ε_abc")
        ax.set_ylabel("mean |posterior mean - θ*|")
        ax.set_title(f"c = {c}")
    axes[0, -1].legend(fontsize=6)
    fig.tight_layout()
    return _save(fig, path)


def plot_covid_fit(
    panels: Sequence[Mapping[str, Any]],
    days: Any,
    observed: Any,
    path: str | Path | None = None,
) -> Any:
    """Fig. 4: observed counts (red), curves from the accepted θ (grey) and from the posterior
    mean (blue crosses). ``panels``: dicts with ``title``, ``curves`` (k, T) and ``mean_curve``."""
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.3), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        for curve in np.atleast_2d(panel["curves"]):
            ax.plot(days, curve, "o", color="0.6", ms=3)
        ax.plot(days, panel["mean_curve"], "x", color="tab:blue", ms=5, label="posterior mean")
        ax.plot(days, observed, "o", color="tab:red", ms=4, label="observed")
        ax.set_title(panel["title"], fontsize=9)
        ax.set_xlabel("day")
        ax.set_ylabel("cumulative cases")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, path)


def plot_posterior_histograms(
    rows: Mapping[str, np.ndarray],
    param_names: Sequence[str],
    truth: Any,
    path: str | Path | None = None,
) -> Any:
    """Fig. 5: one row of histograms per run (label -> samples (k, p)); truth in black, mean in red."""
    fig, axes = plt.subplots(len(rows), len(param_names), figsize=(2.6 * len(param_names), 1.9 * len(rows)),
                             squeeze=False)
    for i, (label, samples) in enumerate(rows.items()):
        samples = np.atleast_2d(samples)
        for j, name in enumerate(param_names):
            ax = axes[i, j]
            if samples.size:
                ax.hist(samples[:, j], bins=10, color="0.7")
                ax.axvline(np.mean(samples[:, j]), color="tab:red", lw=2)
            ax.axvline(truth[j], color="k", lw=2)
            if i == 0:
                ax.set_title(name)
            if j == 0:
                ax.set_ylabel(label, fontsize=7)
    fig.tight_layout()
    return _save(fig, path)


def plot_interval_comparison(
    names: Sequence[str], methods: Sequence[tuple], path: str | Path | None = None
) -> Any:
    """Mean and 95% interval of every parameter (one panel each), one row per method.

    ``methods``: tuples ``(label, means (p,), intervals (p, 2), ...)``; a method whose interval of
    a parameter is not finite is left out of that panel.
    """
    fig, axes = plt.subplots(1, len(names), figsize=(10, 3))
    for i, ax in enumerate(axes):
        for j, (_name, mean, ci, *_) in enumerate(methods):
            if np.all(np.isfinite(ci[i])):
                ax.errorbar(mean[i], j, xerr=[[mean[i] - ci[i][0]], [ci[i][1] - mean[i]]], fmt="o", capsize=3)
        ax.set_yticks(range(len(methods)))
        ax.set_yticklabels([m[0] for m in methods] if i == 0 else [])
        ax.set_title(names[i])
    fig.tight_layout()
    return _save(fig, path, dpi=100, tight=False)


def plot_coefficients(
    fits: Mapping[str, tuple[Any, Any]], features: Sequence[str], title: str, path: str | Path | None = None
) -> Any:
    """Posterior mean ± 2 sd of every coefficient, one marker per fit (label -> (means, sds))."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    x = np.arange(len(features))
    for k, (label, (mean, sd)) in enumerate(fits.items()):
        ax.errorbar(x + 0.2 * (k - 1), mean, 2 * np.asarray(sd), fmt="o", ms=4, capsize=2, label=label)
    ax.axhline(0.0, color="k", lw=0.5)
    ax.set_xticks(x, features, rotation=30)
    ax.set_ylabel("coefficient")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, path, dpi=110, tight=False)


def plot_draws_2d(
    draws: np.ndarray,
    names: Sequence[str],
    truth: Sequence[float],
    label: str,
    path: str | Path | None = None,
) -> Any:
    """Scatter of two-parameter posterior draws (labelled ``label``) with the truth as a cross."""
    fig, ax = plt.subplots(figsize=(4.5, 4))
    ax.scatter(draws[:, 0], draws[:, 1], s=3, alpha=0.3, label=label)
    ax.plot(*truth, "rx", ms=10, mew=2, label="truth")
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    ax.legend(loc="best")
    fig.tight_layout()
    return _save(fig, path, dpi=100, tight=False)


def plot_pair(
    draws: np.ndarray,
    names: Sequence[str],
    path: str | Path | None = None,
    title: str = "",
    reference: Sequence[float] | None = None,
) -> Any:
    """Pair plot of posterior draws ``(n, dim)``: histograms on the diagonal, scatter below it.

    ``reference`` (e.g. the truth) is marked in every panel.
    """
    x = np.asarray(draws, dtype=np.float64)
    d = x.shape[1]
    fig, axes = plt.subplots(d, d, figsize=(2.2 * d + 1, 2.2 * d + 1), squeeze=False)
    for i in range(d):
        for j in range(d):
            ax = axes[i, j]
            if j > i:
                ax.axis("off")
                continue
            if i == j:
                ax.hist(x[:, i], bins=40, density=True, color="C0", alpha=0.7)
                if reference is not None:
                    ax.axvline(reference[i], color="r", lw=1)
            else:
                ax.scatter(x[:, j], x[:, i], s=2, alpha=0.25, color="C0")
                if reference is not None:
                    ax.plot(reference[j], reference[i], "rx", ms=8)
            if i == d - 1:
                ax.set_xlabel(names[j])
            if j == 0 and i > 0:
                ax.set_ylabel(names[i])
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def plot_calibration(result: Any, path: str | Path | None = None) -> Any:
    """SBC rank histograms (one panel per parameter, grey: the 99% band of a uniform histogram)
    and expected coverage against the nominal level, titled with the one-line verdict."""
    from scipy import stats

    ranks, L, bins = result.ranks, result.n_draws, result.bins
    d = ranks.shape[1]
    fig, axes = plt.subplots(1, d + 1, figsize=(3.2 * (d + 1), 3.0), squeeze=False)
    edges = np.linspace(0, L + 1, bins + 1)
    n = result.n_replicates
    p_bin = np.diff(edges) / (L + 1)
    lo, hi = stats.binom.ppf(0.005, n, p_bin), stats.binom.ppf(0.995, n, p_bin)
    for j in range(d):
        ax = axes[0, j]
        ax.fill_between(edges, np.r_[lo, lo[-1]], np.r_[hi, hi[-1]], step="post", color="0.85")
        ax.hist(ranks[:, j], bins=edges, color="C0", alpha=0.8)
        ax.set_xlabel(f"rank of {result.param_names[j]}")
        ax.set_ylabel("replicates")
    levels = np.linspace(0.05, 0.95, 19)
    cov = result.coverage(levels)
    ax = axes[0, d]
    band = 2.58 * np.sqrt(levels * (1 - levels) / n)
    ax.fill_between(levels, levels - band, levels + band, color="0.85")
    for j in range(d):
        ax.plot(levels, cov[:, j], marker=".", label=result.param_names[j])
    ax.plot([0, 1], [0, 1], "k:", lw=0.8)
    ax.set_xlabel("credible level")
    ax.set_ylabel("coverage")
    ax.legend(fontsize=7)
    fig.suptitle(result.verdict(), fontsize=7)
    fig.tight_layout()
    return _save(fig, path)
