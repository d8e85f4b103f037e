"""``dpinfer.infer`` on a release known only by its noise density (issue 26): ``"auto"`` picks a
method that needs only the density (tempered SMC, or importance sampling when only it takes the
options) and never one that simulates the release; SMC-ABC, SPPE and SPLE are refused in one line.

Reference: the Binomial count with Student-t(3) noise of ``examples/density_only/problem.py``,
whose exact posterior is a finite sum on a grid.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import pytest

import dpinfer
from dpinfer.errors import InvalidDataError
from dpinfer.inference.entry import calibration_check, choose_method

_spec = importlib.util.spec_from_file_location(
    "density_only_problem", Path(__file__).parents[2] / "examples" / "density_only" / "problem.py"
)
problem = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(problem)  # type: ignore[union-attr]


def test_auto_routes_a_density_only_model_to_the_density_methods():
    model = problem.make_model()
    method, reason = choose_method(model, 1e-6, 120)
    assert method == "exact" and "only by its noise density" in reason and "over the budget" not in reason
    # a slow simulator does not send it to SMC-ABC or SPPE (they cannot simulate the release)
    method, reason = choose_method(model, 1.0, 120)
    assert method == "exact" and "over the budget" in reason
    # options only importance sampling takes pick it; options neither takes are refused
    assert choose_method(model, 1e-6, 120, {"n_theta": 100, "pilot_theta": 50})[0] == "importance"
    with pytest.raises(InvalidDataError, match="does not accept the option"):
        choose_method(model, 1e-6, 120, {"training": {}})


def test_auto_on_a_density_only_model_matches_the_exact_posterior():
    exact = problem.ExactPosterior(n_grid=1001)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a healthy problem raises no diagnostic (no predictive check)
        post = dpinfer.infer(problem.make_model(), problem.OBSERVED, seed=2, n_particles=300, n_inner=5)
    assert post.method == "exact" and post.findings == []
    # the same tolerances as test_density_only's direct tempered-SMC run at this size
    assert abs(post.mean()[0] - exact.mean) < 0.25 * exact.sd
    assert abs(post.sd()[0] / exact.sd - 1) < 0.2


@pytest.mark.parametrize("method", ["smc-abc", "sppe", "sple"])
def test_simulating_methods_are_refused_in_one_line(method):
    with pytest.raises(InvalidDataError, match=f"method '{method}' needs to simulate the release") as err:
        dpinfer.infer(problem.make_model(), problem.OBSERVED, method=method)
    assert "\n" not in str(err.value) and "method='exact'" in str(err.value)
    with pytest.raises(InvalidDataError, match="needs to simulate the release"):
        calibration_check(problem.make_model(), method=method, n_replicates=2)
