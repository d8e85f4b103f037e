"""The service's configuration file (TOML, YAML or JSON): data sets, ledger, analysts, limits.

Example (``service.toml``; relative paths are relative to the file)::

    [service]
    state = "state"                 # the service's own database (tokens, requests, releases)
    ledger = "budget.db"            # a SQLite file, or postgresql://user@host/dbname
    max_request_bytes = 65536       # a JSON request body larger than this is refused (413)
    max_upload_bytes = 16777216     # an uploaded simulation file larger than this is refused
    rate_limit = 20.0               # requests per second per token (token bucket) ...
    rate_burst = 40                 # ... and its burst
    token_days = 90                 # default lifetime of a new token
    request_timeout = 120           # seconds a release request may run (see dpinfer.service.app)
    dpvi_max_steps = 5000           # the most steps a DPVI request may ask for

    [[datasets]]
    name = "survey"
    data = "survey.csv"             # confidential: never shown in a response or a log line
    schema = "survey.yaml"          # the public schema (or an inline table)
    budget = { epsilon = 3.0, delta = 1e-6, accountant = "pld" }

    [[analysts]]
    name = "alice"
    allowances = { survey = 1.0 }   # the ε this analyst may spend on each data set

A data set's budget is registered in the ledger when the service first starts; an existing
registration is kept as it is (budgets are changed by the owner through the ledger, never by
editing this file). An analyst's allowance is the ε of the composition of that analyst's own
releases under the data set's accountant and δ, and is checked atomically with the reservation
of every request (:mod:`dpinfer.service.store`); the data set's budget is checked by the ledger.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data import Schema
from ..errors import InvalidDataError
from .data import load_schema, read_mapping

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class DatasetConfig:
    """One served data set: its confidential source, its public schema and its budget."""

    name: str
    source: Path
    schema: Schema
    epsilon: float
    delta: float | None
    accountant: str


@dataclass(frozen=True)
class AnalystConfig:
    """An analyst and the ε they may spend per data set."""

    name: str
    allowances: dict[str, float]


@dataclass(frozen=True)
class ServiceConfig:
    """The whole configuration (module docstring)."""

    path: Path
    state: Path
    ledger: str
    datasets: dict[str, DatasetConfig]
    analysts: dict[str, AnalystConfig]
    max_request_bytes: int = 65536
    max_upload_bytes: int = 16 * 2**20
    rate_limit: float = 20.0
    rate_burst: int = 40
    token_days: float = 90.0
    request_timeout: float = 120.0
    dpvi_max_steps: int = 5000
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ledger_is_url(self) -> bool:
        return "://" in self.ledger


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not NAME.match(value):
        raise InvalidDataError(f"{what} must be a name of letters, digits, '_', '.', '-' (got {value!r}).")
    return value


def _positive(value: Any, what: str, integer: bool = False) -> Any:
    ok = (
        isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    )
    if not ok or (integer and int(value) != value):
        raise InvalidDataError(
            f"{what} must be a positive {'integer' if integer else 'number'}, got {value!r}."
        )
    return int(value) if integer else float(value)


def load_config(path: str | Path) -> ServiceConfig:
    """Read and check a service configuration file (module docstring).

    Raises
    ------
    InvalidDataError
        A missing or malformed entry (the message names it; it never prints a data path).
    """
    p = Path(path).resolve()
    if not p.is_file():
        raise InvalidDataError(f"no configuration file at {p}.")
    raw = read_mapping(p)
    if not isinstance(raw, dict):
        raise InvalidDataError(f"{p.name}: the configuration must be a mapping.")
    base = p.parent
    svc = raw.get("service", {}) or {}
    if not isinstance(svc, dict):
        raise InvalidDataError(f"{p.name}: [service] must be a table.")
    ledger = svc.get("ledger", "budget.db")
    if not isinstance(ledger, str) or not ledger:
        raise InvalidDataError(f"{p.name}: service.ledger must be a file name or a postgresql:// URL.")
    if "://" not in ledger:
        ledger = str((base / ledger).resolve())
    state = (base / str(svc.get("state", "state"))).resolve()
    datasets: dict[str, DatasetConfig] = {}
    for i, d in enumerate(raw.get("datasets", []) or []):
        if not isinstance(d, dict):
            raise InvalidDataError(f"{p.name}: datasets[{i}] must be a table.")
        name = _name(d.get("name"), f"datasets[{i}].name")
        if name in datasets:
            raise InvalidDataError(f"{p.name}: data set {name!r} is declared twice.")
        if not isinstance(d.get("data"), str):
            raise InvalidDataError(f'{p.name}: data set {name!r} needs data = "file".')
        schema = load_schema(d.get("schema"), base)
        if schema.dataset != name:
            raise InvalidDataError(
                f"{p.name}: data set {name!r} has a schema for {schema.dataset!r}; the names must agree."
            )
        budget = d.get("budget")
        if not isinstance(budget, dict) or "epsilon" not in budget:
            raise InvalidDataError(f"{p.name}: data set {name!r} needs budget = {{ epsilon = ... }}.")
        delta = budget.get("delta")
        datasets[name] = DatasetConfig(
            name=name,
            source=(base / d["data"]).resolve(),
            schema=schema,
            epsilon=_positive(budget["epsilon"], f"data set {name!r}: budget.epsilon"),
            delta=None if delta is None else float(delta),
            accountant=str(budget.get("accountant", "pld")),
        )
    analysts: dict[str, AnalystConfig] = {}
    for i, a in enumerate(raw.get("analysts", []) or []):
        if not isinstance(a, dict):
            raise InvalidDataError(f"{p.name}: analysts[{i}] must be a table.")
        name = _name(a.get("name"), f"analysts[{i}].name")
        allow = a.get("allowances", {}) or {}
        if not isinstance(allow, dict):
            raise InvalidDataError(f"{p.name}: analyst {name!r}: allowances must map data sets to epsilons.")
        for ds, eps in allow.items():
            if ds not in datasets:
                raise InvalidDataError(
                    f"{p.name}: analyst {name!r} has an allowance on unknown data set {ds!r}."
                )
            _positive(eps, f"analyst {name!r}: allowance on {ds!r}")
            if float(eps) > datasets[ds].epsilon:
                raise InvalidDataError(
                    f"{p.name}: analyst {name!r}: allowance {eps} on {ds!r} exceeds its budget "
                    f"{datasets[ds].epsilon}."
                )
        analysts[name] = AnalystConfig(name, {k: float(v) for k, v in allow.items()})
    return ServiceConfig(
        path=p,
        state=state,
        ledger=ledger,
        datasets=datasets,
        analysts=analysts,
        max_request_bytes=_positive(svc.get("max_request_bytes", 65536), "service.max_request_bytes", True),
        max_upload_bytes=_positive(svc.get("max_upload_bytes", 16 * 2**20), "service.max_upload_bytes", True),
        rate_limit=_positive(svc.get("rate_limit", 20.0), "service.rate_limit"),
        rate_burst=_positive(svc.get("rate_burst", 40), "service.rate_burst", True),
        token_days=_positive(svc.get("token_days", 90.0), "service.token_days"),
        request_timeout=_positive(svc.get("request_timeout", 120.0), "service.request_timeout"),
        dpvi_max_steps=_positive(svc.get("dpvi_max_steps", 5000), "service.dpvi_max_steps", True),
    )


__all__ = ["AnalystConfig", "DatasetConfig", "ServiceConfig", "load_config"]
