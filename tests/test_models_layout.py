"""The models package layout: the deprecated ``dpinfer.models.base`` and the re-exports that stay."""

from __future__ import annotations

import importlib
import warnings

import pytest

import dpinfer.models
from dpinfer.models import base

NEW_HOMES = {
    "randomness": ("SeedLike", "as_generator", "open_uniforms"),
    "priors": ("Prior", "GaussianPrior"),
    "mechanisms": ("PrivateRelease", "Mechanism", "LaplaceMechanism"),
    "contract": ("PrivateDataModel",),
    "posteriors": ("GaussianPosterior", "DrawsPosterior"),
}
MOVED = {name: module for module, names in NEW_HOMES.items() for name in names}


@pytest.mark.parametrize("name", sorted(MOVED))
def test_base_reexports_every_old_name_with_a_deprecation_warning(name):
    new = getattr(importlib.import_module(f"dpinfer.models.{MOVED[name]}"), name)
    with pytest.warns(DeprecationWarning, match=rf"dpinfer\.models\.{MOVED[name]}"):
        old = getattr(base, name)
    assert old is new


def test_base_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError):
        base.no_such_name  # noqa: B018


def test_package_exports_do_not_warn():
    names = [n for n in MOVED if n[0].isupper() and n != "SeedLike"] + ["GridPosterior"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for name in names:
            assert getattr(dpinfer.models, name).__module__ != "dpinfer.models.base"


def test_sir_keeps_its_public_names():
    from dpinfer.models import sir

    for name in ("binom_ppf", "gillespie_sir", "DEFAULT_TIMES", "SIR", "BinomialTrajectoryMechanism"):
        assert hasattr(sir, name)
