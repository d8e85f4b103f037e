"""Plots (matplotlib: the Agg backend, or a notebook kernel's own inline backend).

ABCDP: flip probability (Fig. 1), error vs threshold (Fig. 3), COVID fits (Fig. 4), TB posterior
histograms (Fig. 5) of Park et al. (2021). ``dpinfer demo``: credible intervals side by side,
DPVI coefficients, posterior draws against the truth.

Every figure function returns its :class:`matplotlib.figure.Figure` (saved first when given a
path). In a Jupyter kernel the kernel's inline backend is kept (not replaced by Agg) and the
figure is released from pyplot before it is returned, so that the returned figure, the cell's
last expression, is drawn inline exactly once; elsewhere the backend is Agg (no windows).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib


def in_notebook_kernel(modules: Any = None) -> bool:
    """Whether this process is a running Jupyter (IPython) kernel: ``ipykernel`` is imported and
    its kernel application initialised (a process that only imports ``ipykernel``, e.g. one that
    runs notebooks through nbclient, is not a kernel). ``modules``: a stand-in for ``sys.modules``."""
    kernel = (sys.modules if modules is None else modules).get("ipykernel")
    app = getattr(getattr(kernel, "kernelapp", None), "IPKernelApp", None)
    try:
        return bool(app is not None and app.initialized())
    except Exception:  # noqa: BLE001 - an ipykernel without the usual API: not a kernel we know
        return False


if not in_notebook_kernel():  # a kernel draws with its inline backend: forcing Agg hid the figures
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .diagnostics.flip import flip_probability  # noqa: E402


def _save(fig: Any, path: str | Path | None, dpi: int = 120, tight: bool = True) -> Any:
    """Write ``fig`` to ``path`` (if given; ``tight``: crop to the drawn area) and return it.

    It is closed in pyplot (the Figure itself stays whole and drawable) when it was saved, or in
    a notebook kernel, where the returned figure is displayed by the notebook (the inline backend
    would otherwise draw it a second time at the end of the cell)."""
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=dpi, bbox_inches="tight" if tight else None)
    if path is not None or in_notebook_kernel():
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
    fits: Mapping[str, tuple[Any, Any]],
    features: Sequence[str],
    title: str,
    path: str | Path | None = None,
    *,
    bars: str = "posterior mean +- 2 sd",
) -> Any:
    """Every coefficient's mean and bar, one marker per fit: label -> (means, sds) draws mean ± 2 sd;
    label -> (means, intervals of shape (dim, 2)) draws the intervals as given (e.g. a DPVI fit's
    ``interval()``, privacy noise included). ``bars`` says what the bars are, on the y axis."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    x = np.arange(len(features))
    for k, (label, (mean, spread)) in enumerate(fits.items()):
        m, w = np.asarray(mean, dtype=float), np.asarray(spread, dtype=float)
        err = np.vstack([m - w[:, 0], w[:, 1] - m]) if w.ndim == 2 else 2 * w
        ax.errorbar(x + 0.2 * (k - 1), m, err, fmt="o", ms=4, capsize=2, label=label)
    ax.axhline(0.0, color="k", lw=0.5)
    ax.set_xticks(x, features, rotation=30)
    ax.set_ylabel(f"coefficient\n({bars})", fontsize=8)
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


# ----------------------------------------------------------------------------------------------
# pair plots of several posteriors
# ----------------------------------------------------------------------------------------------
def _weighted_draws(obj: Any, n: int) -> tuple[np.ndarray, np.ndarray | None]:
    """``(draws (k, dim), normalised weights or None)`` of an array, a ``(draws, weights)`` pair,
    a weighted result (``particles`` and ``weights``) or any result with ``sample(n, seed)``."""
    if isinstance(obj, tuple) and len(obj) == 2:
        x = np.atleast_2d(np.asarray(obj[0], dtype=np.float64))
        w = None if obj[1] is None else np.asarray(obj[1], dtype=np.float64)
    elif getattr(obj, "particles", None) is not None and getattr(obj, "weights", None) is not None:
        x = np.asarray(obj.particles, dtype=np.float64)
        w = np.asarray(obj.weights, dtype=np.float64)
    elif hasattr(obj, "sample") and not isinstance(obj, np.ndarray):
        x, w = np.asarray(obj.sample(int(n), 0), dtype=np.float64), None
    else:
        x, w = np.asarray(obj, dtype=np.float64), None
        if x.ndim == 1:
            x = x[:, None]
    if w is not None:
        if w.shape != (x.shape[0],) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"weights must be {x.shape[0]} finite non-negative numbers with a positive sum.")
        w = w / w.sum()
    return x, w


def _thin(x: np.ndarray, w: np.ndarray | None, k: int) -> tuple[np.ndarray, np.ndarray | None]:
    """At most ``k`` points for the density estimates: weighted resampling (fixed seed) if more."""
    if x.shape[0] <= k:
        return x, w
    rng = np.random.default_rng(0)
    if w is not None:
        idx = rng.choice(x.shape[0], size=k, p=w)
    else:
        idx = rng.choice(x.shape[0], size=k, replace=False)
    return x[idx], None


def _wquantile(v: np.ndarray, w: np.ndarray | None, q: Any) -> np.ndarray:
    if w is None:
        return np.quantile(v, q)
    order = np.argsort(v)
    cw = np.cumsum(w[order]) - 0.5 * w[order]
    return np.interp(q, cw, v[order])


def _kde(points: np.ndarray, w: np.ndarray | None) -> Any:
    """A scipy ``gaussian_kde`` (Scott's rule), or None when the points are degenerate."""
    from scipy.stats import gaussian_kde

    try:
        if points.shape[-1] < 3:
            return None
        kde = gaussian_kde(points, weights=w)
        return kde if np.all(np.isfinite(kde.covariance)) else None
    except (np.linalg.LinAlgError, ValueError):
        return None


def _density_grid(
    pts: np.ndarray, w: np.ndarray | None, xlim: tuple[float, float], ylim: tuple[float, float], g: int = 80
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """A 2-D Gaussian KDE on a ``g x g`` grid: the (weighted) histogram of the points convolved
    with the Gaussian kernel of scipy's Scott bandwidth (covariance ``n_eff^(-1/3)`` times the
    sample covariance); None for degenerate points."""
    from scipy.signal import fftconvolve

    if pts.shape[1] < 3:
        return None
    neff = pts.shape[1] if w is None else 1.0 / np.sum(w**2)
    cov = np.atleast_2d(np.cov(pts, aweights=w)) * neff ** (-1.0 / 3.0)
    var = np.diag(cov)
    if not np.all(np.isfinite(cov)) or np.any(var <= 0):
        return None  # a constant coordinate
    if float(np.linalg.det(cov)) <= 1e-12 * float(np.prod(var)):
        return None  # perfectly correlated draws
    hist, xe, ye = np.histogram2d(pts[0], pts[1], bins=g, range=[xlim, ylim], weights=w)
    dx, dy = xe[1] - xe[0], ye[1] - ye[0]
    ox, oy = np.meshgrid(np.arange(-(g - 1), g) * dx, np.arange(-(g - 1), g) * dy, indexing="ij")
    inv = np.linalg.inv(cov)
    quad = inv[0, 0] * ox**2 + 2 * inv[0, 1] * ox * oy + inv[1, 1] * oy**2
    dens = np.maximum(fftconvolve(hist, np.exp(-0.5 * quad), mode="same"), 0.0)
    if not np.any(dens > 0):
        return None
    return 0.5 * (xe[1:] + xe[:-1]), 0.5 * (ye[1:] + ye[:-1]), dens.T


def _hdr_levels(dens: np.ndarray, masses: Sequence[float]) -> list[float]:
    """Density thresholds whose super-level sets hold ``masses`` of the gridded density."""
    flat = np.sort(dens.ravel())[::-1]
    cum = np.cumsum(flat) / flat.sum()
    return [float(flat[min(int(np.searchsorted(cum, m)), flat.size - 1)]) for m in masses]


def plot_pair(
    draws: Any,
    names: Sequence[str] | None = None,
    path: str | Path | None = None,
    title: str = "",
    reference: Any = None,
    *,
    truth: Sequence[float] | None = None,
    weights: Any = None,
    reference_label: str = "reference",
    levels: Sequence[float] = (0.5, 0.9),
    units: Mapping[str, str] | None = None,
    n: int = 2000,
    max_points: int = 2000,
    note: str = "",
) -> Any:
    """Pair plot of one or several posteriors, with a reference and the truth.

    Off the diagonal: contours of the highest-density regions holding ``levels`` of each
    posterior's mass (a weighted Gaussian KDE with Scott's bandwidth, computed as a smoothed
    80 x 80 histogram over the plotted range; the threshold of mass ``q`` is where the sorted grid
    densities accumulate ``q``, as corner.py does); on the diagonal: the marginal KDEs (scipy
    ``gaussian_kde``). Degenerate draws (a constant coordinate) fall back to histograms
    and scatter.

    Parameters
    ----------
    draws
        One posterior — draws ``(n, dim)``, a ``(draws, weights)`` pair or a result object
        (weighted particles used with their weights; otherwise ``n`` draws from ``sample``) — or a
        mapping ``label -> posterior`` of several, overlaid in colours C0, C1, ...
    names
        Parameter names (default: the first result's ``param_names``, else ``theta_j``).
    reference
        Draws (or a result, or a ``(draws, weights)`` pair) of a reference posterior, drawn in
        black as ``reference_label``; or a point ``(dim,)``, marked with a red cross and lines
        (the old single-posterior use: ``reference`` was the truth).
    truth
        The parameter that generated the data, marked with a red cross and lines.
    weights
        Weights of ``draws`` when it is a single array.
    units
        ``name -> unit``, appended to the axis labels as ``name [unit]``.
    note
        A line printed under the figure (e.g. the ε and the data set).
    """
    if isinstance(draws, Mapping):
        posts = {str(k): _weighted_draws(v, n) for k, v in draws.items()}
        first = next(iter(draws.values()), None)
    else:
        x0, w0 = _weighted_draws(draws if weights is None else (draws, weights), n)
        posts = {"posterior": (x0, w0)}
        first = draws
    if not posts:
        raise ValueError("plot_pair needs at least one posterior.")
    d = next(iter(posts.values()))[0].shape[1]
    point = None
    if reference is not None:
        is_obj = hasattr(reference, "sample") or isinstance(reference, tuple)
        ref_arr = reference if is_obj else np.asarray(reference)
        if isinstance(ref_arr, np.ndarray) and ref_arr.ndim == 1 and ref_arr.size == d:
            point = ref_arr.astype(np.float64)
        else:
            posts = {**posts, reference_label: _weighted_draws(reference, n)}
    for label, (x, _) in posts.items():
        if x.ndim != 2 or x.shape[1] != d:
            raise ValueError(f"posterior {label!r} has shape {x.shape}; expected (k, {d}).")
    if names is None:
        names = tuple(getattr(first, "param_names", None) or [f"theta_{j}" for j in range(d)])
    names = list(names)
    units = dict(units or {})
    colours = {label: ("k" if label == reference_label and point is None and reference is not None
                       else f"C{i}") for i, label in enumerate(posts)}
    marks = [(point, "red", reference_label)] if point is not None else []
    if truth is not None:
        marks.append((np.asarray(truth, dtype=np.float64), "red", "truth"))

    # a common range per coordinate: the 0.5%-99.5% quantiles of every posterior, padded
    lims = []
    for j in range(d):
        lo, hi = np.inf, -np.inf
        for x, w in posts.values():
            q = _wquantile(x[:, j], w, [0.005, 0.995])
            lo, hi = min(lo, q[0]), max(hi, q[1])
        for pt, _, _ in marks:
            lo, hi = min(lo, pt[j]), max(hi, pt[j])
        pad = 0.08 * (hi - lo) if hi > lo else max(abs(lo), 1.0) * 0.05
        lims.append((lo - pad, hi + pad))

    thinned = {label: _thin(x, w, max_points) for label, (x, w) in posts.items()}
    size = 2.3 * d + 1.2
    fig, axes = plt.subplots(d, d, figsize=(size, size), squeeze=False)
    for i in range(d):
        for j in range(d):
            ax = axes[i, j]
            if j > i:
                ax.axis("off")
                continue
            if i == j:
                xs = np.linspace(*lims[j], 200)
                for label, (x, w) in thinned.items():
                    kde = _kde(x[:, j][None, :], w)
                    if kde is not None:
                        ax.plot(xs, kde(xs[None, :]), color=colours[label], lw=1.4)
                    else:
                        ax.hist(x[:, j], bins=30, range=lims[j], weights=w, density=True,
                                histtype="step", color=colours[label])
                for pt, c, _ in marks:
                    ax.axvline(pt[j], color=c, lw=1, ls="--" if c == "red" else "-")
                ax.set_yticks([])
                ax.set_xlim(*lims[j])
            else:
                for label, (x, w) in thinned.items():
                    pts = x[:, [j, i]].T
                    est = _density_grid(pts, w, lims[j], lims[i])
                    if est is None:
                        ax.scatter(pts[0], pts[1], s=2, alpha=0.3, color=colours[label])
                        continue
                    cx, cy, dens = est
                    thr = sorted(set(_hdr_levels(dens, levels)))
                    if thr and thr[-1] < dens.max():
                        ax.contour(cx, cy, dens, levels=thr, colors=[colours[label]], linewidths=1.2)
                for pt, c, _ in marks:
                    ax.plot(pt[j], pt[i], "x", color=c, ms=8, mew=2)
                ax.set_xlim(*lims[j])
                ax.set_ylim(*lims[i])
            label_of = [f"{nm} [{units[nm]}]" if nm in units else nm for nm in names]
            if i == d - 1:
                ax.set_xlabel(label_of[j])
            else:
                ax.set_xticklabels([])
            if j == 0 and i > 0:
                ax.set_ylabel(label_of[i])
            elif j > 0 and i != j:
                ax.set_yticklabels([])
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colours[label], lw=1.6, label=label) for label in posts]
    handles += [Line2D([], [], color=c, marker="x", ls="--", lw=1, label=lab) for _, c, lab in marks]
    masses = " and ".join(f"{m:.0%}" for m in sorted(levels))
    caption = (f"contours: the {masses} highest-density regions (inner to outer) of each posterior; "
               "diagonal: marginal densities (Gaussian KDE)" if d > 1
               else "curves: marginal densities (Gaussian KDE)")
    import textwrap

    # wrapped to the figure's width (a long line would widen the saved, tightly cropped image)
    caption = textwrap.fill(caption + (f"\n{note}" if note else ""), width=max(40, int(size * 16)),
                            replace_whitespace=False)
    if d == 1:
        axes[0, 0].legend(handles=handles, fontsize=7, loc="best")
    else:  # in the empty upper-right panel
        axes[0, d - 1].legend(handles=handles, loc="upper right", fontsize=8, frameon=False)
    bottom = 0.02 + (caption.count("\n") + 1) * 0.12 / size  # a 7-pt line is about 0.12 in
    fig.tight_layout(rect=(0, bottom, 1, 0.95 if title else 1))
    fig.text(0.01, 0.005, caption, fontsize=7, va="bottom")
    if title:
        fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def plot_calibration(result: Any, path: str | Path | None = None) -> Any:
    """SBC as a scientist would publish it: per parameter the difference between the ECDF of the
    fractional ranks and the uniform CDF, inside the simultaneous band of Säilynoja, Bürkner &
    Vehtari (2022) (grey: a calibrated method's curve stays inside it with probability
    ``1 - alpha`` over the whole axis), then the expected coverage against the nominal level
    (grey: pointwise 99% binomial band), titled with the verdict (which states the test's power).
    """
    import textwrap

    d = result.ranks.shape[1]
    band = result.band()
    z, ecdf = result.ecdf()
    inside = result.inside_band()
    fig, axes = plt.subplots(1, d + 1, figsize=(3.3 * (d + 1), 3.4), squeeze=False)
    zz = np.r_[0.0, z, 1.0]
    lo, hi = np.r_[0.0, band["lower"], 1.0] - zz, np.r_[0.0, band["upper"], 1.0] - zz
    level = f"{100 * (1 - result.band_alpha):.3g}%"
    for j in range(d):
        ax = axes[0, j]
        ax.fill_between(zz, lo, hi, step="post", color="0.85", label=f"simultaneous {level} band")
        diff = np.r_[0.0, ecdf[j], 1.0] - zz
        colour = "C0" if inside[j] else "C3"
        ax.step(zz, diff, where="post", color=colour, lw=1.4, label="ECDF − uniform CDF")
        ax.axhline(0.0, color="k", lw=0.5)
        ax.set_xlim(0, 1)
        ax.set_xlabel(f"fractional rank of {result.param_names[j]}")
        ax.set_ylabel("ECDF difference")
        ax.set_title(f"{result.param_names[j]}: " + ("inside the band" if inside[j] else "LEAVES the band"),
                     fontsize=9, color="k" if inside[j] else "C3")
        if j == 0:
            ax.legend(fontsize=6, loc="lower left")
    n = result.n_replicates
    levels = np.linspace(0.05, 0.95, 19)
    cov = result.coverage(levels)
    ax = axes[0, d]
    spread = 2.58 * np.sqrt(levels * (1 - levels) / n)
    ax.fill_between(levels, levels - spread, levels + spread, color="0.85", label="pointwise 99% band")
    for j in range(d):
        ax.plot(levels, cov[:, j], marker=".", label=result.param_names[j])
    ax.plot([0, 1], [0, 1], "k:", lw=0.8)
    ax.set_xlabel("credible level of the central interval")
    ax.set_ylabel("fraction of replicates covered")
    ax.set_title("expected coverage", fontsize=9)
    ax.legend(fontsize=6)
    lines = textwrap.wrap(result.verdict(), width=int(55 * (d + 1)))
    fig.suptitle("\n".join(lines), fontsize=7)
    fig.text(0.01, 0.005, f"SBC, {n} replicates, {result.n_draws} posterior draws each; band: Säilynoja, "
             "Bürkner & Vehtari (2022), Bonferroni over parameters", fontsize=6, va="bottom")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return _save(fig, path)


# ----------------------------------------------------------------------------------------------
# neural training and privacy-utility curves
# ----------------------------------------------------------------------------------------------
def _rounds(result: Any) -> list[dict[str, Any]]:
    from dataclasses import asdict, is_dataclass

    rounds = getattr(result, "rounds", None)
    if rounds is None and hasattr(result, "result"):
        rounds = getattr(result.result, "rounds", None)
    if rounds is None and isinstance(result, Sequence):
        rounds = result
    if not rounds:
        raise ValueError(
            "plot_training needs a neural posterior (SPPE/SPLE, or an InferenceResult wrapping one) "
            "with at least one recorded round."
        )
    return [asdict(r) if is_dataclass(r) and not isinstance(r, type) else dict(r) for r in rounds]


def plot_training(result: Any, path: str | Path | None = None, title: str = "") -> Any:
    """Training curves of a neural posterior, one point per round (what the result records:
    ``RoundInfo`` per round, no per-epoch losses): the best held-out loss and the last training
    loss (left), the epochs trained and the simulations so far (right).

    SPPE with ``proposal="apt"`` trains round 0 with the NPE loss and later rounds with the atomic
    APT loss, which are not on one scale: the curve is broken at the switch and the caption says
    so (the default truncated proposals keep the NPE loss throughout).
    """
    rows = _rounds(result)
    inner = getattr(result, "result", result)
    kind = str(getattr(inner, "kind", "")).upper() or "neural"
    apt = kind == "SPPE" and dict(getattr(inner, "settings", {}) or {}).get("proposal") == "apt"
    r = np.array([row["round"] for row in rows])
    val = np.array([row["best_validation_loss"] for row in rows], dtype=np.float64)
    tr = np.array([row["train_loss"] for row in rows], dtype=np.float64)
    epochs = np.array([row["epochs"] for row in rows])
    sims = np.array([row["n_simulations_total"] for row in rows])
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(8.5, 3.3))
    segments = [(r == 0), (r > 0)] if apt else [np.ones_like(r, dtype=bool)]
    for k, seg in enumerate(segments):
        if not np.any(seg):
            continue
        ax.plot(r[seg], val[seg], "o-", color="C0", label="held-out loss (best epoch)" if k == 0 else None)
        ax.plot(r[seg], tr[seg], "s--", color="C1", ms=4,
                label="training loss (last epoch)" if k == 0 else None)
    ax.set_xlabel("round")
    ax.set_ylabel("loss (negative log density, nats)")
    ax.set_xticks(r)
    ax.legend(fontsize=7)
    ax.set_title(f"{kind} losses per round", fontsize=9)
    ax2.bar(r, epochs, color="0.7", label="epochs trained")
    ax2.set_xlabel("round")
    ax2.set_ylabel("epochs (early stopping)")
    ax2.set_xticks(r)
    ax3 = ax2.twinx()
    ax3.plot(r, sims, "k.-", label="simulations so far")
    ax3.set_ylabel("simulations so far")
    ax2.set_title("training effort", fontsize=9)
    h1, l1 = ax2.get_legend_handles_labels()
    h2, l2 = ax3.get_legend_handles_labels()
    ax2.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper left")
    loss = {"SPPE": "NPE loss", "SPLE": "NLE loss"}.get(kind, "loss")
    caption = (f"{loss}: mean over the held-out / training simulations of all rounds so far (the pool grows "
               "each round)")
    if apt:
        caption += "; round 0: NPE loss, later rounds: atomic APT loss (another scale, hence the break)"
    fig.text(0.01, 0.005, caption, fontsize=6, va="bottom")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return _save(fig, path)


def _reference_summary(reference: Any) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(point, 95% interval width)`` of a reference: a point, or a posterior (result or draws)."""
    if reference is None:
        return None, None
    if hasattr(reference, "interval") and not isinstance(reference, np.ndarray):
        ci = np.asarray(reference.interval(0.95))
        return np.asarray(reference.mean(), dtype=np.float64), ci[:, 1] - ci[:, 0]
    arr = np.asarray(reference, dtype=np.float64)
    if arr.ndim == 2:
        q = np.quantile(arr, [0.025, 0.975], axis=0)
        return arr.mean(axis=0), q[1] - q[0]
    return np.atleast_1d(arr), None


def _utility(value: Any, metric: str, point: np.ndarray | None) -> float:
    """One number per posterior: ``error`` = mean over parameters of |mean - reference point|,
    ``width`` = mean over parameters of the 95% interval width; a number is taken as given."""
    if np.ndim(value) == 0 and not hasattr(value, "mean"):
        return float(value)
    if metric == "width":
        ci = np.asarray(value.interval(0.95))
        return float(np.mean(ci[:, 1] - ci[:, 0]))
    if point is None:
        raise ValueError("metric='error' of results needs reference= (the truth or a reference posterior).")
    return float(np.mean(np.abs(np.asarray(value.mean(), dtype=np.float64) - point)))


def plot_privacy_utility(
    epsilons: Sequence[float],
    results_or_metrics: Any,
    reference: Any = None,
    *,
    metric: str = "error",
    path: str | Path | None = None,
    title: str = "",
    ylabel: str | None = None,
    units: str = "",
    ax: Any = None,
) -> Any:
    """Utility against the privacy budget ε (log x axis), one curve per method.

    Parameters
    ----------
    epsilons
        The ε of each release (the x axis).
    results_or_metrics
        One sequence (aligned with ``epsilons``) or a mapping ``method -> sequence``; an entry is a
        posterior result, a number, or a sequence of repeats (results or numbers) — then the curve
        is their mean and the bars ±1 standard error over the repeats.
    reference
        The truth (a point) or a reference posterior (non-private, exact): ``metric="error"``
        measures each posterior mean against its point / mean; with ``metric="width"`` a reference
        posterior's width is drawn as a horizontal line ("reference").
    metric
        ``"error"`` (mean over parameters of |posterior mean - reference|) or ``"width"`` (mean
        over parameters of the 95% credible interval's width). Ignored for numbers (``ylabel``).
    units
        The parameters' unit, appended to the y label.
    """
    if metric not in ("error", "width"):
        raise ValueError(f"metric must be 'error' or 'width', got {metric!r}.")
    eps = np.asarray(epsilons, dtype=np.float64)
    if eps.ndim != 1 or not np.all(eps > 0):
        raise ValueError("epsilons must be a sequence of positive numbers.")
    series = dict(results_or_metrics) if isinstance(results_or_metrics, Mapping) else {"": results_or_metrics}
    point, ref_width = _reference_summary(reference)
    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(5, 3.6))
    else:
        fig = ax.figure
    any_bars = False
    for k, (label, values) in enumerate(series.items()):
        values = list(values)
        if len(values) != eps.size:
            raise ValueError(f"{label or 'the series'}: {len(values)} entries for {eps.size} epsilons.")
        mean, se = [], []
        for v in values:
            repeated = isinstance(v, (list, tuple)) or (isinstance(v, np.ndarray) and v.ndim > 0)
            reps = list(v) if repeated else [v]
            u = np.array([_utility(x, metric, point) for x in reps])
            mean.append(u.mean())
            se.append(u.std(ddof=1) / np.sqrt(u.size) if u.size > 1 else 0.0)
        any_bars = any_bars or any(e > 0 for e in se)
        ax.errorbar(eps, mean, yerr=se if any(e > 0 for e in se) else None, fmt="o-", ms=4, capsize=3,
                    color=f"C{k}", label=label or None)
    if metric == "width" and ref_width is not None:
        ax.axhline(float(np.mean(ref_width)), color="k", ls="--", lw=1, label="reference")
    ax.set_xscale("log")
    ax.set_xlabel("privacy budget ε (log scale; smaller = more private)")
    unit = f" [{units}]" if units else ""
    if ylabel is None:
        ylabel = ("|posterior mean − reference|\n(mean over parameters)" if metric == "error"
                  else "95% credible interval width\n(mean over parameters)")
    ax.set_ylabel(ylabel + unit, fontsize=8)
    bars = "bars: ±1 standard error over repeated releases" if any_bars else None
    if any(series.keys()) or (metric == "width" and ref_width is not None) or bars:
        leg = ax.legend(fontsize=7, title=bars)
        leg.get_title().set_fontsize(6)
    if title:
        ax.set_title(title, fontsize=9)
    if own:
        fig.tight_layout()
        return _save(fig, path)
    return ax
