"""Shared test configuration."""

import warnings

import pytest

from dpinfer.privacy import InsecureRandomnessWarning, PrivacyRNG


@pytest.fixture
def test_rng():
    """A deterministic privacy RNG (INSECURE; tests only)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        return PrivacyRNG.insecure_deterministic(12345)
