"""Demo section: the privacy core, a Laplace release of the Abalone data's mean number of rings."""

from __future__ import annotations

import numpy as np

from ..privacy import PrivacyReport, laplace
from .context import DEMO_DATASET, DemoContext


def section_privacy_core(ctx: DemoContext) -> None:
    """A Laplace release of the clamped mean number of rings of the Abalone data."""
    from ..datasets import load_abalone_raw

    _, values = load_abalone_raw()
    rings = values[:, -1]
    lo, hi = 0.0, 30.0
    clamped = np.clip(rings, lo, hi)
    n = clamped.size
    sensitivity = (hi - lo) / n  # replace-one: one record moves the mean by at most (hi-lo)/n
    epsilon = 0.5
    rel = laplace(
        clamped.mean(),
        sensitivity,
        epsilon,
        context=ctx.charged_to(DEMO_DATASET),
        label="mean rings (Laplace)",
    )
    noisy, event = rel.value, rel.event
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
