"""One contract for every ledger backend: a SQLite file and a real PostgreSQL server.

Each test runs against both (``target`` is a fresh SQLite path or a fresh PostgreSQL database on
the session's server from tests/pg_server.py; the PostgreSQL half skips, saying why, where no
server binaries or psycopg are installed). Covered: create-only opening, refusals, fingerprints,
insecure flags, schema versions, 16 processes racing for one budget, a client SIGKILLed inside its
charge transaction and inside its release, the server stopped inside a charge and restarted, a
second connection seeing a charge at once, and passwords kept out of every message and listing.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import threading
import time

import pytest

from dpinfer.cli import main
from dpinfer.errors import (
    InvalidPrivacyParameterError,
    LedgerStatusWarning,
    NeighbouringRelationError,
    UnknownDatasetError,
    UnsupportedEventError,
)
from dpinfer.privacy import (
    BudgetExceededError,
    GaussianEvent,
    LaplaceEvent,
    Ledger,
    LedgerConnectionError,
    LedgerFileError,
    LedgerNotFoundError,
)
from dpinfer.privacy.ledger import DataBindingError

FORK = mp.get_context("fork")


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request, tmp_path):
    """Where a fresh ledger goes: a SQLite path, or a new empty PostgreSQL database's URL."""
    if request.param == "sqlite":
        return str(tmp_path / "ledger.db")
    return request.getfixturevalue("pg_server").new_database()


def _absent(target: str, pg_server=None) -> bool:
    if target.startswith("postgresql://"):
        db = target.rsplit("/", 1)[1]
        return not pg_server.sql(db, "SELECT 1 FROM pg_namespace WHERE nspname = 'dpinfer'")
    return not os.path.exists(target)


# ---- the API -----------------------------------------------------------------------------------
def test_opening_creates_nothing_and_creation_is_explicit(target, request):
    server = request.getfixturevalue("pg_server") if target.startswith("postgresql") else None
    with pytest.raises(LedgerNotFoundError, match="budget init"):
        Ledger(target)
    assert _absent(target, server)
    ledger = Ledger.create(target)
    assert ledger.integrity_check() and repr(ledger) == f"Ledger({ledger.location!r})"
    ledger.register("d", 1.0)
    assert Ledger.create(target).datasets() == ["d"]  # create keeps an existing ledger


def test_charges_refusals_and_history(target):
    ledger = Ledger.create(target)
    ledger.register("d", 1.0, accountant="pure")
    with ledger.charge("d", LaplaceEvent(0.5), label="first") as c:
        assert c.epsilon_spent == pytest.approx(0.5)
    ran = False
    with pytest.raises(BudgetExceededError, match="Nothing was charged"):
        with ledger.charge("d", LaplaceEvent(0.6)):
            ran = True
    assert not ran
    with pytest.raises(RuntimeError):
        with ledger.charge("d", LaplaceEvent(0.2), label="crash"):
            raise RuntimeError("release crashed after the noise was drawn")
    with ledger.charge("d", LaplaceEvent(0.3), label="test rng", insecure=True):  # exactly up to 1
        pass
    assert ledger.remaining("d") == pytest.approx(0.0)
    hist = ledger.history("d")
    assert [(h["label"], h["status"], h["insecure"]) for h in hist] == [
        ("first", "released", False), ("crash", "failed", False), ("test rng", "released", True)
    ]
    assert all(h["pid"] == os.getpid() and h["host"] for h in hist)
    with pytest.raises(UnknownDatasetError, match="budget init"):
        ledger.charge("other", LaplaceEvent(0.1)).__enter__()
    ledger.register("e", 1.0, accountant="pure")
    with pytest.raises(NeighbouringRelationError):
        ledger.charge("e", LaplaceEvent(0.1, "add-remove")).__enter__()
    with pytest.raises(UnsupportedEventError):
        ledger.charge("e", GaussianEvent(3.0)).__enter__()
    with pytest.raises(InvalidPrivacyParameterError, match="already registered"):
        ledger.register("d", 5.0)
    ledger.register("f", 1.0, fingerprint=[1.0, 2.0])
    with pytest.raises(InvalidPrivacyParameterError, match="second budget"):
        ledger.register("g", 1.0, fingerprint=[1, 2])
    assert ledger.datasets() == ["d", "e", "f"] and ledger.history("e") == []


def test_a_newer_schema_version_is_refused_and_left_alone(target, request):
    Ledger.create(target).register("d", 1.0)
    if target.startswith("postgresql"):
        db = target.rsplit("/", 1)[1]
        request.getfixturevalue("pg_server").sql(
            db, "UPDATE dpinfer.ledger_meta SET value = '99' WHERE key = 'schema_version'"
        )
    else:
        import sqlite3

        with sqlite3.connect(target) as conn:
            conn.execute("UPDATE ledger_meta SET value = '99' WHERE key = 'schema_version'")
        conn.close()
    with pytest.raises(LedgerFileError, match="schema version 99"):
        Ledger(target)


def test_the_budget_commands_take_either_backend(target, capsys):
    assert main(["budget", "init", "--ledger", target, "--dataset", "d", "--epsilon", "1",
                 "--accountant", "pure", "--delta", "0", "--unbound"]) == 0
    with Ledger(target).charge("d", LaplaceEvent(0.25), label="q"):
        pass
    capsys.readouterr()
    assert main(["budget", "show", "--ledger", target, "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["epsilon_spent"] == pytest.approx(0.25) and row["charges"] == 1
    assert main(["budget", "history", "--ledger", target, "--dataset", "d"]) == 0
    assert "q" in capsys.readouterr().out


# ---- concurrency ----------------------------------------------------------------------------------
def _race(target, barrier, results, stall=0.0):
    ledger = Ledger(target)
    if stall:
        _stall_inside_the_transaction(ledger, threading.Event(), stall)
    barrier.wait()
    try:
        with ledger.charge("d", LaplaceEvent(0.15), label=f"pid {os.getpid()}"):
            time.sleep(0.02)  # the release takes a moment
        results.put("ok")
    except BudgetExceededError:
        results.put("refused")
    except Exception as exc:  # pragma: no cover - reported by the assertion below
        results.put(repr(exc))


def test_sixteen_processes_race_for_one_budget(target):
    ledger = Ledger.create(target)
    ledger.register("d", epsilon=1.0, accountant="pure")
    barrier, results = FORK.Barrier(16), FORK.Queue()
    procs = [FORK.Process(target=_race, args=(target, barrier, results)) for _ in range(16)]
    for p in procs:
        p.start()
    outcomes = sorted(results.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(10)
    assert outcomes == ["ok"] * 6 + ["refused"] * 10  # 6 x 0.15 = 0.9 <= 1 < 7 x 0.15
    hist = ledger.history("d")
    assert len(hist) == 6 and {h["status"] for h in hist} == {"released"}
    assert ledger.spent("d") == pytest.approx(sum(h["event"]["epsilon"] for h in hist)) == pytest.approx(0.9)
    assert ledger.spent("d") <= 1.0


def _without_the_charge_function(monkeypatch):
    """Known-broken backend: PostgreSQL charges inserted directly (as the owner may), skipping
    the checks ``dpinfer.charge`` repeats inside the database."""
    from dpinfer.privacy.ledger_postgres import _PostgresTx

    def insert(self, c):
        return self.insert(
            "INSERT INTO charges (dataset, event, label, epsilon_spent, status, created, pid, insecure, host,"
            " fingerprint) VALUES (?, ?, ?, ?, 'charged', ?, ?, ?, ?, ?)",
            (c["dataset"], c["event"], c["label"], c["epsilon_spent"], c["created"], c["pid"],
             c["insecure"], c["host"], c["fingerprint"]),
        )

    monkeypatch.setattr(_PostgresTx, "record_charge", insert)


def _race_outcomes(target, n=8, stall=0.5):
    Ledger.create(target).register("d", epsilon=1.0, accountant="pure")
    barrier, results = FORK.Barrier(n), FORK.Queue()
    procs = [FORK.Process(target=_race, args=(target, barrier, results, stall)) for _ in range(n)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(10)
    return outcomes


def test_without_the_client_lock_the_charge_function_still_serialises(pg_server, monkeypatch):
    """The client's row lock removed, ``dpinfer.charge`` (row lock + "composed with the latest
    charge?" check, else a retry) still keeps 8 racing processes within the budget."""
    from dpinfer.privacy.ledger_postgres import _PostgresTx

    monkeypatch.setattr(_PostgresTx, "lock_budget", lambda self, dataset: None)
    target = pg_server.new_database()
    outcomes = _race_outcomes(target, stall=0.3)
    assert sorted(outcomes) == ["ok"] * 6 + ["refused"] * 2 and Ledger(target).spent("d") <= 1.0


def test_the_race_catches_a_backend_without_its_lock(pg_server, monkeypatch):
    """Known-broken variant: PostgreSQL charges without the data set's row lock (neither the
    client's nor the charge function's) overspend."""
    from dpinfer.privacy.ledger_postgres import _PostgresTx

    monkeypatch.setattr(_PostgresTx, "lock_budget", lambda self, dataset: None)
    _without_the_charge_function(monkeypatch)
    target = pg_server.new_database()
    outcomes = _race_outcomes(target)
    assert outcomes.count("ok") > 6 and Ledger(target).spent("d") > 1.0  # what the lock prevents


def test_a_second_connection_sees_a_charge_at_once(target):
    first = Ledger.create(target)
    first.register("d", 1.0, accountant="pure")
    second = Ledger(target)
    with first.charge("d", LaplaceEvent(0.4), label="seen"):
        # committed before the release runs: the other connection already counts it
        assert second.spent("d") == pytest.approx(0.4)
        assert [h["label"] for h in second.history("d")] == ["seen"]
        with pytest.raises(BudgetExceededError):
            second.charge("d", LaplaceEvent(0.7)).__enter__()


# ---- crashes ------------------------------------------------------------------------------------
def _stall_inside_the_transaction(ledger: Ledger, inside, seconds: float) -> None:
    """Make ``ledger``'s next charge stop for ``seconds`` after reading the history: inside its
    transaction, holding the data set's lock, before the insert and the commit."""
    read = Ledger._events

    def slow(tx, dataset):
        events = read(tx, dataset)
        inside.set()
        time.sleep(seconds)
        return events

    ledger._events = slow


def _charge_stalled(target, inside, released):
    ledger = Ledger(target)
    _stall_inside_the_transaction(ledger, inside, 60)
    with ledger.charge("d", LaplaceEvent(0.5), label="killed"):
        released.set()


def _charge_and_hang(target, charged):
    with Ledger(target).charge("d", LaplaceEvent(0.25), label="hang"):
        charged.set()
        time.sleep(60)


def test_a_client_killed_mid_charge_leaves_all_or_nothing(target):
    ledger = Ledger.create(target)
    ledger.register("d", epsilon=1.0, accountant="pure")
    # killed inside the charge transaction (lock held, nothing committed): nothing recorded
    inside, released = FORK.Event(), FORK.Event()
    p = FORK.Process(target=_charge_stalled, args=(target, inside, released))
    p.start()
    assert inside.wait(20)
    os.kill(p.pid, signal.SIGKILL)
    p.join(10)
    assert ledger.history("d") == [] and not released.is_set()
    start = time.monotonic()
    with Ledger(target, timeout=10).charge("d", LaplaceEvent(0.1)):  # no stale lock
        pass
    assert time.monotonic() - start < 5
    # killed during the release (after the commit): the charge stays and counts
    charged = FORK.Event()
    p = FORK.Process(target=_charge_and_hang, args=(target, charged))
    p.start()
    assert charged.wait(20)
    os.kill(p.pid, signal.SIGKILL)
    p.join(10)
    last = ledger.history("d")[-1]
    assert last["label"] == "hang" and last["status"] == "charged"
    assert ledger.spent("d") == pytest.approx(0.35) and ledger.integrity_check()


@pytest.mark.parametrize("mode", ["immediate", "fast"])
def test_server_stopped_mid_charge_records_nothing_and_releases_nothing(pg_server, mode):
    target = pg_server.new_database()
    ledger = Ledger.create(target)
    ledger.register("d", epsilon=1.0, accountant="pure")
    inside, outcome = threading.Event(), {}
    _stall_inside_the_transaction(ledger, inside, 1.5)

    def client():
        try:
            with ledger.charge("d", LaplaceEvent(0.5), label="lost"):
                outcome["released"] = True
        except Exception as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=client)
    thread.start()
    try:
        assert inside.wait(20)
        pg_server.stop(mode)  # immediate: a crash (WAL recovery on restart); fast: a clean shutdown
    finally:
        thread.join(30)
        pg_server.start()
    assert "released" not in outcome
    assert isinstance(outcome["error"], LedgerConnectionError)
    assert "nothing was recorded" in str(outcome["error"]) and "Nothing was released" in str(outcome["error"])
    fresh = Ledger(target)
    assert fresh.history("d") == [] and fresh.spent("d") == 0.0 and fresh.integrity_check()
    with fresh.charge("d", LaplaceEvent(0.5)):
        pass
    assert fresh.spent("d") == pytest.approx(0.5)


def test_server_stopped_during_the_release_keeps_the_charge(pg_server):
    target = pg_server.new_database()
    ledger = Ledger.create(target)
    ledger.register("d", epsilon=1.0, accountant="pure")
    try:
        with pytest.warns(LedgerStatusWarning, match="stays 'charged'"):
            with ledger.charge("d", LaplaceEvent(0.4), label="kept"):
                pg_server.stop("immediate")  # the charge was committed before the release began
    finally:
        pg_server.start()
    [h] = Ledger(target).history("d")
    assert h["label"] == "kept" and h["status"] == "charged"
    with pytest.raises(LedgerConnectionError, match="cannot connect") as err:
        Ledger(pg_server.url("no_such_db"))
    assert "Nothing was recorded or released" in str(err.value)


# ---- passwords -----------------------------------------------------------------------------------
def test_passwords_never_appear(pg_server, tmp_path, capsys, monkeypatch):
    from pg_server import PASSWORD

    url = pg_server.new_database()
    db = url.rsplit("/", 1)[1]
    Ledger.create(url).register("d", 1.0, accountant="pure")
    wrong = pg_server.url(db, user="secret", password="Wr0ng-Pa55")
    with pytest.raises(LedgerConnectionError, match="password authentication failed") as err:
        Ledger(wrong)
    assert "Wr0ng-Pa55" not in str(err.value)
    right = pg_server.url(db, user="secret", password=PASSWORD)
    with pytest.raises(LedgerConnectionError, match="GRANT USAGE") as err:  # not yet allowed
        Ledger(right)
    assert PASSWORD not in str(err.value)
    with pytest.raises(LedgerConnectionError, match="dpinfer budget grant"):
        Ledger(right)
    assert main(["budget", "grant", "--ledger", url, "--analyst", "secret"]) == 0
    ledger = Ledger(right)
    with ledger.charge("d", LaplaceEvent(0.1)):
        pass
    assert PASSWORD not in repr(ledger) and PASSWORD not in ledger.location and "secret@" in ledger.location
    for argv in (
        ["budget", "show", "--ledger", right],
        ["budget", "history", "--ledger", right, "--dataset", "d"],
        ["budget", "show", "--ledger", wrong],
        ["budget", "show", "--ledger", right, "--dataset", "x"],
        ["budget", "init", "--ledger", right, "--dataset", "d", "--epsilon", "1", "--unbound"],
    ):
        main(argv)
        out = capsys.readouterr()
        assert PASSWORD not in out.out + out.err and "Wr0ng" not in out.out + out.err
    # the password from ~/.pgpass (PGPASSFILE): the URL carries none
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{pg_server.port}:{db}:secret:{PASSWORD}\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    assert Ledger(pg_server.url(db, user="secret")).spent("d") == pytest.approx(0.1)


def test_a_charge_waiting_too_long_for_a_lock_is_refused(target):
    holder = Ledger.create(target)
    holder.register("d", 1.0, accountant="pure")
    inside = threading.Event()
    _stall_inside_the_transaction(holder, inside, 1.5)
    thread = threading.Thread(target=lambda: holder.charge("d", LaplaceEvent(0.1), label="slow").__enter__())
    thread.start()
    try:
        assert inside.wait(20)
        ran = False
        with pytest.raises(LedgerConnectionError, match="nothing was recorded"):
            with Ledger(target, timeout=0.3).charge("d", LaplaceEvent(0.1), label="impatient"):
                ran = True
        assert not ran
    finally:
        thread.join(30)
    assert [h["label"] for h in Ledger(target).history("d")] == ["slow"]


# ---- budgets bound to data (issue 23, finding 6) -----------------------------------------------------
F = "f0" * 32  # the fingerprint of the data file x.csv
G = "9a" * 32  # another file's


def test_a_fingerprint_bound_to_one_budget_cannot_be_charged_to_another(target):
    """Finding 6: data set `a` registered with x.csv, `b` without; releasing x.csv against `b` was
    accepted (a second budget for the same file). Every way round is now refused in the charge."""
    ledger = Ledger.create(target)
    ledger.register("a", 1.0, fingerprint=F)
    ledger.register("b", 1.0)  # unbound
    ran = False
    with pytest.raises(DataBindingError, match="registered as dataset 'a'"):
        with ledger.charge("b", LaplaceEvent(0.1), fingerprint=F):
            ran = True
    with pytest.raises(DataBindingError, match="registered as dataset 'a'"):
        ledger.for_data(F).charge("b", LaplaceEvent(0.1)).__enter__()
    with pytest.raises(DataBindingError, match="not the data registered as 'a'"):
        ledger.charge("a", LaplaceEvent(0.1), fingerprint=G).__enter__()
    assert not ran and ledger.history("a") == [] and ledger.history("b") == []
    with ledger.for_data(F).charge("a", LaplaceEvent(0.1)):
        pass
    # an unbound budget: the first file charged to it may not then be charged elsewhere
    ledger.register("c", 1.0)
    with ledger.charge("b", LaplaceEvent(0.1), fingerprint=G):
        pass
    with pytest.raises(DataBindingError, match="already charged to dataset 'b'"):
        ledger.charge("c", LaplaceEvent(0.1), fingerprint=G).__enter__()
    with pytest.raises(DataBindingError, match="already charged"):
        ledger.register("g-again", 1.0, fingerprint=G)
    with pytest.raises(DataBindingError, match="already charged to dataset 'b'"):
        ledger.check_data("c", G)  # the read-only pre-check of the commands says the same
    ledger.check_data("b", G)  # fine
    assert [h["fingerprint"] for h in ledger.history("a")] == [F]
    assert [h["fingerprint"] for h in ledger.history("b")] == [G] and ledger.history("c") == []
    assert ledger.datasets() == ["a", "b", "c"]


def test_the_binding_check_is_what_refuses_finding_6(target, monkeypatch):
    """Known-broken variant: without the cross-data-set lookup the finding-6 release goes through."""
    monkeypatch.setattr(Ledger, "_binding_problem", lambda self, tx, budget, fp: None)
    if target.startswith("postgresql://"):
        _without_the_charge_function(monkeypatch)
    ledger = Ledger.create(target)
    ledger.register("a", 1.0, fingerprint=F)
    ledger.register("b", 1.0)
    with ledger.charge("b", LaplaceEvent(0.1), fingerprint=F):
        pass
    assert len(ledger.history("b")) == 1  # the second budget spent on a's data: what the check stops


def _bind_race(target, dataset, barrier, results, stall):
    ledger = Ledger(target).for_data(F)
    _stall_inside_the_transaction(ledger, threading.Event(), stall)
    barrier.wait()
    try:
        with ledger.charge(dataset, LaplaceEvent(0.01), label=dataset):
            pass
        results.put(dataset)
    except DataBindingError:
        results.put("refused")
    except Exception as exc:  # pragma: no cover - reported by the assertion below
        results.put(repr(exc))


def _race_for_one_file(target):
    ledger = Ledger.create(target)
    ledger.register("x", 1.0, accountant="pure")
    ledger.register("y", 1.0, accountant="pure")
    barrier, results = FORK.Barrier(8), FORK.Queue()
    procs = [FORK.Process(target=_bind_race, args=(target, "xy"[i % 2], barrier, results, 0.3))
             for i in range(8)]
    for p in procs:
        p.start()
    outcomes = sorted(results.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(10)
    return outcomes, {name: len(ledger.history(name)) for name in ("x", "y")}


def test_eight_processes_charging_one_file_to_two_unbound_budgets_bind_it_to_one(target):
    """Atomic: 4 processes charge x.csv to `x`, 4 to `y`, each stalling 0.3 s inside its charge
    transaction; exactly one budget gets the file (4 charges), the other 4 are refused."""
    outcomes, charged = _race_for_one_file(target)
    winner = "x" if charged["x"] else "y"
    assert outcomes == sorted(["refused"] * 4 + [winner] * 4)
    assert sorted(charged.values()) == [0, 4]


def test_the_binding_race_catches_a_backend_without_the_fingerprint_lock(pg_server, monkeypatch):
    """Known-broken variant: PostgreSQL charges without the fingerprint's advisory lock let both
    budgets take the same file (each checked before the other committed)."""
    from dpinfer.privacy.ledger_postgres import _PostgresTx

    monkeypatch.setattr(_PostgresTx, "lock_fingerprint", lambda self, fp: None)
    _without_the_charge_function(monkeypatch)
    _, charged = _race_for_one_file(pg_server.new_database())
    assert charged["x"] > 0 and charged["y"] > 0


def test_the_charge_function_checks_the_binding_itself(pg_server, monkeypatch):
    """The client's binding check removed, ``dpinfer.charge`` still refuses a's data on b."""
    monkeypatch.setattr(Ledger, "_binding_problem", lambda self, tx, budget, fp: None)
    ledger = Ledger.create(pg_server.new_database())
    ledger.register("a", 1.0, fingerprint=F)
    ledger.register("b", 1.0)
    with pytest.raises(DataBindingError, match="bound to dataset a"):
        ledger.charge("b", LaplaceEvent(0.1), fingerprint=F).__enter__()
    assert ledger.history("b") == []


def test_an_older_postgres_ledger_gains_charge_fingerprints(pg_server):
    target = pg_server.new_database()
    db = target.rsplit("/", 1)[1]
    Ledger.create(target).register("d", 1.0, accountant="pure")
    with Ledger(target).charge("d", LaplaceEvent(0.25), label="before"):
        pass
    pg_server.sql(db, "ALTER TABLE dpinfer.charges DROP COLUMN fingerprint")  # as version 3 wrote it
    pg_server.sql(db, "DROP INDEX IF EXISTS dpinfer.charges_fingerprint")
    pg_server.sql(db, "UPDATE dpinfer.ledger_meta SET value = '3' WHERE key = 'schema_version'")
    ledger = Ledger(target)
    from dpinfer.privacy.ledger_store import SCHEMA_VERSION

    assert pg_server.sql(db, "SELECT value FROM dpinfer.ledger_meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]
    with ledger.charge("d", LaplaceEvent(0.25), fingerprint=F):
        pass
    assert [h["fingerprint"] for h in ledger.history("d")] == [None, F] and ledger.integrity_check()
