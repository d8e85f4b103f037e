"""Who charged, and only the owner changes a budget (issue #35, item 4), on SQLite and PostgreSQL.

Each test of ``target`` runs against a fresh SQLite file and a fresh PostgreSQL database (the
half skips where no server can be started, see tests/pg_server.py). The PostgreSQL tests create
analyst roles, grant them what ``dpinfer budget grant`` grants, and try what an analyst should not
be able to do: raise the budget with raw SQL (the README's old grants allowed it), insert a
charge, edit or delete history, and call the charge function with arbitrary arguments.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from dpinfer.cli import main
from dpinfer.errors import BudgetExceededError, InvalidPrivacyParameterError
from dpinfer.privacy import LaplaceEvent, Ledger
from dpinfer.privacy.context import ReleaseContext
from dpinfer.privacy.ledger import BudgetChangeError, BudgetOwnerError, BudgetRetiredError
from dpinfer.privacy.ledger_store import os_user


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "ledger.db")
    return request.getfixturevalue("pg_server").new_database()


def _me(target: str) -> str:
    return "dpinfer" if target.startswith("postgresql://") else os_user()


def _raw(target: str, statement: str, pg_server=None, user: str | None = None) -> None:
    """Run ``statement`` directly against the ledger (as its owner, or as ``user`` on PostgreSQL)."""
    if target.startswith("postgresql://"):
        import psycopg

        db = target.rsplit("/", 1)[1]
        with psycopg.connect(pg_server.url(db, user=user or "dpinfer"), autocommit=True) as conn:
            conn.execute(statement)
    else:
        with sqlite3.connect(target) as conn:
            conn.execute(statement)


def _refused(target: str):
    if target.startswith("postgresql://"):
        import psycopg

        return psycopg.Error
    return sqlite3.IntegrityError


# ---- who charged -----------------------------------------------------------------------------
def test_every_charge_records_who_and_why(target, capsys):
    ledger = Ledger.create(target)
    budget = ledger.register("d", 1.0, accountant="pure", reason="survey 2024 wave 1")
    assert budget.owner == _me(target)
    with ledger.charge("d", LaplaceEvent(0.1), label="plain"):
        pass
    with ledger.charge("d", LaplaceEvent(0.1), label="service", charged_by="alice", purpose="table 3"):
        pass
    ctx = ReleaseContext(ledger, "d", purpose="figure 2", charged_by="bob")
    ctx.release(LaplaceEvent(0.1), lambda rng: None, what="test")
    with ledger.acting(purpose="bound purpose").charge("d", LaplaceEvent(0.1), label="acting"):
        pass
    rows = [(h["label"], h["charged_by"], h["authenticated_as"], h["purpose"]) for h in ledger.history("d")]
    me = _me(target)
    assert rows == [
        ("plain", me, me, ""),
        ("service", "alice", me, "table 3"),
        ("test", "bob", me, "figure 2"),
        ("acting", me, me, "bound purpose"),
    ]
    capsys.readouterr()
    assert main(["budget", "history", "--ledger", target, "--dataset", "d"]) == 0
    out = capsys.readouterr().out
    assert f"by alice (as {me})" in out and "purpose: table 3" in out and "survey 2024 wave 1" in out
    with pytest.raises(InvalidPrivacyParameterError, match="purpose"):
        ledger.charge("d", LaplaceEvent(0.1), purpose="a\x00b").__enter__()
    assert len(ledger.history("d")) == 4  # a bad purpose charges nothing


# ---- owner-only changes, history -------------------------------------------------------------
def test_the_owner_raises_and_retires_and_every_change_is_history(target, capsys):
    ledger = Ledger.create(target)
    ledger.register("d", 1.0, accountant="pure", reason="initial")
    with ledger.charge("d", LaplaceEvent(0.6)):
        pass
    with pytest.raises(BudgetChangeError, match="not above"):
        ledger.raise_budget("d", epsilon=0.8, reason="lower it")
    with pytest.raises(InvalidPrivacyParameterError, match="reason"):
        ledger.raise_budget("d", epsilon=2.0, reason=" ")
    assert ledger.raise_budget("d", epsilon=2.0, reason="wave 2 approved").epsilon == 2.0
    assert main(["budget", "raise", "--ledger", target, "--dataset", "d", "--epsilon", "3",
                 "--reason", "board decision 7"]) == 0
    assert main(["budget", "retire", "--ledger", target, "--dataset", "d", "--reason", "study closed"]) == 0
    with pytest.raises(BudgetRetiredError, match="retired"):
        ledger.charge("d", LaplaceEvent(0.1)).__enter__()
    with pytest.raises(BudgetChangeError, match="retired"):
        ledger.raise_budget("d", epsilon=5.0, reason="reopen")
    assert ledger.budget("d").retired and len(ledger.history("d")) == 1
    history = ledger.budget_history("d")
    me = _me(target)
    rows = [(h["action"], h["epsilon"], h["previous"], h["reason"], h["authenticated_as"]) for h in history]
    assert rows == [
        ("register", 1.0, None, "initial", me),
        ("raise", 2.0, 1.0, "wave 2 approved", me),
        ("raise", 3.0, 2.0, "board decision 7", me),
        ("retire", 3.0, 3.0, "study closed", me),
    ]
    assert all(h["created"].endswith("+00:00") for h in history)
    capsys.readouterr()
    assert main(["budget", "history", "--ledger", target, "--dataset", "d", "--json", "--changes"]) == 0
    assert [h["action"] for h in json.loads(capsys.readouterr().out)][-1] == "retire"
    assert main(["budget", "history", "--ledger", target, "--dataset", "d", "--changes"]) == 0
    out = capsys.readouterr().out
    assert "RETIRED" in out and "board decision 7" in out and "eps_after" not in out


def test_the_database_refuses_what_no_owner_may_do(target, request):
    """Inside the database (triggers), not only in dpinfer: raw SQL as the owner still cannot lower
    a budget below its spend, un-retire it, edit or delete a charge or the history."""
    pg = request.getfixturevalue("pg_server") if target.startswith("postgresql://") else None
    ledger = Ledger.create(target)
    ledger.register("d", 1.0, accountant="pure")
    ledger.register("e", 1.0, accountant="pure")
    with ledger.charge("d", LaplaceEvent(0.6)):
        pass
    ledger.retire("e", reason="closed")
    schema = "dpinfer." if pg else ""
    for statement in (
        f"UPDATE {schema}datasets SET epsilon = 0.5 WHERE name = 'd'",
        f"UPDATE {schema}datasets SET retired = 0 WHERE name = 'e'",
        f"UPDATE {schema}datasets SET delta = 0.5 WHERE name = 'd'",
        f"DELETE FROM {schema}datasets WHERE name = 'e'",
        f"UPDATE {schema}charges SET epsilon_spent = 0.1",
        f"DELETE FROM {schema}charges",
        f"UPDATE {schema}budget_events SET reason = 'forged'",
        f"DELETE FROM {schema}budget_events",
    ):
        with pytest.raises(_refused(target), match="dpinfer:"):
            _raw(target, statement, pg)
    # a raw raise by the owner is allowed, and recorded although no dpinfer code wrote it
    _raw(target, f"UPDATE {schema}datasets SET epsilon = 4 WHERE name = 'd'", pg)
    last = ledger.budget_history("d")[-1]
    assert (last["action"], last["epsilon"], last["previous"]) == ("raise", 4.0, 1.0)
    assert ledger.spent("d") == pytest.approx(0.6) and ledger.budget("e").retired


def test_a_sqlite_budget_refuses_another_os_user(tmp_path, monkeypatch):
    """The library refuses another OS user's raise or retire (the file's permissions are the real
    protection: whoever can write the file can also drop the triggers)."""
    target = str(tmp_path / "ledger.db")
    Ledger.create(target).register("d", 1.0, accountant="pure")
    monkeypatch.setattr("dpinfer.privacy.ledger_sqlite.os_user", lambda: "mallory")
    ledger = Ledger(target)
    with pytest.raises(BudgetOwnerError, match="only its owner"):
        ledger.raise_budget("d", epsilon=100.0, reason="mine now")
    with pytest.raises(BudgetOwnerError):
        ledger.retire("d", reason="mine now")
    with ledger.charge("d", LaplaceEvent(0.1)):  # charging is not an owner's act
        pass
    assert ledger.budget("d").epsilon == 1.0 and ledger.history("d")[0]["authenticated_as"] == "mallory"


def test_an_older_sqlite_ledger_gains_identity_and_history(tmp_path):
    target = str(tmp_path / "old.db")
    conn = sqlite3.connect(target)
    conn.executescript(
        """CREATE TABLE datasets (name TEXT PRIMARY KEY, epsilon REAL NOT NULL, delta REAL NOT NULL,
        accountant TEXT NOT NULL, neighbouring TEXT NOT NULL, created TEXT NOT NULL, fingerprint TEXT);
        CREATE TABLE charges (id INTEGER PRIMARY KEY AUTOINCREMENT, dataset TEXT NOT NULL,
        event TEXT NOT NULL, label TEXT NOT NULL, epsilon_spent REAL NOT NULL, status TEXT NOT NULL,
        created TEXT NOT NULL,
        pid INTEGER NOT NULL, insecure INTEGER NOT NULL DEFAULT 0, host TEXT, fingerprint TEXT);
        INSERT INTO datasets VALUES ('d', 1.0, 0.0, 'pure', 'replace-one', '2024-01-01T00:00:00+00:00', NULL);
        INSERT INTO charges (dataset, event, label, epsilon_spent, status, created, pid)
        VALUES ('d', '{"type": "LaplaceEvent", "epsilon": 0.25, "neighbouring": "replace-one"}', 'old', 0.25,
        'released', '2024-01-02T00:00:00+00:00', 1);"""
    )
    conn.commit()
    conn.close()
    ledger = Ledger(target)
    [entry] = ledger.budget_history("d")
    assert entry["action"] == "register" and entry["created"] == "2024-01-01T00:00:00+00:00"
    assert ledger.budget("d").owner is None and ledger.history("d")[0]["authenticated_as"] is None
    ledger.raise_budget("d", epsilon=2.0, reason="owner unrecorded: whoever holds the file")
    with ledger.charge("d", LaplaceEvent(0.25), purpose="after the upgrade"):
        pass
    assert ledger.spent("d") == pytest.approx(0.5)
    assert ledger.history("d")[1]["purpose"] == "after the upgrade"


# ---- PostgreSQL: analysts charge, only the owner changes a budget --------------------------------
def _analyst(pg_server, url: str, name: str, grant: str = "dpinfer") -> str:
    """A new login role; ``grant``: "dpinfer" (``dpinfer budget grant``), "old" (the README's former
    table grants) or "none". Its URL for the ledger's database."""
    db = url.rsplit("/", 1)[1]
    role = f"{name}_{db}"
    pg_server.sql("postgres", f"CREATE ROLE {role} LOGIN")
    if grant == "dpinfer":
        assert main(["budget", "grant", "--ledger", url, "--analyst", role]) == 0
    elif grant == "old":
        for g in ("USAGE ON SCHEMA dpinfer", "SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA dpinfer",
                  "USAGE ON ALL SEQUENCES IN SCHEMA dpinfer"):
            pg_server.sql(db, f"GRANT {g} TO {role}")
    return pg_server.url(db, user=role)


def _sql_as(pg_server, url: str, statement: str, params=()):
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


def test_an_analyst_charges_but_cannot_change_the_budget(pg_server):
    import psycopg

    url = pg_server.new_database()
    owner = Ledger.create(url)
    owner.register("d", 1.0, accountant="pure", reason="approved by the board")
    analyst_url = _analyst(pg_server, url, "ann")
    role = analyst_url.split("//")[1].split("@")[0]
    analyst = Ledger(analyst_url)
    with analyst.charge("d", LaplaceEvent(0.25), charged_by="ann@service", purpose="table 1") as c:
        assert c.id > 0
    [h] = owner.history("d")
    assert (h["authenticated_as"], h["charged_by"], h["purpose"], h["status"]) == (
        role, "ann@service", "table 1", "released"
    )
    assert analyst.spent("d") == pytest.approx(0.25)
    # the finding of issue #35: an analyst's UPDATE of the budget, and direct writes, all fail
    for statement in (
        "UPDATE dpinfer.datasets SET epsilon = 100 WHERE name = 'd'",
        "INSERT INTO dpinfer.charges (dataset, event, label, epsilon_spent, status, created, pid) "
        "VALUES ('d', '{}', 'x', 0, 'charged', 'now', 1)",
        "DELETE FROM dpinfer.charges",
        "UPDATE dpinfer.budget_state SET spent = 0",
        "INSERT INTO dpinfer.budget_events (dataset, action, epsilon, created) VALUES ('d', 'raise', 9, 'x')",
        "INSERT INTO dpinfer.datasets (name, epsilon, delta, accountant, neighbouring, created) "
        "VALUES ('mine', 100, 0, 'pure', 'replace-one', 'now')",
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            _sql_as(pg_server, analyst_url, statement)
    with pytest.raises(BudgetOwnerError):
        analyst.raise_budget("d", epsilon=100.0, reason="more please")
    with pytest.raises(BudgetOwnerError):
        analyst.retire("d", reason="x")
    with pytest.raises(BudgetOwnerError):
        analyst.register("mine", 100.0, accountant="pure")
    assert owner.budget("d").epsilon == 1.0 and owner.datasets() == ["d"]
    # the owner's changes all appear in the history, with the owner's role
    owner.raise_budget("d", epsilon=1.5, reason="wave 2")
    owner.retire("d", reason="closed")
    assert [(e["action"], e["authenticated_as"]) for e in owner.budget_history("d")] == [
        ("register", "dpinfer"), ("raise", "dpinfer"), ("retire", "dpinfer")
    ]
    with pytest.raises(BudgetRetiredError):
        analyst.charge("d", LaplaceEvent(0.1)).__enter__()


def test_the_old_readme_grants_no_longer_let_an_analyst_raise_the_budget(pg_server):
    """The README used to grant SELECT, INSERT, UPDATE on all tables: the triggers now refuse every
    write by a role outside the owner's, so that grant no longer lets an analyst spend ε = 5 of 1."""
    import psycopg

    url = pg_server.new_database()
    Ledger.create(url).register("d", 1.0, accountant="pure")
    old = _analyst(pg_server, url, "old", grant="old")
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only the ledger's owner"):
        _sql_as(pg_server, old, "UPDATE dpinfer.datasets SET epsilon = 100 WHERE name = 'd'")
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only the ledger's owner"):
        _sql_as(pg_server, old, "INSERT INTO dpinfer.charges (dataset, event, label, epsilon_spent, status,"
                " created, pid) VALUES ('d', '{}', 'x', 0, 'charged', 'now', 1)")
    assert Ledger(url).budget("d").epsilon == 1.0


def _call_charge(pg_server, url, dataset, event, spent, previous, state=None):
    return _sql_as(
        pg_server, url,
        "SELECT dpinfer.charge(%s, %s, '', %s, %s, %s, 1, 0, 'h', NULL, NULL, '')",
        (dataset, json.dumps(event), spent, previous, state),
    )[0][0]


def test_what_the_charge_function_refuses_from_a_hostile_caller(pg_server):
    """An analyst calling ``dpinfer.charge`` with arbitrary arguments: over the budget, a spend
    below the recorded one, a non-finite spend, a stale predecessor, a retired budget -- refused
    inside the database; an under-claimed spend within those rules is recorded with the role that
    claimed it (what `dpinfer budget check` then finds; see the module docstring of
    ledger_postgres)."""
    import psycopg

    url = pg_server.new_database()
    owner = Ledger.create(url)
    owner.register("d", 1.0, accountant="pure")
    analyst_url = _analyst(pg_server, url, "eve")
    lap = {"type": "LaplaceEvent", "epsilon": 0.5, "neighbouring": "replace-one"}
    first = _call_charge(pg_server, analyst_url, "d", lap, 0.5, None)
    for spent, previous, error in (
        (1.5, first, "over the budget"),
        (0.4, first, "never lowers"),
        (float("nan"), first, "finite"),
        (float("inf"), first, "finite"),
        (0.9, None, "compose again"),
    ):
        with pytest.raises(psycopg.Error, match=error):
            _call_charge(pg_server, analyst_url, "d", lap, spent, previous)
    with pytest.raises(psycopg.Error, match="not JSON|no type"):
        _sql_as(pg_server, analyst_url, "SELECT dpinfer.charge('d', 'nope', '', 0.6, %s, NULL, 1, 0, 'h', "
                "NULL, NULL, '')", (first,))
    # the attack the function cannot see: ε = 0.5 charged as a spend increase of 0.01
    second = _call_charge(pg_server, analyst_url, "d", lap, 0.51, first)
    role = analyst_url.split("//")[1].split("@")[0]
    assert [(h["id"], h["authenticated_as"]) for h in owner.history("d")] == [(first, role), (second, role)]
    report = owner.recompute("d")
    assert not report["ok"] and report["recomputed"] > 0.99
    assert [(u["id"], u["authenticated_as"]) for u in report["understated"]] == [(second, role)]
    assert main(["budget", "check", "--ledger", url, "--dataset", "d"]) == 1
    owner.retire("d", reason="closed")
    with pytest.raises(psycopg.Error, match="retired"):
        _call_charge(pg_server, analyst_url, "d", lap, 0.6, second)
    # another role without the grant may not call it at all
    stranger = _analyst(pg_server, url, "nobody", grant="none")
    stranger_role = stranger.split("//")[1].split("@")[0]
    pg_server.sql(url.rsplit("/", 1)[1], f"GRANT USAGE ON SCHEMA dpinfer TO {stranger_role}")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        _call_charge(pg_server, stranger, "d", lap, 0.6, second)


def test_check_passes_honest_charges(target, capsys):
    ledger = Ledger.create(target)
    ledger.register("d", 1.0, accountant="pure")
    for eps in (0.1, 0.2, 0.3):
        with ledger.charge("d", LaplaceEvent(eps)):
            pass
    report = ledger.recompute("d")
    assert report["ok"] and report["recomputed"] == pytest.approx(0.6) == report["recorded"]
    assert main(["budget", "check", "--ledger", target]) == 0
    assert "ok" in capsys.readouterr().out


def test_grant_refuses_a_sqlite_ledger(tmp_path, capsys):
    target = str(tmp_path / "l.db")
    Ledger.create(target).register("d", 1.0, accountant="pure")
    assert main(["budget", "grant", "--ledger", target, "--analyst", "ann"]) == 2
    assert "no roles" in capsys.readouterr().err


def test_over_budget_is_still_refused_with_identity(target):
    ledger = Ledger.create(target)
    ledger.register("d", 1.0, accountant="pure")
    with pytest.raises(BudgetExceededError):
        ledger.charge("d", LaplaceEvent(1.5), charged_by="x").__enter__()
    assert ledger.history("d") == []
