"""``dpinfer demo``: an end-to-end tour of every capability built so far.

Each capability contributes a *section*: a function ``section(ctx: DemoContext) -> None`` that
adds rows, text and figures to ``ctx.report``. Sections are listed in :data:`SECTIONS` as
``"module:function"`` strings and run in order; a family whose module is not part of this
build is skipped (an error inside a present module propagates).
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .cli import module_present
from .privacy import Ledger, PrivacyReport, laplace
from .report import DemoReport

DEMO_DATASET = "abalone"


@dataclass
class DemoContext:
    """What a demo section gets: output directory, a fresh ledger, a seed and the report."""

    out_dir: Path
    ledger: Ledger
    seed: int
    quick: bool
    report: DemoReport

    def rng(self, offset: int = 0) -> np.random.Generator:
        """A simulation RNG for a section (never used for privacy noise)."""
        return np.random.default_rng([self.seed, offset])


def section_privacy_core(ctx: DemoContext) -> None:
    """A Laplace release of the clamped mean number of rings of the Abalone data."""
    from .datasets import load_abalone_raw

    _, values = load_abalone_raw()
    rings = values[:, -1]
    lo, hi = 0.0, 30.0
    clamped = np.clip(rings, lo, hi)
    n = clamped.size
    sensitivity = (hi - lo) / n  # replace-one: one record moves the mean by at most (hi-lo)/n
    epsilon = 0.5
    noisy, event = laplace(
        clamped.mean(),
        sensitivity,
        epsilon,
        ledger=ctx.ledger,
        dataset=DEMO_DATASET,
        label="mean rings (Laplace)",
    )
    report = PrivacyReport.from_event(
        event,
        delta=0.0,
        accountant="pure",
        sensitivity=sensitivity,
        mechanism="laplace",
        details={
            "statistic": "mean of Rings clamped to [0, 30]",
            "n": n,
            "noise_scale": sensitivity / epsilon,
        },
    )
    ctx.report.add_row(
        "privacy core",
        "Laplace",
        "mean rings (confidential)",
        float(clamped.mean()),
        "-",
        "never released; shown for the demo only",
    )
    ctx.report.add_row(
        "privacy core",
        "Laplace",
        "mean rings (released)",
        float(noisy),
        epsilon,
        f"noise scale {sensitivity / epsilon:.3g}",
    )
    ctx.report.add_text("Privacy core: Laplace release", "```\n" + report.summary() + "\n```")
    print(report.summary())


SECTIONS: list[str] = [
    "dpinfer.demo:section_privacy_core",
    "dpinfer.abc.demo:section_abcdp",
    "dpinfer.vi.demo:section_dpvi",
    "dpinfer.abc.demo_smc:section_smc_abc",
    "dpinfer.neural.demo:section_sppe",
]


def run_demo(out_dir: str | Path = "out", seed: int = 2026, quick: bool = False) -> DemoReport:
    """Run every demo section, print the results table and write ``report.md``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ledger_path = out / "ledger.db"
    if ledger_path.exists():  # the demo starts from a fresh budget every run
        ledger_path.unlink()
    ledger = Ledger(ledger_path, create=True)
    ledger.register(DEMO_DATASET, epsilon=10.0, delta=1e-5, accountant="pld")
    ctx = DemoContext(out, ledger, seed, quick, DemoReport(out))
    for spec in SECTIONS:
        module, func = spec.split(":")
        if not module_present(module):
            continue
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
