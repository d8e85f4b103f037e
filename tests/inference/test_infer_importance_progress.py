"""The progress callback of mechanism-density importance sampling (issue 26): called for every
stage until its simulations are done, and without effect on the result."""

from __future__ import annotations

import numpy as np

from dpinfer.inference import ProposalOptions, mechanism_importance_sampling
from user_problems import PoissonClampedSum


def test_callback_reports_every_stage_and_changes_nothing():
    model = PoissonClampedSum()
    kw = dict(n_theta=400, n_inner=4, pilot_theta=200, pilot_inner=2,
              proposal_options=ProposalOptions(adapt=1),
              seed=3,
              batch_size=200)
    calls: list[tuple[str, int, int]] = []
    with_cb = mechanism_importance_sampling(model, [110.0], callback=lambda *a: calls.append(a), **kw)
    plain = mechanism_importance_sampling(model, [110.0], **kw)
    np.testing.assert_array_equal(with_cb.log_weights, plain.log_weights)
    np.testing.assert_array_equal(with_cb.particles, plain.particles)
    stages = [c[0] for c in calls]
    assert stages[0] == "pilot 0" and "pilot 1" in stages and stages[-1] == "main"
    for stage in ("pilot 0", "pilot 1", "main"):
        done = [d for s, d, _ in calls if s == stage]
        total = {t for s, _, t in calls if s == stage}
        assert len(total) == 1 and done == sorted(done) and done[-1] == total.pop()
    assert len([s for s in stages if s == "main"]) == 400 * 4 // 200  # one call per batch (serial)
