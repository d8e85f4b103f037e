"""Black-box privacy audits of release mechanisms: pure functions of releases, no knowledge of the code.

The top layer above everything it audits (the privacy core, ``models``, ``release``,
``distances``); nothing in the library imports it. Three checks, each a statistical or exact test
on outputs of a release function ``release(data, rng) -> value`` run on two neighbouring inputs:

* :mod:`.statistics` — a Clopper–Pearson lower confidence bound on ε (:func:`audit_epsilon`;
  Jagielski, Ullman & Oprea 2020; Nasr et al. 2021; Tramèr et al. 2022);
* :mod:`.grid` — grid membership and reachability of the outputs (:func:`check_grid`; Mironov
  2012; Canonne, Kamath & Steinke 2020);
* :mod:`.floating` — the floating-point distinguishing test of Mironov (2012)
  (:func:`impossible_fraction`, :func:`laplace_float_reaches`).

What they run on: :mod:`.entries` (the data model: :class:`RegistryEntry`, :class:`AuditSetup`,
:class:`BrokenVariant`), :mod:`.setups` (how each mechanism is built for an audit, with its
known-broken variants) and :mod:`.registry` (every release mechanism of dpinfer, with its proof).
The tests of ``tests/audits/test_mechanism_registry.py`` run every entry through the checks.

Everything here is post-processing of releases made on the auditor's own neighbouring inputs;
nothing is charged.
"""

from .entries import AuditSetup, BrokenVariant, RegistryEntry
from .floating import impossible_fraction, laplace_float_reaches
from .grid import GridCheck, Lattice, check_grid, flatten_outputs, power_of_two_spacing
from .statistics import (
    AuditResult,
    audit_epsilon,
    audit_from_outputs,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_lower_bound,
    in_set,
    run_releases,
)

__all__ = [
    "AuditResult",
    "AuditSetup",
    "BrokenVariant",
    "GridCheck",
    "Lattice",
    "RegistryEntry",
    "audit_epsilon",
    "audit_from_outputs",
    "check_grid",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "flatten_outputs",
    "impossible_fraction",
    "in_set",
    "laplace_float_reaches",
    "power_of_two_spacing",
    "run_releases",
]
