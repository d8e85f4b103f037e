"""The data owner's service, without HTTP: data sets, ledger, tokens, requests, recovery.

:class:`Service` is what :mod:`dpinfer.service.app` puts behind its routes. It opens (or creates)
the ledger and registers each configured data set's budget there if it is not registered yet,
loads and checks every data set against its public schema once, at start (a data set whose
records violate its schema is not served; the owner's log names the column and the rule, never a
value or a path), takes an exclusive lock on the state folder (one service per state), and
completes interrupted requests (:meth:`Service.recover`).
"""

from __future__ import annotations

import fcntl
import functools
import json
import logging
import math
import secrets
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import BudgetExceededError, DPInferError
from ..privacy.accountants import get_accountant
from ..privacy.context import ReleaseContext
from ..privacy.event_conversion import event_from_dict, event_to_dict
from ..privacy.events import compose
from ..privacy.ledger import Ledger
from .auth import Principal, Tokens
from .config import DatasetConfig, ServiceConfig
from .data import FieldError, dummy_records, read_records
from .releases import REQUESTS, DatasetView, Plan, ServiceLedger, charge_label, plan
from .store import COUNTED, Store
from .timeouts import RequestClock, RequestTimeout

log = logging.getLogger("dpinfer.service")

#: The dummy data set's size for an add-remove data set without rows.max (its n is private).
DUMMY_N = 1000


class Forbidden(DPInferError):
    """A request its token's role or allowances do not permit (403)."""


class NotFound(DPInferError):
    """An unknown (or someone else's) resource (404)."""


class ServiceBudgetExceeded(BudgetExceededError):
    """The data set's budget cannot cover a request (nothing charged); says nothing of others' spend."""


@dataclass
class DatasetState:
    """A served data set: configuration, records (confidential), public n, dummy copy."""

    config: DatasetConfig
    records: dict[str, np.ndarray] | None
    n: int | None
    dummy: dict[str, np.ndarray] | None
    problem: str | None = None
    accountant: str = "pld"
    dpvi_max_steps: int = 5000

    @property
    def view(self) -> DatasetView:
        dummy_n = len(next(iter(self.dummy.values()))) if self.dummy else 0
        return DatasetView(
            self.config.name, self.config.schema, self.n, dummy_n, self.accountant, self.dpvi_max_steps
        )


@functools.lru_cache(maxsize=1024)
def _event_epsilon(event: str, accountant: str, delta: float) -> float:
    """ε of one release's event alone under a budget's accountant (requests repeat: remembered)."""
    return float(get_accountant(accountant).epsilon(event_from_dict(json.loads(event)), delta))


def _stopper(clock: RequestClock) -> Any:
    """A DPVI per-step callback that ends a dry run past its time limit (nothing is charged)."""

    def stop(step: int, params: Any) -> None:
        if clock.expired():
            raise RequestTimeout(clock.limit)

    return stop


class Service:
    """The service state (module docstring)."""

    def __init__(self, config: ServiceConfig, *, recover: bool = True) -> None:
        self.config = config
        config.state.mkdir(parents=True, exist_ok=True)
        self._lockfile = open(config.state / "service.lock", "w")  # noqa: SIM115 - held for the lifetime
        try:
            fcntl.flock(self._lockfile, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lockfile.close()
            raise DPInferError("another dpinfer service is running on this state folder.") from None
        self.store = Store(config.state / "service.db")
        self.tokens = Tokens(self.store)
        self.ledger = Ledger.create(config.ledger)
        known = set(self.ledger.datasets())
        self.datasets: dict[str, DatasetState] = {}
        for name, dc in config.datasets.items():
            if name not in known:
                self.ledger.register(name, dc.epsilon, dc.delta, dc.accountant, dc.schema.neighbouring)
                self.store.audit("owner", "register budget", f"{name}: epsilon={dc.epsilon:g}")
            self.datasets[name] = self._load(dc)
            self.datasets[name].accountant = self.ledger.budget(name).accountant
            self.datasets[name].dpvi_max_steps = config.dpvi_max_steps
        for name, ds, kept, in_file in self.store.seed_analysts(
            {a.name: a.allowances for a in config.analysts.values()}
        ):
            log.warning(
                "analyst %s: allowance on %s is epsilon=%g in the service state (set at run time), "
                "%g in the configuration file: the state's is kept",
                name,
                ds,
                kept,
                in_file,
            )
        if recover:
            self.recover()

    def close(self) -> None:
        self._lockfile.close()

    def _load(self, dc: DatasetConfig) -> DatasetState:
        try:
            records = read_records(dc.source, dc.schema)
        except (DPInferError, OSError) as exc:
            problem = str(exc) if isinstance(exc, DPInferError) else "the data source cannot be read"
            log.warning("data set %s is not served: %s", dc.name, problem)
            return DatasetState(dc, None, None, None, problem)
        n_true = len(next(iter(records.values())))
        n = n_true if dc.schema.neighbouring == "replace-one" else None
        dummy_n = n_true if n is not None else (dc.schema.max_rows or DUMMY_N)
        return DatasetState(dc, records, n, dummy_records(dc.schema, dummy_n))

    # -- lookups ---------------------------------------------------------------------------------
    def dataset(self, name: str) -> DatasetState:
        ds = self.datasets.get(name)
        if ds is None or ds.records is None:
            raise FieldError("dataset", f"no data set {name!r} is served here (see GET /v1/datasets).")
        return ds

    def public_datasets(self) -> list[dict[str, Any]]:
        out = []
        for name, ds in self.datasets.items():
            if ds.records is None:
                continue
            out.append(
                {
                    "name": name,
                    "neighbouring": ds.config.schema.neighbouring,
                    "n": ds.n,
                    "schema": ds.config.schema.to_dict(),
                }
            )
        return out

    def allowance(self, who: Principal, dataset: str) -> float:
        allowance = self.store.allowance(who.name, dataset)
        if allowance <= 0:
            raise Forbidden(f"you have no allowance on data set {dataset!r}; ask its owner.")
        return allowance

    def me(self, who: Principal) -> dict[str, Any]:
        allowances = {}
        for ds, eps in self.store.analysts().get(who.name, {}).items():
            budget = self.ledger.budget(ds)
            spent = self.store.spend(who.name, ds, budget.accountant, budget.delta)
            allowances[ds] = {
                "allowance": eps,
                "spent": spent,
                "remaining": max(eps - spent, 0.0),
                "accountant": budget.accountant,
                "delta": budget.delta,
            }
        return {"name": who.name, "role": who.role, "token_id": who.token_id, "allowances": allowances}

    @staticmethod
    def public_request(row: dict[str, Any], with_result: bool) -> dict[str, Any]:
        out = {
            k: row[k]
            for k in ("id", "dataset", "kind", "params", "epsilon", "status", "created", "recovered")
        }
        if with_result:
            out["result"] = row["result"]
        return out

    def history(self, who: Principal) -> list[dict[str, Any]]:
        return [self.public_request(r, False) for r in self.store.requests(analyst=who.name)]

    def request(self, who: Principal, rid: str) -> dict[str, Any]:
        row = self.store.request(rid)
        if row is None or row["analyst"] != who.name:
            raise NotFound(f"no request {rid!r} of yours.")
        return self.public_request(row, True)

    # -- releases --------------------------------------------------------------------------------
    def _check_budget(self, dataset: str, planned: Plan) -> Any:
        """Refuse (before any work on the data) a release the data set's budget cannot cover, and
        return the budget. A cheap, necessary test — the spend the ledger recorded, and the
        release's own ε, must each fit (a composition is never below either part) — in one read,
        whatever the ledger's history; the ledger's charge then checks the composition exactly
        and atomically (refused there: nothing charged, nothing released, the request aborted)."""
        budget = self.ledger.budget(dataset)
        get_accountant(budget.accountant).check_supported(planned.event)
        alone = _event_epsilon(
            json.dumps(event_to_dict(planned.event), sort_keys=True), budget.accountant, budget.delta
        )
        spent = self.ledger.spent(dataset)
        if not (math.isfinite(alone) and max(spent, alone) <= budget.epsilon * (1 + 1e-9)):
            raise ServiceBudgetExceeded(
                f"the budget of data set {dataset!r} cannot cover this release. Nothing was charged."
            )
        return budget

    # -- uploads ---------------------------------------------------------------------------------
    def add_upload(self, who: Principal, raw: bytes) -> dict[str, Any]:
        """Validate and store an analyst's simulations (:mod:`dpinfer.service.uploads`)."""
        from .uploads import parse_upload, store_upload

        theta, sims = parse_upload(raw, self.config.max_upload_bytes)
        up = store_upload(self.config.state / "uploads", who.name, theta, sims)
        self.store.add_upload(up.id, who.name, up.shapes, len(raw))
        self.store.audit(
            who.name, "upload simulations", f"{up.id}: theta {up.shapes['theta']}, sims {up.shapes['sims']}"
        )
        return {"id": up.id, "shapes": up.shapes}

    def upload_for(self, analyst: str, kind: str, req: Any) -> Any:
        """The stored upload an ABCDP request names (None if it is not the analyst's)."""
        if kind != "abcdp":
            return None
        from .uploads import find_upload

        try:
            row = self.store.upload(req.upload, analyst)
        except DPInferError:
            return None
        return find_upload(self.config.state / "uploads", analyst, req.upload, row["shapes"])

    def release(
        self, who: Principal, kind: str, req: Any, *, clock: RequestClock | None = None
    ) -> dict[str, Any]:
        """Plan, reserve, charge, draw and store one request (:mod:`dpinfer.service.releases`);
        ``clock`` limits the time before the charge (:mod:`dpinfer.service.timeouts`)."""
        if who.role != "analyst":
            raise Forbidden("releases are requested with an analyst's token.")
        ds = self.dataset(req.dataset)
        upload = self.upload_for(who.name, kind, req)
        if req.dry_run:
            p = plan(kind, req, ds.view, upload)
            assert ds.dummy is not None
            if clock is not None:
                clock.check()
            extra = {"stop": _stopper(clock)} if kind == "dpvi" and clock is not None else {}
            result = p.execute(ds.dummy, ReleaseContext(), **extra)
            return {"id": None, "dry_run": True, "kind": kind, "dataset": ds.config.name, **result}
        allowance = self.allowance(who, ds.config.name)
        p = plan(kind, req, ds.view, upload)
        if clock is not None:
            clock.check()
        budget = self._check_budget(ds.config.name, p)
        rid = secrets.token_hex(8)

        self.store.reserve(
            rid=rid,
            analyst=who.name,
            dataset=ds.config.name,
            kind=kind,
            params=p.params,
            event=event_to_dict(p.event),
            epsilon=p.epsilon,
            allowance=allowance,
            accountant=budget.accountant,
            delta=budget.delta,
        )
        if clock is not None:
            clock.rid = rid
        result = self._execute(
            rid,
            who.name,
            p,
            getattr(req, "purpose", ""),
            ds,
            prepaid=None,
            before_charge=None if clock is None else clock.begin_charge,
        )
        return {"id": rid, "dry_run": False, "kind": kind, "dataset": ds.config.name, **result}

    def _execute(
        self,
        rid: str,
        analyst: str,
        p: Plan,
        purpose: str,
        ds: DatasetState,
        prepaid: int | None,
        before_charge: Any = None,
    ) -> dict[str, Any]:
        proxy = ServiceLedger(
            self.ledger,
            planned=p.event,
            label=charge_label(rid, p.kind, analyst),
            analyst=analyst,
            purpose=purpose,
            prepaid=prepaid,
            before_charge=before_charge,
        )
        assert ds.records is not None
        try:
            result = p.execute(ds.records, ReleaseContext(ledger=proxy, dataset=ds.config.name))  # type: ignore[arg-type]
        except BaseException as exc:
            if proxy.charge_id is None:
                self.store.set_status(rid, "aborted", error=type(exc).__name__)
            else:
                self.store.set_status(rid, "failed", error=type(exc).__name__)
            raise
        self.store.finish(
            rid,
            result,
            charge_id=proxy.charge_id,
            recovered=prepaid is not None,
            audit=(
                analyst,
                f"release {p.kind}",
                f"{ds.config.name}: request {rid}, "
                f"epsilon={p.epsilon:g}" + (" (recovered after a restart)" if prepaid else ""),
            ),
        )
        return result

    def recover(self) -> dict[str, int]:
        """Complete or abort requests interrupted by a crash (:mod:`dpinfer.service.releases`)."""
        done = {"completed": 0, "aborted": 0}
        pending = self.store.requests(statuses=("reserved", "charged"))
        for row in pending:
            rid, name = row["id"], row["dataset"]
            ds = self.datasets.get(name)
            marker = f"[request {rid}]"
            charges = [h for h in self.ledger.history(name) if marker in str(h["label"])] if ds else []
            if not charges or ds is None or ds.records is None:
                if charges:  # charged, but the data set cannot be read now: leave it for a later start
                    continue
                self.store.set_status(rid, "aborted", error="interrupted before the charge")
                done["aborted"] += 1
                continue
            req = REQUESTS[row["kind"]].model_validate(
                {k: v for k, v in row["params"].items() if k in REQUESTS[row["kind"]].model_fields}
            )
            p = plan(row["kind"], req, ds.view, self.upload_for(row["analyst"], row["kind"], req))
            self._execute(rid, row["analyst"], p, req.purpose, ds, prepaid=int(charges[0]["id"]))
            done["completed"] += 1
        if pending:
            log.warning(
                "recovery: %d interrupted request(s) completed, %d aborted",
                done["completed"],
                done["aborted"],
            )
        return done

    # -- the owner's changes at run time (each with its audit line) ------------------------------
    def _check_allowance(self, dataset: str, epsilon: Any, field: str) -> float:
        if dataset not in self.datasets:
            raise FieldError(field, f"no data set {dataset!r} is configured here.")
        ok = isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool) and math.isfinite(epsilon)
        if not ok or epsilon < 0:
            raise FieldError(field, f"an allowance must be a finite epsilon >= 0, got {epsilon!r}.")
        budget = self.ledger.budget(dataset).epsilon
        if epsilon > budget:
            raise FieldError(field, f"allowance {epsilon:g} on {dataset!r} exceeds its budget {budget:g}.")
        return float(epsilon)

    def add_analyst(self, owner: Principal, name: str, allowances: dict[str, Any]) -> dict[str, Any]:
        """Add an analyst with allowances (owner only; audited)."""
        self._owner_only(owner)
        checked = {ds: self._check_allowance(ds, eps, f"allowances.{ds}") for ds, eps in allowances.items()}
        if not self.store.add_analyst(name, checked, by=owner.name):
            raise FieldError("name", f"analyst {name!r} exists already; change allowances with PUT.")
        return {"name": name, "allowances": checked}

    def set_allowance(self, owner: Principal, name: str, dataset: str, epsilon: Any) -> dict[str, Any]:
        """Set an analyst's allowance on a data set (owner only; audited). Lowering it below what
        the analyst spent refuses their further releases; spend is never undone."""
        self._owner_only(owner)
        if name not in self.store.analysts():
            raise NotFound(f"no analyst {name!r} (add them first).")
        eps = self._check_allowance(dataset, epsilon, "epsilon")
        old = self.store.set_allowance(name, dataset, eps, by=owner.name)
        return {"analyst": name, "dataset": dataset, "allowance": eps, "previous": old}

    def create_token(
        self, owner: Principal, principal: str, role: str, days: float, note: str = ""
    ) -> dict[str, Any]:
        """A new token (shown once; owner only; audited). An analyst's token needs a known analyst."""
        self._owner_only(owner)
        if role == "analyst" and principal not in self.store.analysts():
            raise FieldError("principal", f"{principal!r} is not an analyst here; add them first.")
        token, tid, expires = self.tokens.create(principal, role, days=days, note=note)
        self.store.audit(owner.name, "create token", f"{tid} for {principal} ({role})")
        return {"token": token, "id": tid, "principal": principal, "role": role, "expires": expires}

    def revoke_token(self, owner: Principal, tid: str) -> dict[str, Any]:
        self._owner_only(owner)
        if not self.tokens.revoke(tid):
            raise NotFound(f"no token {tid!r}.")
        self.store.audit(owner.name, "revoke token", tid)
        return {"revoked": tid}

    def rotate_token(self, owner: Principal, tid: str, days: float | None = None) -> dict[str, Any]:
        """Revoke token ``tid`` and give its holder a new one with the same role (shown once)."""
        self._owner_only(owner)
        row = next((t for t in self.tokens.listing() if t["id"] == tid), None)
        if row is None:
            raise NotFound(f"no token {tid!r}.")
        token, new, expires = self.tokens.create(
            row["principal"], row["role"], days=days or self.config.token_days, note=f"rotated from {tid}"
        )
        self.tokens.revoke(tid)
        self.store.audit(owner.name, "rotate token", f"{tid} -> {new} for {row['principal']} ({row['role']})")
        return {
            "token": token,
            "id": new,
            "revoked": tid,
            "principal": row["principal"],
            "role": row["role"],
            "expires": expires,
        }

    @staticmethod
    def _owner_only(who: Principal) -> None:
        if who.role != "owner":
            raise Forbidden("only the data owner may change analysts, allowances and tokens.")

    # -- the owner's views -----------------------------------------------------------------------
    def overview(self) -> dict[str, Any]:
        """Budgets, spend per data set and per analyst, and the analysts' spend over time."""
        datasets = []
        for name, ds in self.datasets.items():
            b = self.ledger.budget(name)
            datasets.append(
                {
                    "name": name,
                    "served": ds.records is not None,
                    "problem": ds.problem,
                    "epsilon": b.epsilon,
                    "delta": b.delta,
                    "accountant": b.accountant,
                    "neighbouring": b.neighbouring,
                    "spent": self.ledger.spent(name),
                }
            )
        analysts = []
        for a_name, allow in self.store.analysts().items():
            for ds_name, eps in allow.items():
                b = self.ledger.budget(ds_name)
                analysts.append(
                    {
                        "analyst": a_name,
                        "dataset": ds_name,
                        "allowance": eps,
                        "spent": self.store.spend(a_name, ds_name, b.accountant, b.delta),
                    }
                )
        return {"datasets": datasets, "analysts": analysts, "timeline": self.timeline()}

    def timeline(self, limit: int = 200) -> list[dict[str, Any]]:
        """Cumulative spend of each (analyst, data set) after each of its counted requests."""
        rows = self.store.requests(statuses=COUNTED)
        series: dict[tuple[str, str], list[Any]] = {}
        out = []
        for r in rows[-limit:]:
            key = (r["analyst"], r["dataset"])
            events = series.setdefault(key, [])
            events.append(event_from_dict(r["event"]))
            b = self.ledger.budget(r["dataset"])
            spent = get_accountant(b.accountant).epsilon(compose(*events), b.delta)
            out.append({"analyst": key[0], "dataset": key[1], "at": r["created"], "spent": spent})
        return out

    def all_requests(self) -> list[dict[str, Any]]:
        return [
            {
                **self.public_request(r, False),
                "analyst": r["analyst"],
                "charge_id": r["charge_id"],
                "error": r["error"],
            }
            for r in self.store.requests()
        ]

    def now(self) -> float:
        return time.time()


__all__ = ["DatasetState", "Forbidden", "NotFound", "Service", "ServiceBudgetExceeded"]
