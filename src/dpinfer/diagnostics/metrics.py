"""Posterior-accuracy metrics: C2ST, MMD, per-marginal KS, NLOG, median predictive distance.

These are the metrics of Xiong, Ju & Zhang (2025, §4.1 and Fig. 1-B), computed between draws of an
approximate posterior and draws of a reference posterior.

* :func:`c2st`: classifier two-sample test accuracy (Lopez-Paz & Oquab 2017) in the sbibm style:
  both samples z-scored with the moments of the first, an MLP with two hidden layers of
  ``10·dim`` ReLU units (Adam, lr 1e-3, minibatches of 200, L2 1e-4, at most 1000 epochs, stopping
  when the training loss has not improved by 1e-4 for 10 epochs; the defaults of scikit-learn's
  ``MLPClassifier`` that sbibm uses), 5-fold stratified cross-validation, mean held-out accuracy.
  0.5 means indistinguishable, 1.0 means perfectly separable. The five folds are trained at once
  as a batch of independent networks in torch (no scikit-learn dependency).
* :func:`mmd`: unbiased squared maximum mean discrepancy with a Gaussian kernel, bandwidth by the
  median heuristic on the pooled z-scored sample (Gretton et al. 2012).
* :func:`ks_marginals`: two-sample Kolmogorov-Smirnov statistic and p-value per coordinate.
* :func:`neg_log_density`: ``-log p̂(θ*)`` of a Gaussian KDE (Scott's bandwidth) of the draws at
  the true parameter (the paper's NLOG), or of a posterior's own ``log_prob``.
* :func:`median_predictive_distance`: the median Euclidean distance between privatised statistics
  simulated at posterior draws and the observed ones (the paper's "medd"/LMD before the log).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..deferred import DeferredModule
from ..errors import InvalidDataError

stats = DeferredModule("scipy.stats")  # imported at first use: ~1 s of start-up (dpinfer.deferred)


def _as_draws(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 2:
        raise InvalidDataError(f"{name} must be draws of shape (n >= 2, dim), got {np.shape(x)}.")
    if not np.all(np.isfinite(arr)):
        raise InvalidDataError(f"{name} contains NaN or inf.")
    return arr


def _pair(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    X, Y = _as_draws(x, "x"), _as_draws(y, "y")
    if X.shape[1] != Y.shape[1]:
        raise InvalidDataError(f"x and y must have the same dimension, got {X.shape[1]} and {Y.shape[1]}.")
    return X, Y


@contextlib.contextmanager
def _one_thread() -> Iterator[Any]:
    """torch (imported lazily) restricted to one intra-op thread: these networks are tiny and
    extra threads only contend on a shared machine."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield torch
    finally:
        torch.set_num_threads(old)


# ----------------------------------------------------------------------------------------------
# C2ST
# ----------------------------------------------------------------------------------------------
def _fold_mlps(torch: Any, folds: int, dim: int, hidden: int) -> tuple[list[Any], list[Any]]:
    """Weights of ``F`` independent MLPs ``dim -> h -> h -> 1`` (Glorot uniform, as scikit-learn)."""
    sizes = [dim, hidden, hidden, 1]
    weights, biases = [], []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        bound = float(np.sqrt(6.0 / (a + b)))
        weights.append(torch.empty(folds, a, b).uniform_(-bound, bound).requires_grad_())
        biases.append(torch.empty(folds, 1, b).uniform_(-bound, bound).requires_grad_())
    return weights, biases


def _fold_forward(torch: Any, weights: list[Any], biases: list[Any], x: Any) -> Any:
    """Logits of the ``F`` networks on ``x`` of shape (F, B, dim): one batched computation."""
    h = x
    for i, (w, b) in enumerate(zip(weights, biases, strict=True)):
        h = torch.baddbmm(b, h, w)
        if i < len(weights) - 1:
            h = torch.relu(h)
    return h[..., 0]


def c2st(
    x: Any,
    y: Any,
    seed: int = 1,
    n_folds: int = 5,
    z_score: bool = True,
    hidden: int | None = None,
    max_epochs: int = 1000,
    batch_size: int = 200,
    learning_rate: float = 1e-3,
    alpha: float = 1e-4,
    tol: float = 1e-4,
    n_iter_no_change: int = 10,
    x_weights: Any = None,
) -> float:
    """Classifier two-sample test accuracy between draws ``x`` and ``y`` (sbibm style).

    Parameters
    ----------
    x, y
        Draws, shapes (n, dim) and (m, dim) (1-D arrays are one-dimensional draws).
    seed
        Seed of the fold split, initialisation and minibatches.
    n_folds
        Stratified cross-validation folds (default 5).
    z_score
        Standardise both samples with the mean and sd of ``x`` (default True).
    hidden
        Hidden units per layer (default ``10·dim``).
    x_weights
        Importance weights of ``x`` (a weighted particle set, e.g. SMC-ABC's final population), or
        ``None`` for equally weighted draws. The classifier is trained on the weighted cross-entropy
        and scored by weighted held-out accuracy, the ``x`` class carrying the same total weight
        as its number of draws. Use this instead of resampling the particles: ``n`` draws
        resampled with replacement from a set of effective sample size ``ESS`` repeat points, which
        a classifier can tell from fresh draws even when the particles are exact (an exact
        posterior resampled at ESS 300 scores about 0.62 against fresh draws; ``tests/diagnostics``).

    Returns
    -------
    float
        Mean held-out classification accuracy over the folds.
    """
    X, Y = _pair(x, y)
    if n_folds < 2 or min(X.shape[0], Y.shape[0]) < n_folds:
        raise InvalidDataError("c2st needs n_folds >= 2 and at least n_folds draws in each sample.")
    sample_w = _c2st_sample_weights(x_weights, X.shape[0], Y.shape[0])
    if z_score:
        mu, sd = X.mean(axis=0), X.std(axis=0)
        sd = np.where(sd > 0, sd, 1.0)
        X, Y = (X - mu) / sd, (Y - mu) / sd
    rng = np.random.default_rng(seed)
    data = np.concatenate([X, Y]).astype(np.float32)
    labels = np.concatenate([np.zeros(X.shape[0]), np.ones(Y.shape[0])]).astype(np.float32)
    fold = np.empty(data.shape[0], dtype=np.int64)
    for cls in (0, 1):  # stratified: each class split evenly across folds
        idx = np.nonzero(labels == cls)[0]
        fold[rng.permutation(idx)] = np.arange(idx.size) % n_folds
    train_idx = [np.nonzero(fold != f)[0] for f in range(n_folds)]
    test_idx = [np.nonzero(fold == f)[0] for f in range(n_folds)]
    n_train = min(len(t) for t in train_idx)
    train_np = np.stack([rng.permutation(t)[:n_train] for t in train_idx])  # (F, n_train)
    dim = data.shape[1]
    with _one_thread() as torch, torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(rng.integers(0, 2**31 - 1)))
        train = torch.as_tensor(train_np)
        D = torch.as_tensor(data)
        L = torch.as_tensor(labels)
        SW = torch.as_tensor(sample_w.astype(np.float32))
        weights, biases = _fold_mlps(torch, n_folds, dim, hidden or 10 * dim)
        opt = torch.optim.Adam(weights + biases, lr=learning_rate)
        gen = torch.Generator().manual_seed(int(rng.integers(0, 2**31 - 1)))
        best = torch.full((n_folds,), float("inf"))
        stall = torch.zeros(n_folds, dtype=torch.int64)
        bsz = min(batch_size, n_train)
        for _ in range(max_epochs):
            perm = torch.argsort(torch.rand(n_folds, n_train, generator=gen), dim=1)
            order = torch.gather(train, 1, perm)
            epoch_loss = torch.zeros(n_folds)
            for start in range(0, n_train, bsz):
                idx = order[:, start : start + bsz]
                logits = _fold_forward(torch, weights, biases, D[idx])
                per_fold = (torch.nn.functional.binary_cross_entropy_with_logits(
                    logits, L[idx], reduction="none"
                ) * SW[idx]).mean(dim=1)
                l2 = sum((w**2).sum(dim=(1, 2)) for w in weights) * (alpha / (2 * idx.shape[1]))
                loss = (per_fold + l2).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
                epoch_loss += per_fold.detach() * idx.shape[1]
            epoch_loss /= n_train
            improved = epoch_loss < best - tol
            stall = torch.where(improved, torch.zeros_like(stall), stall + 1)
            best = torch.minimum(best, epoch_loss)
            if bool((stall > n_iter_no_change).all()):
                break
        accs = _fold_accuracies(torch, weights, biases, D, L, SW, test_idx)
    return float(np.mean(accs))


def _c2st_sample_weights(x_weights: Any, nx: int, ny: int) -> np.ndarray:
    """Per-draw sample weights of the classifier's loss: ``x_weights`` rescaled to mean 1 on the
    draws of x (checked), 1 on the draws of y."""
    sample_w = np.ones(nx + ny)
    if x_weights is not None:
        w = np.asarray(x_weights, dtype=np.float64).reshape(-1)
        if w.shape[0] != nx or not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
            raise InvalidDataError(
                f"x_weights must be {nx} finite non-negative numbers with a positive sum (one per "
                f"draw of x), got shape {w.shape}."
            )
        sample_w[:nx] = w * (nx / w.sum())
    return sample_w


def _fold_accuracies(
    torch: Any, weights: Any, biases: Any, D: Any, L: Any, SW: Any, test_idx: list[np.ndarray]
) -> list[float]:
    """The weighted held-out accuracy of each fold's classifier on its test fold."""
    n_folds = len(test_idx)
    with torch.no_grad():
        accs = []
        for f in range(n_folds):
            te = torch.as_tensor(test_idx[f])
            x_te = D[te][None].expand(n_folds, -1, -1)
            logits = _fold_forward(torch, weights, biases, x_te)[f]
            correct = ((logits > 0).float() == L[te]).float()
            accs.append(float((correct * SW[te]).sum() / SW[te].sum()))
    return accs


# ----------------------------------------------------------------------------------------------
# MMD, KS
# ----------------------------------------------------------------------------------------------
def mmd(
    x: Any,
    y: Any,
    bandwidth: float | None = None,
    z_score: bool = True,
    max_points: int = 4000,
    seed: int = 0,
) -> float:
    """Unbiased squared MMD with a Gaussian kernel ``exp(-||a-b||²/(2h²))``.

    ``h`` is the median pairwise distance of the pooled (z-scored with ``x``'s moments) sample
    unless given. Samples larger than ``max_points`` are subsampled (seeded).
    """
    X, Y = _pair(x, y)
    rng = np.random.default_rng(seed)
    if X.shape[0] > max_points:
        X = X[rng.choice(X.shape[0], max_points, replace=False)]
    if Y.shape[0] > max_points:
        Y = Y[rng.choice(Y.shape[0], max_points, replace=False)]
    if z_score:
        mu, sd = X.mean(axis=0), X.std(axis=0)
        sd = np.where(sd > 0, sd, 1.0)
        X, Y = (X - mu) / sd, (Y - mu) / sd
    with _one_thread() as torch:
        return _mmd2(torch, torch.as_tensor(X), torch.as_tensor(Y), bandwidth, rng)


def _mmd2(torch: Any, Xt: Any, Yt: Any, bandwidth: float | None, rng: np.random.Generator) -> float:
    if bandwidth is None:
        Z = torch.cat([Xt, Yt])
        sub = Z[torch.as_tensor(rng.choice(Z.shape[0], min(Z.shape[0], 1000), replace=False))]
        d = torch.cdist(sub, sub)
        bandwidth = float(torch.median(d[d > 0])) if bool((d > 0).any()) else 1.0
    g = 1.0 / (2.0 * bandwidth**2)
    kxx = torch.exp(-g * torch.cdist(Xt, Xt) ** 2)
    kyy = torch.exp(-g * torch.cdist(Yt, Yt) ** 2)
    kxy = torch.exp(-g * torch.cdist(Xt, Yt) ** 2)
    n, m = Xt.shape[0], Yt.shape[0]
    val = (
        (kxx.sum() - kxx.diagonal().sum()) / (n * (n - 1))
        + (kyy.sum() - kyy.diagonal().sum()) / (m * (m - 1))
        - 2.0 * kxy.mean()
    )
    return float(val)


def ks_marginals(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Two-sample KS statistic and p-value for every coordinate (``y`` may be a list of CDFs)."""
    X = _as_draws(x, "x")
    stat, pval = np.empty(X.shape[1]), np.empty(X.shape[1])
    if isinstance(y, (list, tuple)) and y and callable(y[0]):
        if len(y) != X.shape[1]:
            raise InvalidDataError(f"need one CDF per coordinate ({X.shape[1]}), got {len(y)}.")
        for i in range(X.shape[1]):
            r = stats.kstest(X[:, i], y[i])
            stat[i], pval[i] = r.statistic, r.pvalue
        return stat, pval
    X, Y = _pair(X, y)
    for i in range(X.shape[1]):
        r = stats.ks_2samp(X[:, i], Y[:, i])
        stat[i], pval[i] = r.statistic, r.pvalue
    return stat, pval


# ----------------------------------------------------------------------------------------------
# NLOG and predictive distance
# ----------------------------------------------------------------------------------------------
def neg_log_density(draws_or_posterior: Any, theta_true: Any) -> float:
    """``-log p̂(θ*)``: a posterior's ``log_prob`` if it has one, else a Gaussian KDE of draws."""
    t = np.atleast_1d(np.asarray(theta_true, dtype=np.float64))
    if hasattr(draws_or_posterior, "log_prob") and not isinstance(draws_or_posterior, np.ndarray):
        return float(-np.asarray(draws_or_posterior.log_prob(t[None, :])).reshape(-1)[0])
    D = _as_draws(draws_or_posterior, "draws")
    if D.shape[1] != t.size:
        raise InvalidDataError(f"theta_true has {t.size} coordinates, the draws {D.shape[1]}.")
    kde = stats.gaussian_kde(D.T, bw_method="scott")
    return float(-kde.logpdf(t[:, None])[0])


def median_predictive_distance(
    model: Any, draws: Any, observed: Any, seed: Any = 0, n: int | None = None
) -> float:
    """Median ``||s_dp(θ) - s_obs||₂`` over posterior draws ``θ`` (one private simulation each)."""
    D = _as_draws(draws, "draws")
    if n is not None:
        D = D[: int(n)]
    obs = model.check_observed(observed)
    sim = np.asarray(model.simulate(D, np.random.default_rng(seed)))
    return float(np.median(np.linalg.norm(sim - obs, axis=1)))


__all__ = ["c2st", "ks_marginals", "median_predictive_distance", "mmd", "neg_log_density"]
