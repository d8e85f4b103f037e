"""Shared test configuration."""

import pytest

from seeded_privacy_rng import prng


@pytest.fixture
def test_rng():
    """A deterministic privacy RNG (INSECURE; tests only)."""
    return prng(12345)


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
