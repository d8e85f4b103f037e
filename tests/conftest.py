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


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server for the whole session (tests/pg_server.py), or a skip saying why
    none can be started here."""
    from pg_server import PGServer, why_unavailable

    reason = why_unavailable()
    if reason:
        pytest.skip(reason)
    server = PGServer().init()
    yield server
    server.close()
