"""``--model package.module:factory``: a user's own model on the command line, and its errors."""

from __future__ import annotations

import json
import re
import sys
import textwrap

import pytest

from dpinfer.cli import main
from dpinfer.errors import InvalidDataError
from dpinfer.models.shipped.registry import load_release

FACTORIES = textwrap.dedent(
    """
    from dpinfer.models import GammaPrior, PrivateDataModel, clamped_release


    def poisson(epsilon, n=50, cap=10):
        release = clamped_release("sum", 0, cap, epsilon, n=n, mechanism="geometric")

        def simulate(theta, rng):
            return release.statistic(rng.poisson(theta[:, :1], size=(theta.shape[0], n)))

        return PrivateDataModel(GammaPrior(2.0, 0.5), simulate, release, param_names=["rate"])


    def fixed(n=50):
        return poisson(0.5, n=n)


    def junk(epsilon):
        return 42


    def raises(epsilon):
        raise RuntimeError("boom")


    NOT_A_FUNCTION = 3
    """
)


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    """A directory holding ``usermodels_i12.py`` (and a module that fails to import), as cwd."""
    (tmp_path / "usermodels_i12.py").write_text(FACTORIES)
    (tmp_path / "brokenmodels_i12.py").write_text("import not_installed_pkg_i12\n")
    (tmp_path / "raisingmodels_i12.py").write_text("raise ValueError('bad config')\n")
    release = {"observed": [190], "epsilon": 1.0, "model_args": {"n": 50}}
    (tmp_path / "obs.json").write_text(json.dumps(release))
    (tmp_path / "plain.json").write_text("[190]")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    for name in ("usermodels_i12", "brokenmodels_i12", "raisingmodels_i12"):
        sys.modules.pop(name, None)


def test_exact_posterior_of_a_user_model_from_the_command_line(user_dir, capsys):
    rc = main(["exact-posterior", "--model", "usermodels_i12:poisson", "--observed", "obs.json",
               "--theta", "2000", "--inner", "20", "--pilot-theta", "1000", "--pilot-inner", "10",
               "--backend", "serial", "--json"])
    assert rc in (0, 3)
    out = json.loads(capsys.readouterr().out)
    assert out["model"] == "usermodels_i12:poisson" and out["param_names"] == ["rate"]
    assert out["epsilon"] == 1.0 and 3.0 < out["mean"][0] < 4.6  # exact posterior mean 3.79, sd 0.39
    assert out["privacy_of_release"]["epsilon"] == pytest.approx(1.0)


def test_factory_epsilon_handling(user_dir):
    model, _, eps = load_release("usermodels_i12:poisson", "obs.json", 2.0)  # --epsilon overrides the file
    assert eps == 2.0 and model.mechanism.epsilon == 2.0
    model, values, eps = load_release("usermodels_i12:fixed", "plain.json")
    assert eps == 0.5 and values == [190]  # the mechanism fixes epsilon
    with pytest.raises(InvalidDataError, match="releases at epsilon=0.5 but epsilon=1 was given"):
        load_release("usermodels_i12:fixed", "plain.json", 1.0)


@pytest.mark.parametrize(
    ("spec", "args", "message"),
    [
        ("nosuchmodule_i12:f", [], "cannot import module 'nosuchmodule_i12'"),
        ("usermodels_i12:nope", [], "has no attribute 'nope'; its callables: .*poisson"),
        ("usermodels_i12:NOT_A_FUNCTION", [], "is a int, not a function"),
        ("usermodels_i12:junk", [], "must return a dpinfer PrivateDataModel; got int"),
        ("usermodels_i12:raises", [], "calling the factory raised RuntimeError: boom"),
        ("brokenmodels_i12:f", [], "it imports 'not_installed_pkg_i12', which is not installed"),
        ("raisingmodels_i12:f", [], "importing 'raisingmodels_i12' raised ValueError: bad config"),
        ("usermodels_i12:poisson", ["--model-args", '{"m": 3}'], "no argument 'm'; accepted keys: n, cap"),
    ],
)
def test_user_model_errors_are_one_line_with_what_to_do(user_dir, capsys, spec, args, message):
    rc = main(["exact-posterior", "--model", spec, "--observed", "plain.json", "--epsilon", "1", *args])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert err.startswith("dpinfer: error: ") and len(err.strip().splitlines()) == 1
    assert re.search(message, err), err


def test_unknown_builtin_name_mentions_the_factory_form(user_dir, capsys):
    with pytest.raises(SystemExit):
        main(["smc-abc", "--model", "gaussian-meen", "--observed", "obs.json"])
    assert "package.module:factory" in capsys.readouterr().err
