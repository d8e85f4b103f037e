"""Seeded (INSECURE, tests only) privacy RNGs, so that statistical tests of released noise are
reproducible; the library warns when one is made, and the tests silence that warning here."""

from __future__ import annotations

import warnings

from dpinfer.privacy import InsecureRandomnessWarning, PrivacyRNG


def prng(seed: int) -> PrivacyRNG:
    """``PrivacyRNG.insecure_deterministic(seed)`` without its InsecureRandomnessWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        return PrivacyRNG.insecure_deterministic(seed)
