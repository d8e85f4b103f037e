"""``dpinfer release --model package.module:factory``: the data owner's step for a model of one's own.

The factory's mechanism is a ``clamped_release``; the file's record count reaches a factory that
takes ``n``; the release is charged before the noise and the analyst's command reads the file
with the same n. Refusals (no --columns, a mechanism that cannot read records, an n the factory
fixes differently) charge nothing.
"""

from __future__ import annotations

import json
import sys
import textwrap

import numpy as np
import pytest

from dpinfer.cli import main
from dpinfer.privacy import Ledger

FACTORIES = textwrap.dedent(
    """
    from dpinfer.models import GammaPrior, LaplaceMechanism, PrivateDataModel, clamped_release


    def clinic(epsilon, n=50):
        release = clamped_release("sum", 0, 10, epsilon=epsilon, n=n, mechanism="geometric")

        def simulate(theta, rng):
            return release.statistic(rng.poisson(theta[:, :1], size=(theta.shape[0], n)))

        return PrivateDataModel(GammaPrior(2.0, 0.5), simulate, release, param_names=["rate"])


    def fixed_n(epsilon):
        return clinic(epsilon, n=50)


    def plain_mechanism(epsilon):
        mech = LaplaceMechanism(1, 10.0, epsilon)
        return PrivateDataModel(GammaPrior(2.0, 0.5), lambda th, rng: th[:, :1] * 40, mech)
    """
)


@pytest.fixture
def owner(tmp_path, monkeypatch):
    (tmp_path / "clinic_rel.py").write_text(FACTORIES)
    rng = np.random.default_rng(0)
    (tmp_path / "visits.csv").write_text("visits\n" + "\n".join(str(v) for v in rng.poisson(4.0, 40)) + "\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    ledger = Ledger(tmp_path / "b.db", create=True)
    ledger.register("clinic", epsilon=3.0)
    yield tmp_path, ledger
    sys.modules.pop("clinic_rel", None)


def test_owner_releases_and_analyst_reads_with_the_files_n(owner, capsys):
    tmp, ledger = owner
    argv = ["release", "--model", "clinic_rel:clinic", "--data", "visits.csv", "--columns", "visits",
            "--epsilon", "1", "--ledger", "b.db", "--dataset", "clinic", "--out", "rel.json"]
    assert main(argv) == 0
    doc = json.loads((tmp / "rel.json").read_text())
    assert doc["model_args"] == {"n": 40} and doc["privacy"]["epsilon"] == 1.0
    assert float(doc["observed"][0]).is_integer()  # geometric mechanism: an exact integer release
    assert [h["status"] for h in Ledger(tmp / "b.db").history("clinic")] == ["released"]
    capsys.readouterr()
    argv = ["exact-posterior", "--model", "clinic_rel:clinic", "--observed", "rel.json", "--epsilon", "1",
            "--theta", "500", "--inner", "5", "--backend", "serial", "--seed", "1", "--json"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    # the posterior of the rate is near observed/40 (not observed/50, the factory's default n)
    assert abs(summary["mean"][0] - doc["observed"][0] / 40) < 0.6


@pytest.mark.parametrize(
    "model, extra, message",
    [
        ("clinic_rel:clinic", [], "--columns COLUMN"),
        ("clinic_rel:plain_mechanism", ["--columns", "visits"], "clamped_release"),
        ("clinic_rel:fixed_n", ["--columns", "visits"], "n = 50"),
        ("clinic_rel", ["--columns", "visits"], "releasable models"),
    ],
)
def test_refusals_charge_nothing(owner, capsys, model, extra, message):
    tmp, _ = owner
    argv = ["release", "--model", model, "--data", "visits.csv", "--epsilon", "1", "--ledger", "b.db",
            "--dataset", "clinic", "--out", "rel.json", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert Ledger(tmp / "b.db").history("clinic") == []
    assert not (tmp / "rel.json").exists()


def test_a_closed_pipe_stops_quietly():
    """`dpinfer ... | head`: a BrokenPipeError ends the command with status 141, no traceback."""
    import subprocess

    code = (
        "import sys\n"
        "from dpinfer.cli.common import run_command\n"
        "def cmd(args):\n"
        "    raise BrokenPipeError(32, 'Broken pipe')\n"
        "sys.exit(run_command(cmd, None))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 141 and proc.stderr == ""
