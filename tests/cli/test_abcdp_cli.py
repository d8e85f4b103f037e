"""`dpinfer simulate` / `dpinfer abcdp` (the two-party workflow) and the demo section."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpinfer.cli import main
from dpinfer.privacy import Ledger


@pytest.fixture()
def covid_files(tmp_path):
    sims = tmp_path / "sims.npz"
    assert main(["simulate", "covid", "--draws", "3000", "--seed", "3", "--out", str(sims)]) == 0
    data = tmp_path / "data.csv"
    rows = [1, 7, 10, 24, 38, 82, 128, 188, 265, 321, 382, 503, 614, 804, 959, 1135, 1413, 1705]
    data.write_text("day,cases\n" + "\n".join(f"{i},{v}" for i, v in enumerate(rows)) + "\n")
    return tmp_path, sims, data


def test_simulate_file_contents(covid_files):
    _, sims, _ = covid_files
    with np.load(sims) as f:
        assert f["theta"].shape == (3000, 4) and f["sims"].shape == (3000, 18, 1)
        meta = json.loads(str(f["meta"]))
    assert meta["model"] == "covid" and meta["bandwidth_median_heuristic"] > 0
    # reproducible from the seed
    again = sims.with_name("again.npz")
    main(["simulate", "covid", "--draws", "3000", "--seed", "3", "--out", str(again)])
    with np.load(sims) as a, np.load(again) as b:
        np.testing.assert_array_equal(a["theta"], b["theta"])
        # the streamed file holds exactly the stream of SimulatedDraws(seed, batch_size)
        from dpinfer.models import CovidPolynomial
        from dpinfer.release import SimulatedDraws

        m = CovidPolynomial()
        th, sm = SimulatedDraws(m.prior_sample, m.simulate, 3000, seed=3, batch_size=256).materialize()
        np.testing.assert_array_equal(a["theta"], th)
        np.testing.assert_array_equal(a["sims"], sm)


def test_abcdp_command_charges_ledger_and_writes_release(covid_files):
    tmp, sims, data = covid_files
    ledger = tmp / "budget.db"
    assert main(["budget", "init", "--ledger", str(ledger), "--dataset", "nl", "--epsilon", "50",
                 "--data", str(data)]) == 0
    out = tmp / "release.json"
    argv = [
        "abcdp", "--observed", str(data), "--columns", "cases", "--simulations", str(sims), "-c", "5",
        "--epsilon", "44", "--epsilon-abc", "0.05", "--distance", "exact", "--ledger", str(ledger),
        "--dataset", "nl", "--out", str(out), "--no-progress",
    ]
    assert main(argv) == 0
    rel = json.loads(out.read_text())
    assert rel["c"] == 5 and len(rel["accepted"]) == 5 and rel["privacy"]["epsilon"] == 44
    assert rel["privacy"]["accounted"] is True
    assert rel["privacy"]["events"][0]["type"] == "SparseVectorEvent"
    assert rel["b"] == pytest.approx(6 * (2 / 18) / 44)
    assert "observed" not in json.dumps(rel).lower().replace("observed_", "")
    assert Ledger(ledger).spent("nl") == pytest.approx(44)
    # a second release would exceed the budget: refused, nothing written
    out2 = tmp / "release2.json"
    argv[argv.index(str(out))] = str(out2)
    assert main(argv) == 1
    assert not out2.exists() and len(Ledger(ledger).history("nl")) == 1


BAD = ["nan", "dims", "c0", "c_big", "neg_eps_abc", "bandwidth", "sims_shape", "sims_keys"]


@pytest.mark.parametrize("bad", BAD)
def test_abcdp_command_bad_input(covid_files, bad, capsys):
    tmp, sims, data = covid_files
    ledger = tmp / "budget.db"
    main(["budget", "init", "--ledger", str(ledger), "--dataset", "nl", "--epsilon", "50", "--unbound"])
    argv = {
        "--observed": str(data), "--columns": "cases", "--simulations": str(sims), "-c": "5",
        "--epsilon": "1", "--epsilon-abc": "0.05", "--ledger": str(ledger), "--dataset": "nl",
        "--out": str(tmp / "r.json"),
    }
    if bad == "nan":
        data.write_text(data.read_text().replace("\n3,24\n", "\n3,nan\n"))
    elif bad == "dims":
        argv["--columns"] = "day,cases"
    elif bad == "c0":
        argv["-c"] = "0"
    elif bad == "c_big":
        argv["-c"] = "3001"
    elif bad == "neg_eps_abc":
        argv["--epsilon-abc"] = "-1"
    elif bad == "bandwidth":
        argv["--bandwidth"] = "0"
    elif bad == "sims_shape":
        with np.load(sims) as f:
            np.savez(tmp / "bad.npz", theta=f["theta"], sims=f["sims"][:, :, 0])
        argv["--simulations"] = str(tmp / "bad.npz")
    elif bad == "sims_keys":
        np.savez(tmp / "bad.npz", x=np.zeros(3))
        argv["--simulations"] = str(tmp / "bad.npz")
    flat = ["abcdp", "--no-progress"] + [x for kv in argv.items() for x in kv]
    assert main(flat) == 2
    err = capsys.readouterr().err
    assert "error" in err and len(err) > 40
    assert Ledger(ledger).history("nl") == []
    assert not (tmp / "r.json").exists()


def test_tuberculosis_workflow(tmp_path):
    sims = tmp_path / "tb.npz"
    assert main(["simulate", "tuberculosis", "--draws", "20", "--n-datasets", "5", "--seed", "1",
                 "--out", str(sims)]) == 0
    from dpinfer.models.shipped.tuberculosis import SUMMARY_NAMES, Tuberculosis

    obs = Tuberculosis(n_datasets=5).observed(seed=2)
    data = tmp_path / "tb.csv"
    np.savetxt(data, obs, delimiter=",", header=",".join(SUMMARY_NAMES), comments="")
    out = tmp_path / "rel.json"
    assert main(["abcdp", "--observed", str(data), "--simulations", str(sims), "-c", "2", "--epsilon", "1",
                 "--epsilon-abc", "150", "--out", str(out), "--no-progress", "--no-ledger"]) == 0
    rel = json.loads(out.read_text())
    assert rel["privacy"]["sensitivity"] == pytest.approx(200 / 5)
    assert rel["privacy"]["accounted"] is False  # released with --no-ledger
    assert rel["param_names"] == ["R1", "t1", "R2", "burden"]


def test_demo_section_quick(tmp_path):
    from dpinfer.demo import DemoContext
    from dpinfer.demo.abcdp import section_abcdp
    from dpinfer.report import DemoReport

    ledger = Ledger(tmp_path / "l.db", create=True)
    ctx = DemoContext(tmp_path, ledger, 1, True, DemoReport(tmp_path))
    section_abcdp(ctx)
    assert (tmp_path / "abcdp_covid.png").exists()
    assert ledger.spent("covid-nl") == pytest.approx(44)
    assert any(r.section == "ABCDP" for r in ctx.report.rows)


def test_simulations_are_memory_mapped_when_uncompressed(covid_files):
    from dpinfer.cli.abcdp import load_simulations

    tmp, sims, _ = covid_files
    theta, data, meta = load_simulations(sims)
    assert isinstance(data, np.memmap) and meta["model"] == "covid"
    with np.load(sims) as f:
        np.testing.assert_array_equal(np.asarray(data), f["sims"])
        np.savez_compressed(tmp / "c.npz", theta=f["theta"], sims=f["sims"])
    _, data_c, _ = load_simulations(tmp / "c.npz")
    assert not isinstance(data_c, np.memmap)
    np.testing.assert_array_equal(data_c, np.asarray(data))


# ---- the observed CSV: wrong columns, blank lines and missing values say what to do -------------
def test_two_column_csv_suggests_columns(covid_files, capsys):
    tmp, sims, data = covid_files
    argv = ["abcdp", "--observed", str(data), "--simulations", str(sims), "-c", "2", "--epsilon", "10",
            "--epsilon-abc", "0.5", "--no-ledger", "--out", str(tmp / "r.json")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--columns cases" in err and "data.csv" in err and "Simulate" not in err
    assert main([*argv, "--columns", "cases"]) == 0


@pytest.mark.parametrize(
    "body,match",
    [("day,cases\n0,1\n\n2,10\n", "line 3 is blank"),
     ("day,cases\n0,1\n1,\n2,10\n", "line 3, column 'cases': missing value"),
     ("day,cases\n0,1\n1,NA\n", "line 3, column 'cases': missing value"),
     ("day,cases\n0,1\n1,x\n", "line 3, column 'cases': not a number"),
     ("day,cases\n0,1\n1,2,3\n", "line 3 has 3 values")],
)
def test_observed_csv_errors_name_file_line_and_problem(covid_files, capsys, body, match):
    from dpinfer.cli.abcdp import load_observed
    from dpinfer.errors import InvalidDataError

    tmp, _, _ = covid_files
    bad = tmp / "bad.csv"
    bad.write_text(body)
    with pytest.raises(InvalidDataError, match=match) as exc:
        load_observed(bad, "cases")
    assert "bad.csv" in str(exc.value)


def test_trailing_newlines_are_not_records(tmp_path):
    from dpinfer.cli.abcdp import load_observed

    f = tmp_path / "ok.csv"
    f.write_text("x\n1\n2\n\n")
    assert load_observed(f).shape == (2, 1)


def test_data_path_names_the_shipped_file(capsys):
    assert main(["data", "list"]) == 0
    assert "covid19_netherlands_cumulative_abcdp.csv" in capsys.readouterr().out.split()
    assert main(["data", "path", "covid19_netherlands_cumulative_abcdp.csv"]) == 0
    from pathlib import Path

    path = Path(capsys.readouterr().out.strip())
    assert path.is_file() and path.read_text().startswith("day_index,cumulative_confirmed_cases")
    assert main(["data", "path", "nope.csv"]) == 2
    assert "data list" in capsys.readouterr().err
