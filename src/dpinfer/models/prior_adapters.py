"""The independent product of priors, and priors from scipy.stats or torch.distributions objects.

:func:`as_prior` is what :class:`~dpinfer.models.contract.PrivateDataModel` calls on its
``prior=`` argument: a :class:`~dpinfer.models.priors.Prior` is used as is, a list or tuple of
priors becomes their :class:`IndependentPrior`, a frozen ``scipy.stats`` distribution a
:class:`ScipyPrior`, a ``torch.distributions.Distribution`` a :class:`TorchPrior`.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..errors import InvalidDataError
from ..randomness import as_generator
from .priors import Prior
from .transforms import Bijection, BlockBijection


class IndependentPrior(Prior):
    """``θ = (θ_1, ..., θ_m)`` with independent blocks ``θ_i ~ parts[i]`` (concatenated)."""

    def __init__(self, *parts: Any) -> None:
        if len(parts) == 1 and isinstance(parts[0], (list, tuple)):
            parts = tuple(parts[0])
        if not parts:
            raise InvalidDataError("IndependentPrior needs at least one prior.")
        self.parts = [as_prior(p) for p in parts]
        self._cuts = np.cumsum([0] + [p.dim for p in self.parts])
        self.dim = int(self._cuts[-1])

    def _blocks(self, theta: np.ndarray) -> list[np.ndarray]:
        t = np.asarray(theta, dtype=np.float64)
        return [t[..., a:b] for a, b in zip(self._cuts[:-1], self._cuts[1:], strict=True)]

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        gen = as_generator(seed)
        return np.concatenate([p.sample(n, gen) for p in self.parts], axis=-1)

    def log_prob(self, theta: np.ndarray) -> np.ndarray:
        return np.sum([p.log_prob(b) for p, b in zip(self.parts, self._blocks(theta), strict=True)], axis=0)

    @property
    def support(self) -> tuple[np.ndarray, np.ndarray]:
        lows, highs = zip(*(p.support for p in self.parts), strict=True)
        return np.concatenate(lows), np.concatenate(highs)

    @property
    def transform(self) -> Bijection:
        return BlockBijection([p.transform for p in self.parts])

    def __repr__(self) -> str:
        return f"IndependentPrior({', '.join(map(repr, self.parts))})"


class ScipyPrior(Prior):
    """A frozen continuous ``scipy.stats`` distribution as a prior.

    Univariate (``scipy.stats.gamma(2, scale=0.5)``: ``dim = 1``, support from ``dist.support()``)
    or multivariate on R^d (``multivariate_normal``, ``multivariate_t``: ``dim = dist.dim``).
    Draws use ``dist.rvs(random_state=<the simulation Generator>)``, so they follow the seed.
    """

    def __init__(self, dist: Any) -> None:
        from scipy import stats

        self.dist = dist
        family = getattr(dist, "dist", None)
        if isinstance(family, stats.rv_discrete):
            raise InvalidDataError(
                f"a prior must be continuous; {family.name} is discrete. Use a continuous prior (e.g. "
                "a Gamma for a rate) and round inside the simulator if the parameter is an integer."
            )
        if isinstance(family, stats.rv_continuous):
            self.dim, self._univariate = 1, True
            lo, hi = dist.support()
            self._box = (np.array([float(lo)]), np.array([float(hi)]))
        elif hasattr(dist, "dim") and hasattr(dist, "logpdf") and hasattr(dist, "rvs"):
            if type(dist).__name__.startswith(("dirichlet", "wishart", "invwishart")):
                raise InvalidDataError(
                    f"{type(dist).__name__} is not supported as a prior here; use "
                    "dpinfer.models.DirichletPrior for a Dirichlet."
                )
            self.dim, self._univariate = int(dist.dim), False
            self._box = (np.full(self.dim, -np.inf), np.full(self.dim, np.inf))
        else:
            raise InvalidDataError(
                f"expected a frozen scipy.stats distribution (e.g. scipy.stats.norm(0, 1)), got {dist!r}."
            )

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        draws = self.dist.rvs(size=int(n), random_state=as_generator(seed))
        return np.asarray(draws, dtype=np.float64).reshape(int(n), self.dim)

    def log_prob(self, theta: np.ndarray) -> np.ndarray:
        t = np.asarray(theta, dtype=np.float64)
        lp = self.dist.logpdf(t[..., 0]) if self._univariate else self.dist.logpdf(t)
        lp = np.asarray(lp, dtype=np.float64).reshape(t.shape[:-1])
        return np.where(np.isnan(lp), -np.inf, lp)

    @property
    def support(self) -> tuple[np.ndarray, np.ndarray]:
        return self._box[0].copy(), self._box[1].copy()

    def __repr__(self) -> str:
        return f"ScipyPrior({getattr(getattr(self.dist, 'dist', None), 'name', type(self.dist).__name__)})"


class TorchPrior(Prior):
    """A ``torch.distributions.Distribution`` as a prior (computed in float64 numpy at the edges).

    ``dim``: 1 for a scalar distribution, ``d`` for a batch of ``d`` scalar distributions
    (independent coordinates, e.g. ``Uniform(torch.zeros(2), torch.ones(2))``) or for an event of
    size ``d`` on R^d (``MultivariateNormal``). The support must be a box (real, positive,
    interval, ...): simplex or discrete supports are refused. Draws are reproducible from the
    simulation seed (torch's RNG is seeded from it inside ``torch.random.fork_rng``, which leaves
    the global torch RNG untouched).
    """

    def __init__(self, dist: Any) -> None:
        import torch

        if not isinstance(dist, torch.distributions.Distribution):
            raise InvalidDataError(f"expected a torch.distributions.Distribution, got {dist!r}.")
        batch, event = tuple(dist.batch_shape), tuple(dist.event_shape)
        if len(batch) + len(event) > 1 or (batch and event):
            raise InvalidDataError(
                f"a torch prior must be scalar, a 1-d batch of scalars or a 1-d event; got batch shape "
                f"{batch} and event shape {event}. Wrap it with torch.distributions.Independent."
            )
        self.dist = dist
        self.dim = int((batch or event or (1,))[0])
        self._event = bool(event)
        self._box = self._support_box(dist.support)

    def _support_box(self, constraint: Any) -> tuple[np.ndarray, np.ndarray]:
        from torch.distributions import constraints

        c = constraint
        while isinstance(c, constraints.independent):
            c = c.base_constraint
        names = ("_Real", "_GreaterThan", "_GreaterThanEq", "_LessThan", "_Interval", "_HalfOpenInterval")
        box = tuple(getattr(constraints, name) for name in names if hasattr(constraints, name))
        if c.is_discrete or type(c) not in box:  # exactly these classes of torch's, not a subclass
            raise InvalidDataError(
                f"a torch prior needs a box support (real, positive, interval); {type(self.dist).__name__} "
                f"has support {constraint}. Use DirichletPrior for a simplex; priors must be continuous."
            )

        def bound(value: Any, default: float) -> np.ndarray:
            v = default if value is None else np.asarray(value, dtype=np.float64)
            return np.broadcast_to(v, (self.dim,)).astype(np.float64)

        return bound(getattr(c, "lower_bound", None), -np.inf), bound(getattr(c, "upper_bound", None), np.inf)

    def _tensor(self, x: np.ndarray) -> Any:
        import torch

        params = [v for v in vars(self.dist).values() if isinstance(v, torch.Tensor)]
        dtype = params[0].dtype if params else torch.get_default_dtype()
        return torch.as_tensor(np.ascontiguousarray(x), dtype=dtype)

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        import torch

        torch_seed = int(as_generator(seed).integers(2**63 - 1))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(torch_seed)
            draws = self.dist.sample((int(n),))
        return draws.detach().cpu().numpy().astype(np.float64).reshape(int(n), self.dim)

    def log_prob(self, theta: np.ndarray) -> np.ndarray:
        import torch

        t = np.asarray(theta, dtype=np.float64)
        lo, hi = self._box
        ok = (t > lo) & (t < hi)
        safe = np.where(ok, t, self.transform.forward(np.zeros(self.dim)))
        x = self._tensor(safe if (self._event or self.dim > 1) else safe[..., 0])
        with torch.no_grad():
            lp = self.dist.log_prob(x).double().numpy()
        if self.dim > 1 and not self._event:
            lp = lp.sum(-1)
        return np.where(np.all(ok, axis=-1), lp, -np.inf)

    @property
    def support(self) -> tuple[np.ndarray, np.ndarray]:
        return self._box[0].copy(), self._box[1].copy()

    def __repr__(self) -> str:
        return f"TorchPrior({self.dist!r})"


def as_prior(prior: Any) -> Prior:
    """A :class:`Prior` from a Prior, a list/tuple of priors, a frozen scipy.stats or a torch
    distribution (module docstring); a clear error for anything else."""
    if isinstance(prior, Prior):
        return prior
    if isinstance(prior, (list, tuple)):
        return IndependentPrior(*prior)
    if hasattr(prior, "rvs") and hasattr(prior, "logpdf"):
        return ScipyPrior(prior)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(prior, torch.distributions.Distribution):
        return TorchPrior(prior)
    raise InvalidDataError(
        f"prior must be a dpinfer Prior (GaussianPrior, UniformPrior, GammaPrior, ...), a list of them, a "
        f"frozen scipy.stats distribution or a torch.distributions.Distribution; got {type(prior).__name__}."
    )


__all__ = ["IndependentPrior", "ScipyPrior", "TorchPrior", "as_prior"]
