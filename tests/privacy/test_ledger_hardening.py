"""Privacy hardening of the ledger and the releasing command lines.

* an unaccounted release is an explicit, loud choice (``--ledger`` or ``--no-ledger``);
* ``Ledger(path)`` never creates a file; creation is explicit;
* budgets are bound to the data by fingerprints (the same data cannot get a second budget);
* old ledger files open and migrate; charges of releases with an insecure RNG are flagged.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import sqlite3
import warnings

import numpy as np
import pytest

from dpinfer.cli import main
from dpinfer.data import record_fingerprint
from dpinfer.errors import InvalidDataError, InvalidPrivacyParameterError, PrivacyError
from dpinfer.privacy import (
    LaplaceEvent,
    Ledger,
    LedgerFileError,
    LedgerNotFoundError,
    PrivacyReport,
    PrivacyWarning,
    data_fingerprint,
    event_to_dict,
    file_fingerprint,
)

# The ledger schema as it was before fingerprints and insecure flags (copied verbatim).
OLD_SCHEMA = """
CREATE TABLE IF NOT EXISTS datasets (
    name TEXT PRIMARY KEY,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    accountant TEXT NOT NULL,
    neighbouring TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS charges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset TEXT NOT NULL REFERENCES datasets(name),
    event TEXT NOT NULL,
    label TEXT NOT NULL,
    epsilon_spent REAL NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('charged', 'released', 'failed')),
    created TEXT NOT NULL,
    pid INTEGER NOT NULL
);
"""


def _one_line_refusal(capsys) -> str:
    captured = capsys.readouterr()
    err = captured.err
    assert "Traceback" not in err and "Traceback" not in captured.out
    assert err.count("\n") == 1 and err.startswith("dpinfer: error: "), err
    return err


# ---- opening and creating ---------------------------------------------------------------------
def test_opening_a_missing_ledger_raises_and_creates_nothing(tmp_path):
    path = tmp_path / "sub" / "typo.db"
    with pytest.raises(LedgerNotFoundError, match="budget init") as exc:
        Ledger(path)
    assert isinstance(exc.value, FileNotFoundError) and isinstance(exc.value, PrivacyError)
    assert "Ledger.create" in str(exc.value) and "\n" not in str(exc.value)
    assert not path.exists() and not path.parent.exists()
    with pytest.raises(LedgerNotFoundError):
        Ledger(tmp_path / "typo.db")
    assert list(tmp_path.iterdir()) == []


def test_creation_is_explicit_and_never_overwrites(tmp_path):
    a = Ledger.create(tmp_path / "a.db")
    a.register("d", 1.0)
    assert (tmp_path / "a.db").is_file()
    b = Ledger(tmp_path / "nested" / "b.db", create=True)
    assert b.datasets() == [] and (tmp_path / "nested" / "b.db").is_file()
    # create on an existing ledger opens it as it is
    assert Ledger.create(tmp_path / "a.db").datasets() == ["d"]
    assert Ledger(tmp_path / "a.db", create=True).budget("d").epsilon == 1.0
    # a file that is not a ledger is left untouched
    other = tmp_path / "notes.txt"
    other.write_text("not a database")
    for open_ in (lambda: Ledger.create(other), lambda: Ledger(other), lambda: Ledger(other, create=True)):
        with pytest.raises(LedgerFileError, match="not a dpinfer ledger"):
            open_()
    assert other.read_text() == "not a database"
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE people (name TEXT)")
    with pytest.raises(LedgerFileError, match="refusing to overwrite"):
        Ledger.create(foreign)
    with sqlite3.connect(foreign) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"people"}
    with pytest.raises(LedgerFileError):
        Ledger(tmp_path)  # a folder


def test_a_ledger_removed_after_opening_is_not_silently_recreated(tmp_path):
    path = tmp_path / "l.db"
    ledger = Ledger.create(path)
    ledger.register("d", 1.0)
    path.unlink()
    with pytest.raises(LedgerNotFoundError):
        ledger.datasets()
    assert not path.exists()


def test_budget_show_and_history_on_a_typo_create_nothing(tmp_path, capsys):
    typo = tmp_path / "typo.db"
    assert main(["budget", "show", "--ledger", str(typo)]) == 2
    assert "no ledger at" in _one_line_refusal(capsys)
    assert main(["budget", "history", "--ledger", str(typo), "--dataset", "d"]) == 2
    assert "budget init" in _one_line_refusal(capsys)
    assert not typo.exists()
    assert list(tmp_path.iterdir()) == []


def test_budget_init_creates_and_refuses_a_foreign_file(tmp_path, capsys):
    path = tmp_path / "new" / "b.db"
    assert main(["budget", "init", "--ledger", str(path), "--dataset", "d", "--epsilon", "1",
                 "--unbound"]) == 0
    assert Ledger(path).datasets() == ["d"]
    # a second data set in the same ledger
    assert main(["budget", "init", "--ledger", str(path), "--dataset", "e", "--epsilon", "1",
                 "--unbound"]) == 0
    assert Ledger(path).datasets() == ["d", "e"]
    capsys.readouterr()
    # invalid parameters: refused before any file is created
    bad = tmp_path / "bad.db"
    assert main(["budget", "init", "--ledger", str(bad), "--dataset", "d", "--epsilon", "-1",
                 "--unbound"]) == 2
    assert not bad.exists()
    capsys.readouterr()
    other = tmp_path / "other.txt"
    other.write_text("keep me")
    assert main(["budget", "init", "--ledger", str(other), "--dataset", "d", "--epsilon", "1",
                 "--unbound"]) == 2
    assert "not a dpinfer ledger" in _one_line_refusal(capsys)
    assert other.read_text() == "keep me"


# ---- fingerprints -----------------------------------------------------------------------------
def test_data_fingerprint_is_pure_and_exact():
    x = np.arange(12, dtype=np.int32).reshape(4, 3)
    fp = data_fingerprint(x)
    assert len(fp) == 64 and fp == data_fingerprint(x) and int(fp, 16) >= 0
    assert x.tolist() == np.arange(12).reshape(4, 3).tolist()  # not modified
    assert data_fingerprint(x.astype(float)) == fp  # the same numbers as ints or floats
    assert data_fingerprint(x.tolist()) == fp
    assert data_fingerprint(np.asfortranarray(x.astype(">f8"))) == fp  # layout and byte order
    assert data_fingerprint(x.reshape(3, 4)) != fp  # shape
    assert data_fingerprint(x[::-1]) != fp  # record order
    y = x.astype(float)
    y[2, 1] += 1e-12
    assert data_fingerprint(y) != fp  # one value
    assert data_fingerprint([0.0, np.nan]) == data_fingerprint([-0.0, -np.nan])
    big = np.array([2**62, 1], dtype=np.int64)
    assert data_fingerprint(big) != data_fingerprint(np.array([2**62 + 1, 1], dtype=np.int64))
    with pytest.raises(InvalidDataError, match="cannot fingerprint"):
        data_fingerprint(np.array(["a", "b"]))


def test_the_same_data_cannot_get_a_second_budget(tmp_path):
    ledger = Ledger.create(tmp_path / "l.db")
    data = np.random.default_rng(0).normal(size=(50, 3))
    b = ledger.register("patients", 1.0, fingerprint=data)
    assert b.fingerprint == data_fingerprint(data) == ledger.budget("patients").fingerprint
    with pytest.raises(InvalidPrivacyParameterError, match="second budget") as exc:
        ledger.register("patients-v2", 5.0, fingerprint=data.copy())
    assert "'patients'" in str(exc.value)
    with pytest.raises(InvalidPrivacyParameterError, match="'patients'"):
        ledger.register("patients-v3", 5.0, fingerprint=data_fingerprint(data).upper())
    assert ledger.datasets() == ["patients"]
    # other data, a hex digest from elsewhere, no fingerprint: all fine
    ledger.register("other", 1.0, fingerprint=data[1:])
    ledger.register("digest", 1.0, fingerprint="ab" * 32)
    ledger.register("plain", 1.0)
    ledger.register("plain-too", 1.0)  # several data sets without fingerprint
    assert ledger.budget("plain").fingerprint is None
    with pytest.raises(InvalidPrivacyParameterError, match="second budget"):
        ledger.register("digest-again", 1.0, fingerprint="AB" * 32)
    with pytest.raises(InvalidPrivacyParameterError, match="hex digest"):
        ledger.register("bad", 1.0, fingerprint="my data")
    # raw bytes are hashed like a file's bytes
    f = tmp_path / "records.csv"
    f.write_bytes(b"a,b\n1,2\n")
    ledger.register("file", 1.0, fingerprint=f.read_bytes())
    assert ledger.budget("file").fingerprint == file_fingerprint(f)


def test_cli_budget_init_data_binds_the_file(tmp_path, capsys):
    path = str(tmp_path / "b.db")
    data = tmp_path / "records.csv"
    data.write_text("a,b\n1,2\n3,4\n")
    init = ["budget", "init", "--ledger", path, "--epsilon", "1", "--data"]
    assert main([*init, str(data), "--dataset", "r"]) == 0
    assert "bound to the records of" in capsys.readouterr().out
    assert Ledger(path).budget("r").fingerprint == record_fingerprint(data)
    copy = tmp_path / "copy.csv"
    copy.write_bytes(b"A,B\r\n3,4\r\n1,2")  # the same records in other bytes (issue 35 item 3)
    assert main([*init, str(copy), "--dataset", "r2"]) == 2  # a refusal
    err = capsys.readouterr().err
    assert "'r'" in err and "second budget" in err and err.count("\n") == 1
    assert Ledger(path).datasets() == ["r"]
    assert main(["budget", "show", "--ledger", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["fingerprint"] == record_fingerprint(data)
    # a missing data file: nothing registered, no ledger created
    fresh = tmp_path / "fresh.db"
    assert main(["budget", "init", "--ledger", str(fresh), "--dataset", "x", "--epsilon", "1",
                 "--data", str(tmp_path / "missing.csv")]) == 2
    assert "not found" in capsys.readouterr().err and not fresh.exists()


# ---- old files and insecure charges -----------------------------------------------------------
def _old_ledger(path):
    with sqlite3.connect(path) as conn:
        conn.executescript(OLD_SCHEMA)
        conn.execute(
            "INSERT INTO datasets VALUES ('old', 1.0, 0.0, 'pure', 'replace-one', '2025-01-01T00:00:00')"
        )
        conn.execute(
            "INSERT INTO charges (dataset, event, label, epsilon_spent, status, created, pid) "
            "VALUES ('old', ?, 'before', 0.25, 'released', '2025-01-01T00:00:00', 1)",
            (json.dumps(event_to_dict(LaplaceEvent(0.25))),),
        )
    conn.close()


def test_an_old_ledger_file_opens_and_migrates(tmp_path):
    path = tmp_path / "old.db"
    _old_ledger(path)
    ledger = Ledger(path)
    with sqlite3.connect(path) as conn:
        cols = {t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")} for t in ("datasets", "charges")}
    conn.close()
    assert "fingerprint" in cols["datasets"] and "insecure" in cols["charges"]
    assert ledger.integrity_check()
    assert ledger.budget("old").fingerprint is None
    assert ledger.spent("old") == pytest.approx(0.25)
    [h] = ledger.history("old")
    assert h["label"] == "before" and h["insecure"] is False and h["status"] == "released"
    with ledger.charge("old", LaplaceEvent(0.5), insecure=True):
        pass
    assert [h["insecure"] for h in ledger.history("old")] == [False, True]
    ledger.register("new", 1.0, fingerprint=[1.0, 2.0])
    with pytest.raises(InvalidPrivacyParameterError, match="second budget"):
        ledger.register("newer", 1.0, fingerprint=[1, 2])
    assert Ledger(path).spent("old") == pytest.approx(0.75)  # reopening a migrated file


def _open_and_charge(path, barrier, results):
    barrier.wait()
    try:
        with Ledger(path).charge("old", LaplaceEvent(0.01)):
            pass
        results.put("ok")
    except Exception as exc:  # pragma: no cover - reported below
        results.put(repr(exc))


def test_concurrent_first_opens_of_an_old_ledger_migrate_once(tmp_path):
    path = tmp_path / "old.db"
    _old_ledger(path)
    ctx = mp.get_context("fork")
    barrier, results = ctx.Barrier(6), ctx.Queue()
    procs = [ctx.Process(target=_open_and_charge, args=(path, barrier, results)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert sorted(results.get(timeout=5) for _ in procs) == ["ok"] * 6
    ledger = Ledger(path)
    assert len(ledger.history("old")) == 7 and ledger.integrity_check()


def test_insecure_charges_are_flagged_in_history_and_the_cli(tmp_path, capsys):
    path = tmp_path / "l.db"
    ledger = Ledger.create(path)
    ledger.register("d", 2.0, accountant="pure")
    with ledger.charge("d", LaplaceEvent(0.1), label="real") as c:
        assert c.insecure is False
    with ledger.charge("d", LaplaceEvent(0.1), label="test run", insecure=True) as c:
        assert c.insecure is True
    assert [h["insecure"] for h in ledger.history("d")] == [False, True]
    assert ledger.spent("d") == pytest.approx(0.2)  # charged all the same
    assert main(["budget", "history", "--ledger", str(path), "--dataset", "d"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert "INSECURE RNG" not in lines[0] and "real" in lines[0]
    assert "INSECURE RNG" in lines[1] and "test run" in lines[1]
    assert main(["budget", "history", "--ledger", str(path), "--dataset", "d", "--json"]) == 0
    assert [h["insecure"] for h in json.loads(capsys.readouterr().out)] == [False, True]


# ---- the report -------------------------------------------------------------------------------
def test_report_accounted_flag():
    rep = PrivacyReport.from_event(LaplaceEvent(1.0), 0.0, "pure", 1.0, mechanism="laplace")
    assert rep.accounted and "NOT ACCOUNTED" not in rep.summary()
    d = rep.to_dict()
    assert d["accounted"] is True
    del d["accounted"]  # a report written before the flag existed
    assert PrivacyReport.from_dict(d).accounted is True
    un = PrivacyReport.from_event(LaplaceEvent(1.0), 0.0, "pure", 1.0, accounted=False)
    assert "NOT ACCOUNTED: released without a ledger" in un.summary()
    assert PrivacyReport.from_dict(json.loads(un.to_json())) == un


# ---- releasing command lines ------------------------------------------------------------------
def _csv(path, n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ np.array([2.0, -1.0]))))).astype(int)
    path.write_text("a,b,label\n" + "".join(f"{a:.5f},{b:.5f},{t}\n" for (a, b), t in zip(X, y, strict=True)))
    return path


def _dpvi_argv(data, out, *extra):
    return ["dpvi", "--data", str(data), "--target", "label", "--epsilon", "1", "--delta", "1e-5",
            "--steps", "20", "--sampling-rate", "0.2", "--no-progress", "--out", str(out), *extra]


@pytest.fixture(scope="module")
def covid_sims(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sims")
    sims = tmp / "sims.npz"
    assert main(["simulate", "covid", "--draws", "400", "--seed", "3", "--out", str(sims)]) == 0
    return sims


def _covid_csv(path):
    rows = [1, 7, 10, 24, 38, 82, 128, 188, 265, 321, 382, 503, 614, 804, 959, 1135, 1413, 1705]
    path.write_text("day,cases\n" + "".join(f"{i},{v}\n" for i, v in enumerate(rows)))
    return path


def _abcdp_argv(data, sims, out, *extra):
    return ["abcdp", "--observed", str(data), "--columns", "cases", "--simulations", str(sims), "-c", "2",
            "--epsilon", "40", "--epsilon-abc", "0.5", "--distance", "exact", "--no-progress",
            "--out", str(out), *extra]


@pytest.fixture(params=["dpvi", "abcdp"])
def release_cmd(request, tmp_path, covid_sims):
    """``(argv(out, *extra), data file)`` of a releasing command."""
    if request.param == "dpvi":
        data = _csv(tmp_path / "records.csv")
        return (lambda out, *extra: _dpvi_argv(data, out, *extra)), data
    data = _covid_csv(tmp_path / "records.csv")
    return (lambda out, *extra: _abcdp_argv(data, covid_sims, out, *extra)), data


def test_release_with_dataset_but_no_ledger_is_refused(tmp_path, capsys, release_cmd):
    argv, _ = release_cmd
    ledger = tmp_path / "l.db"
    Ledger.create(ledger).register("records", 50.0, 1e-5, "pld")
    out = tmp_path / "out.json"
    assert main(argv(out, "--dataset", "records")) == 2
    assert "--ledger" in _one_line_refusal(capsys)
    assert not out.exists() and Ledger(ledger).history("records") == []


def test_release_with_neither_ledger_nor_no_ledger_is_refused(tmp_path, capsys, release_cmd):
    argv, _ = release_cmd
    out = tmp_path / "out.json"
    assert main(argv(out)) == 2
    err = _one_line_refusal(capsys)
    assert "--ledger PATH" in err and "--no-ledger" in err
    assert not out.exists()
    assert main(argv(out, "--ledger", str(tmp_path / "l.db"), "--no-ledger")) == 2
    assert "contradict" in _one_line_refusal(capsys)
    assert main(argv(out, "--ledger", str(tmp_path / "typo.db"), "--dataset", "records")) == 2
    assert "no ledger at" in _one_line_refusal(capsys)
    assert not out.exists() and not (tmp_path / "typo.db").exists()


def test_release_with_no_ledger_works_and_says_so_once(tmp_path, capsys, release_cmd):
    argv, _ = release_cmd
    out = tmp_path / "out.json"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(argv(out, "--no-ledger")) == 0
    assert not [w for w in caught if issubclass(w.category, PrivacyWarning)]  # a notice instead
    captured = capsys.readouterr()
    assert captured.err.count("notice") == 1 and "WITHOUT a ledger" in captured.err
    assert "PrivacyWarning" not in captured.err and "Traceback" not in captured.err
    assert [ln for ln in captured.err.splitlines() if "ledger" in ln.lower()] == [
        ln for ln in captured.err.splitlines() if ln.startswith("dpinfer: notice:")
    ]
    assert "NOT ACCOUNTED" in captured.out
    assert json.loads(out.read_text())["privacy"]["accounted"] is False


def test_release_refused_on_a_fingerprint_mismatch(tmp_path, capsys, release_cmd):
    argv, data = release_cmd
    ledger = tmp_path / "l.db"
    registered = tmp_path / "registered.csv"
    lines = data.read_bytes().splitlines(keepends=True)
    registered.write_bytes(b"".join(lines[:-1]))  # one record fewer: other records
    assert main(["budget", "init", "--ledger", str(ledger), "--dataset", "records", "--epsilon", "50",
                 "--delta", "1e-5", "--accountant", "pld", "--data", str(registered)]) == 0
    capsys.readouterr()
    out = tmp_path / "out.json"
    assert main(argv(out, "--ledger", str(ledger), "--dataset", "records")) == 2
    err = _one_line_refusal(capsys)
    assert "not the data registered as 'records'" in err and "nothing was charged" in err.lower()
    assert not out.exists() and Ledger(ledger).history("records") == []
    # the same records in other bytes (CRLF line ends) are the registered data set: charged
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes(data.read_bytes().replace(b"\n", b"\r\n"))
    fresh = tmp_path / "fresh.db"
    assert main(["budget", "init", "--ledger", str(fresh), "--dataset", "records", "--epsilon", "50",
                 "--delta", "1e-5", "--accountant", "pld", "--data", str(crlf)]) == 0
    assert main(argv(out, "--ledger", str(fresh), "--dataset", "records")) == 0
    assert out.exists() and [h["status"] for h in Ledger(fresh).history("records")] == ["released"]
    assert json.loads(out.read_text())["privacy"]["accounted"] is True
    assert "notice" not in capsys.readouterr().err


def test_a_file_bound_to_one_budget_is_refused_against_another(tmp_path, capsys, release_cmd):
    """Finding 6 end to end: `a` registered with --data x.csv and `b` --unbound; releasing x.csv
    against `b` was accepted (charged to `b`: a second budget for the file). Now exit 2, nothing
    charged or written; and a file first charged to an unbound budget cannot go to another one."""
    argv, data = release_cmd
    ledger = tmp_path / "l.db"
    init = ["budget", "init", "--ledger", str(ledger), "--epsilon", "50", "--delta", "1e-5"]
    assert main([*init, "--dataset", "a", "--data", str(data)]) == 0
    assert main([*init, "--dataset", "b", "--unbound"]) == 0
    capsys.readouterr()
    out = tmp_path / "out.json"
    assert main(argv(out, "--ledger", str(ledger), "--dataset", "b")) == 2
    assert "registered as dataset 'a'" in _one_line_refusal(capsys)
    assert not out.exists() and Ledger(ledger).history("b") == [] and Ledger(ledger).history("a") == []
    # two unbound budgets: the file goes to the first one charged, and only to it
    fresh = tmp_path / "fresh.db"
    init[init.index(str(ledger))] = str(fresh)
    assert main([*init, "--dataset", "b", "--unbound"]) == 0
    assert main([*init, "--dataset", "c", "--unbound"]) == 0
    assert main(argv(out, "--ledger", str(fresh), "--dataset", "b")) == 0
    capsys.readouterr()
    out.unlink()
    assert main(argv(out, "--ledger", str(fresh), "--dataset", "c")) == 2
    assert "already charged to dataset 'b'" in _one_line_refusal(capsys)
    assert not out.exists() and Ledger(fresh).history("c") == []
    assert [h["fingerprint"] for h in Ledger(fresh).history("b")] == [record_fingerprint(data)]


def test_budget_init_needs_data_or_unbound(tmp_path, capsys):
    path = tmp_path / "l.db"
    assert main(["budget", "init", "--ledger", str(path), "--dataset", "d", "--epsilon", "1"]) == 2
    err = _one_line_refusal(capsys)
    assert "--data FILE" in err and "--unbound" in err and not path.exists()


def test_dpvi_non_private_needs_no_ledger_and_refuses_one(tmp_path, capsys):
    data = _csv(tmp_path / "records.csv")
    out = tmp_path / "fit.json"
    argv = ["dpvi", "--data", str(data), "--target", "label", "--non-private", "--steps", "20",
            "--no-progress", "--out", str(out)]
    assert main(argv) == 2  # issue 23: the non-private fit of confidential data needs --no-ledger
    assert "--no-ledger" in _one_line_refusal(capsys) and not out.exists()
    assert main([*argv, "--no-ledger"]) == 0
    assert "NON-PRIVATE" in capsys.readouterr().err
    out.unlink()
    assert main([*argv, "--ledger", str(tmp_path / "l.db")]) == 2
    assert "not releases" in _one_line_refusal(capsys)
    assert not out.exists()
