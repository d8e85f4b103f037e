"""Diagnostics: flip probability and error bounds (ABCDP), C2ST, MMD and KS metrics, and the
result contract every method's result follows (:mod:`.results`: one file format, ``load_result``)."""

from ..results.format import PosteriorResult, load_result
from .flip import (
    expected_flips,
    flip_probability,
    laplace_difference_cdf,
    laplace_difference_tail,
    posterior_mean_error_bound,
    posterior_mean_tail_bound,
    svt_epsilon,
    svt_noise_scale,
)
from .metrics import c2st, ks_marginals, median_predictive_distance, mmd, neg_log_density

__all__ = [
    "PosteriorResult",
    "c2st",
    "load_result",
    "ks_marginals",
    "median_predictive_distance",
    "mmd",
    "neg_log_density",
    "expected_flips",
    "flip_probability",
    "laplace_difference_cdf",
    "laplace_difference_tail",
    "posterior_mean_error_bound",
    "posterior_mean_tail_bound",
    "svt_epsilon",
    "svt_noise_scale",
]
