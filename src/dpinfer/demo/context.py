"""What every section of ``dpinfer demo`` gets: :class:`DemoContext`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..privacy import Ledger, ReleaseContext
from ..report import DemoReport

DEMO_DATASET = "abalone"


@dataclass
class DemoContext:
    """What a demo section gets: output directory, a fresh ledger, a seed and the report."""

    out_dir: Path
    ledger: Ledger
    seed: int
    quick: bool
    report: DemoReport

    def charged_to(self, dataset: str) -> ReleaseContext:
        """The release context that charges a section's release to ``dataset`` in the demo ledger."""
        return ReleaseContext(ledger=self.ledger, dataset=dataset)

    def rng(self, offset: int = 0) -> np.random.Generator:
        """A simulation RNG for a section (never used for privacy noise)."""
        return np.random.default_rng([self.seed, offset])
