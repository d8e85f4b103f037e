"""``dpinfer release --model gaussian-mean`` needs explicit clamp bounds (issue 23, part of 8).

The model's default clamp [-2, 2] is for standardised data; on raw body-mass indices (~25 kg/m²)
it clamped every record and the release spent the budget on 1.999. The fraction of records
clamped is confidential, so the refusal depends on the command line only, never on the data.
"""

from __future__ import annotations

import json

import numpy as np

from dpinfer.cli import main
from dpinfer.privacy import Ledger


def test_gaussian_mean_release_without_clamp_bounds_is_refused_before_any_charge(tmp_path, capsys):
    bmi = np.random.default_rng(0).normal(26.0, 4.0, 60)
    data = tmp_path / "bmi.csv"
    data.write_text("x\n" + "\n".join(f"{v:.2f}" for v in bmi) + "\n")
    ledger = tmp_path / "b.db"
    Ledger.create(ledger).register("bmi", 2.0)
    out = tmp_path / "r.json"
    base = ["release", "--model", "gaussian-mean", "--data", str(data), "--epsilon", "1",
            "--ledger", str(ledger), "--dataset", "bmi", "--out", str(out)]
    assert main(base) == 2
    assert "clamp bounds in the data's units" in capsys.readouterr().err
    assert Ledger(ledger).history("bmi") == [] and not out.exists()
    # with bounds in the data's units the release goes ahead (and is not a clamped bound)
    assert main([*base, "--model-args", '{"clamp": [15, 45]}']) == 0
    observed = json.loads(out.read_text())["observed"][0]
    assert 15 < observed < 45 and len(Ledger(ledger).history("bmi")) == 1
