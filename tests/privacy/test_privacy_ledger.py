"""The budget ledger: atomic charges across processes, crash safety, failed releases."""

import multiprocessing as mp
import os
import signal
import time

import pytest

from dpinfer.errors import (
    InvalidPrivacyParameterError,
    NeighbouringRelationError,
    UnknownDatasetError,
    UnsupportedEventError,
)
from dpinfer.privacy import (
    BudgetExceededError,
    GaussianEvent,
    LaplaceEvent,
    Ledger,
    PoissonSubsampledGaussianEvent,
)


def _charge_once(path, barrier, results):
    ledger = Ledger(path)
    barrier.wait()
    try:
        with ledger.charge("d", LaplaceEvent(0.3), label=f"pid {os.getpid()}"):
            time.sleep(0.05)  # the release takes a moment; others must wait or be refused
        results.put(True)
    except BudgetExceededError:
        results.put(False)


def test_eight_concurrent_processes_never_overspend(tmp_path):
    path = tmp_path / "ledger.db"
    Ledger(path, create=True).register("d", epsilon=1.0, accountant="pure")
    ctx = mp.get_context("fork")
    barrier, results = ctx.Barrier(8), ctx.Queue()
    procs = [ctx.Process(target=_charge_once, args=(path, barrier, results)) for _ in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    outcomes = [results.get(timeout=5) for _ in procs]
    assert sum(outcomes) == 3
    ledger = Ledger(path)
    assert ledger.spent("d") == pytest.approx(0.9)
    assert len(ledger.history("d")) == 3


def _charge_forever(path, started):
    ledger = Ledger(path)
    started.set()
    while True:
        with ledger.charge("d", LaplaceEvent(1e-4)):
            pass


def _charge_and_hang(path, charged):
    ledger = Ledger(path)
    with ledger.charge("d", LaplaceEvent(0.25), label="hang"):
        charged.set()
        time.sleep(60)


def test_sigkill_leaves_ledger_consistent(tmp_path):
    path = tmp_path / "ledger.db"
    Ledger(path, create=True).register("d", epsilon=1000.0, accountant="pure")
    ctx = mp.get_context("fork")
    for _ in range(3):
        started = ctx.Event()
        p = ctx.Process(target=_charge_forever, args=(path, started))
        p.start()
        started.wait(10)
        time.sleep(0.3)
        os.kill(p.pid, signal.SIGKILL)
        p.join()
    ledger = Ledger(path)
    assert ledger.integrity_check()
    hist = ledger.history("d")
    assert len(hist) > 3
    assert {h["status"] for h in hist} <= {"charged", "released"}
    assert ledger.spent("d") == pytest.approx(1e-4 * len(hist))
    # killed in the middle of a release: the charge stays and counts
    charged = ctx.Event()
    p = ctx.Process(target=_charge_and_hang, args=(path, charged))
    p.start()
    assert charged.wait(10)
    os.kill(p.pid, signal.SIGKILL)
    p.join()
    last = ledger.history("d")[-1]
    assert last["label"] == "hang" and last["status"] == "charged"
    assert ledger.spent("d") == pytest.approx(1e-4 * len(hist) + 0.25)
    with ledger.charge("d", LaplaceEvent(0.1)):  # no stale lock
        pass


def test_failed_release_keeps_its_charge(tmp_path):
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", 1.0, accountant="pure")
    with pytest.raises(RuntimeError):
        with ledger.charge("d", LaplaceEvent(0.4)):
            raise RuntimeError("release crashed after the noise was drawn")
    assert [h["status"] for h in ledger.history("d")] == ["failed"]
    assert ledger.remaining("d") == pytest.approx(0.6)


def test_exhausted_budget_charges_nothing(tmp_path):
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", 1.0, accountant="pure")
    with ledger.charge("d", LaplaceEvent(0.7)):
        pass
    ran = False
    with pytest.raises(BudgetExceededError, match="Nothing was charged"):
        with ledger.charge("d", LaplaceEvent(0.4)):
            ran = True
    assert not ran
    assert len(ledger.history("d")) == 1
    assert ledger.spent("d") == pytest.approx(0.7)
    with ledger.charge("d", LaplaceEvent(0.3)):  # exactly up to the budget is allowed
        pass
    assert ledger.remaining("d") == pytest.approx(0.0)


def test_ledger_composes_with_the_registered_accountant(tmp_path):
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=10.0, delta=1e-5, accountant="pld", neighbouring="add-remove")
    event = PoissonSubsampledGaussianEvent(0.05, 1.0, 200)
    with ledger.charge("d", event):
        pass
    with ledger.charge("d", GaussianEvent(5.0, "add-remove")):
        pass
    from dpinfer.privacy import compose, get_accountant

    expected = get_accountant("pld").epsilon(compose(event, GaussianEvent(5.0, "add-remove")), 1e-5)
    # the ledger composes incrementally; the 200-step subsampled Gaussian's support is wide enough
    # for its state to merge grid pairs (Δ 1e-4 -> 2e-4, losses rounded up): pessimistic, within Δ
    # per charge of the accountant's own composition
    assert expected <= ledger.spent("d") <= expected + 2 * 2e-4


def test_ledger_refusals(tmp_path):
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", 1.0, accountant="pure")
    with pytest.raises(UnknownDatasetError, match="budget init"):
        with ledger.charge("other", LaplaceEvent(0.1)):
            pass
    ledger.register("ar", 1.0, accountant="pure", neighbouring="add-remove")
    with pytest.raises(NeighbouringRelationError, match="does not imply an add-remove"):
        with ledger.charge("ar", LaplaceEvent(0.1)):  # replace-one: no add-remove analysis
            pass
    with pytest.raises(UnsupportedEventError, match="GaussianEvent") as exc:
        with ledger.charge("d", GaussianEvent(3.0)):
            pass
    assert "new" not in str(exc.value) and "ledger" not in str(exc.value)  # never: split the data
    with pytest.raises(InvalidPrivacyParameterError, match="already registered"):
        ledger.register("d", 5.0)
    for eps, delta in [(0.0, 0.0), (-1.0, 0.0), (float("nan"), 0.0), (1.0, 1.0)]:
        with pytest.raises(InvalidPrivacyParameterError):
            ledger.register("e", eps, delta)
    assert ledger.history("d") == [] and ledger.history("ar") == []
    assert ledger.datasets() == ["ar", "d"]


# ---- one default accountant; budgets that cannot work refused at registration (finding 8) -------
def test_python_and_cli_share_one_default_accountant(tmp_path):
    from dpinfer.cli import main
    from dpinfer.privacy.ledger import DEFAULT_ACCOUNTANT

    ledger = Ledger(tmp_path / "l.db", create=True)
    b = ledger.register("d", 1.0)
    assert (b.accountant, b.delta) == (DEFAULT_ACCOUNTANT, 1e-6) == ("pld", 1e-6)
    assert main(["budget", "init", "--ledger", str(tmp_path / "l.db"), "--dataset", "cli", "--epsilon", "1",
                 "--unbound"]) == 0
    cli = ledger.budget("cli")
    assert (cli.accountant, cli.delta) == (b.accountant, b.delta)
    assert ledger.register("p", 1.0, accountant="pure").delta == 0.0  # pure: delta 0 by default


def test_a_delta_budget_on_the_pure_accountant_is_refused_at_registration(tmp_path):
    """Before: Ledger.register("d", 1.0, delta=1e-5) was a pure budget; the first Gaussian or DP-SGD
    release then failed at charge time (after the fit) with no way out but a new ledger. Now the
    default accounts it, and a pure budget with delta > 0 is refused before anything is stored."""
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", 1.0, delta=1e-5)
    with ledger.charge("d", GaussianEvent(5.0)):
        pass  # the default (pld) accounts Gaussian releases
    refused = (("pure", 1e-5, "'pld'"), ("pld", 0.0, "delta > 0"), ("rdp", 0.0, "delta > 0"))
    for accountant, delta, what in refused:
        with pytest.raises(InvalidPrivacyParameterError, match="cannot work") as exc:
            ledger.register("e", 1.0, delta=delta, accountant=accountant)
        assert what in str(exc.value) and "\n" not in str(exc.value)
    assert ledger.datasets() == ["d"]
