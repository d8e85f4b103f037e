"""``dpinfer demo``: an end-to-end tour of every capability.

Each capability contributes a *section*, a function ``section(ctx: DemoContext) -> None`` in a
module of this package that adds rows, text and figures to ``ctx.report``:

* :mod:`~dpinfer.demo.privacy_core`: a Laplace release charged to the demo ledger;
* :mod:`~dpinfer.demo.abcdp`: ABCDP on the COVID-19 Netherlands counts;
* :mod:`~dpinfer.demo.dpvi`: DPVI on Abalone;
* :mod:`~dpinfer.demo.smc_abc`: SMC-ABC vs DA-MCMC, linear regression from private statistics;
* :mod:`~dpinfer.demo.own_model`: a model written from functions, released by the data owner and
  inferred with ``dpinfer.infer``, against its exact posterior;
* :mod:`~dpinfer.demo.neural`: SPPE on a privately released clamped mean, against its exact posterior.

Sections are listed in :data:`SECTIONS` as ``"module:function"`` strings with the package they
drive and run in order; a section whose package is not part of this build is skipped (an error
inside a present section propagates).
"""

from __future__ import annotations

import importlib
import time
from pathlib import Path

from ..cli.common import module_present
from ..privacy import Ledger
from ..report import DemoReport
from .context import DEMO_DATASET, DemoContext

# ("module:function", the package it drives), in the order they run
SECTIONS: list[tuple[str, str]] = [
    ("dpinfer.demo.privacy_core:section_privacy_core", "dpinfer.privacy"),
    ("dpinfer.demo.abcdp:section_abcdp", "dpinfer.release"),
    ("dpinfer.demo.dpvi:section_dpvi", "dpinfer.release.dpvi"),
    ("dpinfer.demo.smc_abc:section_smc_abc", "dpinfer.inference"),
    ("dpinfer.demo.own_model:section_own_model", "dpinfer.inference"),
    ("dpinfer.demo.neural:section_sppe", "dpinfer.inference.neural"),
]


def run_demo(out_dir: str | Path = "out", seed: int = 2026, quick: bool = False) -> DemoReport:
    """Run every demo section, print the results table and write ``report.md``.

    Parameters
    ----------
    out_dir
        Output directory: ``report.md``, the figures and ``ledger.db`` (a fresh ledger each run).
    seed
        Simulation seed (never the privacy noise).
    quick
        Smaller runs, for smoke tests.

    Returns
    -------
    DemoReport
        The collected rows, texts and figures (already written).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ledger_path = out / "ledger.db"
    if ledger_path.exists():  # the demo starts from a fresh budget every run
        ledger_path.unlink()
    ledger = Ledger(ledger_path, create=True)
    ledger.register(DEMO_DATASET, epsilon=10.0, delta=1e-5, accountant="pld")
    ctx = DemoContext(out, ledger, seed, quick, DemoReport(out))
    for spec, package in SECTIONS:
        if not module_present(package):
            continue
        module, func = spec.split(":")
        start = time.perf_counter()
        print(f"== {spec}")
        getattr(importlib.import_module(module), func)(ctx)
        print(f"   ({time.perf_counter() - start:.1f} s)")
    spent = ledger.spent(DEMO_DATASET)
    ctx.report.add_row(
        "privacy core",
        "ledger",
        f"epsilon spent on {DEMO_DATASET!r}",
        spent,
        10.0,
        f"budget 10, delta 1e-5, {len(ledger.history(DEMO_DATASET))} charges",
    )
    print()
    print(ctx.report.table())
    path = ctx.report.write()
    print(f"\nreport: {path}; ledger: {ledger_path}")
    return ctx.report


__all__ = ["DEMO_DATASET", "SECTIONS", "DemoContext", "run_demo"]
