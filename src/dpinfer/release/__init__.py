"""Code that reads confidential data and releases something from it: every call here spends budget.

* :func:`abcdp` — ABCDP, rejection ABC made private by the sparse vector technique
  (Park, Vinaroz & Jitkrittum 2021, Algorithm 1), its options (:class:`ABCDPOptions`) and its
  draw sources;
* :mod:`.embedding` — ABCDP by one Gaussian release of a random-feature mean embedding;
* :func:`private_smc_abc` / :func:`gaussian_weights_smc_abc` — private sequential ABC (§7);
* :func:`rejection_abc` — the *non-private* baseline (it releases the accepted θ without noise);
* :mod:`.dpvi` — differentially private variational inference (Jälkö, Dikmen & Honkela 2017).

The noise itself is drawn in :mod:`dpinfer.privacy` only (the architecture test enforces it).
"""

from .abc_result import ABCDPResult, ABCResult
from .abcdp import ABCDPOptions, abcdp
from .draws import ArrayDraws, DrawSource, SimulatedDraws, as_draw_source
from .private_smc import PrivateSMCResult, private_smc_abc
from .private_smc_gauss import gaussian_weights_smc_abc
from .rejection import rejection_abc, rejection_abc_draws

__all__ = [
    "ABCDPOptions",
    "ABCDPResult",
    "ABCResult",
    "ArrayDraws",
    "DrawSource",
    "PrivateSMCResult",
    "SimulatedDraws",
    "abcdp",
    "as_draw_source",
    "gaussian_weights_smc_abc",
    "private_smc_abc",
    "rejection_abc",
    "rejection_abc_draws",
]
