"""Diagnostics: flip probability and error bounds (ABCDP), C2ST, MMD and KS metrics."""

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
    "c2st",
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
