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

__all__ = [
    "expected_flips",
    "flip_probability",
    "laplace_difference_cdf",
    "laplace_difference_tail",
    "posterior_mean_error_bound",
    "posterior_mean_tail_bound",
    "svt_epsilon",
    "svt_noise_scale",
]
