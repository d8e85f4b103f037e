"""Real service processes for the tests: a data set with canary values, a config, tokens, a server.

:func:`make_site` writes a survey data set (CSV) whose records carry unique marker values
(:data:`CANARIES`: a name column that is never releasable, and numeric values with marker
digits), its public schema, and a service configuration; :class:`Server` runs ``python -m dpinfer
serve`` on a free port of 127.0.0.1 and keeps its log; :func:`tokens` makes tokens directly in
the service database (the server re-reads it on every request).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

N = 400
#: unique strings of the confidential file: none may appear in any response, error or log line
CANARIES = ("CANARYNAME-7c1e", "37.71828182", "58.31415926")


def write_data(path: Path, n: int = N, seed: int = 5) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    age = np.round(rng.uniform(20, 80, n), 3)
    bmi = np.round(np.clip(rng.normal(27, 4, n), 15, 45), 3)
    age[3] = float(CANARIES[1])
    bmi[7] = float(CANARIES[2]) if float(CANARIES[2]) <= 60 else bmi[7]
    eta = -1.0 + 0.03 * (age - 50) + 0.08 * (bmi - 27)
    smoker = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(int)
    region = rng.choice(["north", "south", "east", "west"], n)
    visits = rng.integers(0, 20, n)
    names = [f"person{i}" for i in range(n)]
    names[11] = CANARIES[0]
    lines = ["age,bmi,smoker,region,visits,name"]
    for i in range(n):
        age_s = CANARIES[1] if i == 3 else f"{age[i]:.3f}"
        bmi_s = CANARIES[2] if i == 7 else f"{bmi[i]:.3f}"
        lines.append(f"{age_s},{bmi_s},{'true' if smoker[i] else 'false'},{region[i]},{visits[i]},{names[i]}")
    path.write_text("\n".join(lines) + "\n")
    return {"age": age, "bmi": bmi, "smoker": smoker.astype(float), "visits": visits.astype(float)}


SCHEMA = {
    "dataset": "survey",
    "neighbouring": "replace-one",
    "rows": {"max": 100000},
    "columns": {
        "age": {"type": "float", "lower": 0, "upper": 120},
        "bmi": {"type": "float", "lower": 10, "upper": 60},
        "smoker": {"type": "bool"},
        "region": {"type": "category", "categories": ["north", "south", "east", "west"]},
        "visits": {"type": "int", "lower": 0, "upper": 50},
        "name": {"type": "string", "release": False},
    },
}


@dataclass
class Site:
    root: Path
    config: Path
    data: Path
    truth: dict[str, np.ndarray]
    extra: dict[str, Any] = field(default_factory=dict)


def make_site(
    root: Path,
    *,
    budget: float = 10.0,
    accountant: str = "pld",
    delta: float | None = 1e-6,
    allowances: dict[str, float] | None = None,
    ledger: str | None = None,
    rate_limit: float = 1000.0,
    rate_burst: int = 1000,
    max_request_bytes: int = 65536,
    request_timeout: float | None = None,
) -> Site:
    root.mkdir(parents=True, exist_ok=True)
    data = root / "secret-records-dir" / "survey.csv"
    data.parent.mkdir(exist_ok=True)
    truth = write_data(data)
    (root / "survey.schema.json").write_text(json.dumps(SCHEMA))
    allowances = allowances or {"alice": 3.0, "bob": 3.0}
    budget_line = f'epsilon = {budget}, accountant = "{accountant}"' + (
        "" if delta is None else f", delta = {delta}"
    )
    lines = [
        "[service]",
        'state = "state"',
        f'ledger = "{ledger or "budget.db"}"',
        f"rate_limit = {rate_limit}",
        f"rate_burst = {rate_burst}",
        f"max_request_bytes = {max_request_bytes}",
        *([] if request_timeout is None else [f"request_timeout = {request_timeout}"]),
        "",
        "[[datasets]]",
        'name = "survey"',
        'data = "secret-records-dir/survey.csv"',
        'schema = "survey.schema.json"',
        f"budget = {{ {budget_line} }}",
    ]
    for name, eps in allowances.items():
        lines += ["", "[[analysts]]", f'name = "{name}"', f"allowances = {{ survey = {eps} }}"]
    cfg = root / "service.toml"
    cfg.write_text("\n".join(lines) + "\n")
    return Site(root, cfg, data, truth)


def tokens(site: Site, specs: dict[str, tuple[str, str, float]]) -> dict[str, tuple[str, str]]:
    """``{label: (holder, role, days)}`` → ``{label: (token, id)}``, made in the service database."""
    from dpinfer.service.auth import Tokens
    from dpinfer.service.config import load_config
    from dpinfer.service.store import Store

    cfg = load_config(site.config)
    t = Tokens(Store(cfg.state / "service.db"))
    out = {}
    for label, (holder, role, days) in specs.items():
        token, tid, _ = t.create(holder, role, days=days)
        out[label] = (token, tid)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``python -m dpinfer serve`` on a free port; ``log`` is its standard error."""

    def __init__(self, site: Site, *, extra_args: tuple[str, ...] = (), scheme: str = "http") -> None:
        self.site = site
        self.port = free_port()
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self.log_path = site.root / f"server-{self.port}.log"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), OMP_NUM_THREADS="1")
        self._log = open(self.log_path, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dpinfer",
                "serve",
                "--config",
                str(site.config),
                "--port",
                str(self.port),
                *extra_args,
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=site.root,
        )
        self.wait_ready(verify=False)

    def wait_ready(self, timeout: float = 60.0, verify: Any = False) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited: {self.log()}")
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=2.0, verify=verify).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start: {self.log()}")
            time.sleep(0.1)

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self._log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()


def headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def start_site(root: Path) -> Site:
    """The shared test site: a survey budget of ε = 20 under the RDP accountant (it accounts the
    GLM's multivariate Gaussian release and the Laplace ones), analysts alice and bob (ε = 4 each),
    dave (ε = 0.3) and carol (no allowance), an owner, an expired and a revoked token; the server
    running. Stop it with ``site.extra["server"].stop()``."""
    s = make_site(root, budget=20.0, accountant="rdp", allowances={"alice": 4.0, "bob": 4.0, "dave": 0.3})
    s.extra["tokens"] = tokens(
        s,
        {
            "owner": ("owner", "owner", 1.0),
            "alice": ("alice", "analyst", 1.0),
            "bob": ("bob", "analyst", 1.0),
            "carol": ("carol", "analyst", 1.0),
            "dave": ("dave", "analyst", 1.0),
            "expired": ("alice", "analyst", 1e-9),
            "revoked": ("alice", "analyst", 1.0),
        },
    )
    server = Server(s)
    s.extra["server"] = server
    tok = s.extra["tokens"]
    r = httpx.delete(f"{server.url}/v1/owner/tokens/{tok['revoked'][1]}", headers=headers(tok["owner"][0]))
    assert r.status_code == 200
    return s


def url(site: Site) -> str:
    return str(site.extra["server"].url)


def tok(site: Site, who: str) -> str:
    return str(site.extra["tokens"][who][0])


def ledger_state(site: Site) -> tuple[int, float]:
    """(number of charges, ε spent) of the survey budget, read from the ledger file itself."""
    from dpinfer.privacy import Ledger

    led = Ledger(site.root / "budget.db")
    return len(led.history("survey")), led.spent("survey")


def endpoints(site: Site, rid: str) -> tuple[list[Any], list[Any], list[Any]]:
    """(analyst-only, any-role, owner-only) routes as (method, path, body); ``rid``: a request id."""
    body = {"dataset": "survey", "column": "bmi", "epsilon": 0.1}
    glm = {"dataset": "survey", "target": "smoker", "features": ["age"], "epsilon": 0.5}
    analyst = [
        ("GET", "/v1/requests", None),
        ("GET", f"/v1/requests/{rid}", None),
        ("POST", "/v1/releases/clamped", body),
        ("POST", "/v1/releases/histogram", {"dataset": "survey", "column": "region", "epsilon": 0.1}),
        ("POST", "/v1/releases/glm", glm),
        ("POST", "/v1/releases/count", {"dataset": "survey", "epsilon": 0.1}),
        (
            "POST",
            "/v1/releases/dpvi",
            {"dataset": "survey", "target": "smoker", "features": ["age"], "epsilon": 0.5, "steps": 20},
        ),
    ]
    anyone = [("GET", "/v1/datasets", None), ("GET", "/v1/datasets/survey", None), ("GET", "/v1/me", None)]
    owner_tid = site.extra["tokens"]["owner"][1]
    owner = [  # the reading routes first, then those that change something
        ("GET", "/v1/owner/overview", None),
        ("GET", "/v1/owner/requests", None),
        ("GET", "/v1/owner/audit", None),
        ("GET", "/v1/owner/tokens", None),
        ("GET", "/v1/owner/analysts", None),
        ("POST", "/v1/owner/analysts", {"name": "mallory", "allowances": {"survey": 1.0}}),
        ("PUT", "/v1/owner/analysts/alice/allowances/survey", {"epsilon": 20.0}),
        ("POST", f"/v1/owner/tokens/{owner_tid}/rotate", {}),
        ("POST", "/v1/owner/tokens", {"principal": "mallory", "role": "owner"}),
        ("DELETE", f"/v1/owner/tokens/{site.extra['tokens']['owner'][1]}", None),
    ]
    return analyst, anyone, owner


def call(
    site: Site, method: str, path: str, body: Any, token: str | None = None, raw_header: str | None = None
) -> httpx.Response:
    h = {} if token is None else headers(token)
    if raw_header is not None:
        h = {"Authorization": raw_header}
    return httpx.request(method, f"{url(site)}{path}", headers=h, json=body, timeout=60)


BAD_BODIES = [
    ("clamped", {"dataset": "survey", "column": "bmi"}, "epsilon"),
    ("clamped", {"dataset": "survey", "column": "bmi", "epsilon": -1}, "epsilon"),
    ("clamped", {"dataset": "survey", "column": "bmi", "epsilon": 0.1, "extra": 1}, "extra"),
    ("clamped", {"dataset": "survey", "column": "bmi", "epsilon": "a lot"}, "epsilon"),
    ("clamped", {"dataset": "nope", "column": "bmi", "epsilon": 0.1}, "dataset"),
    ("clamped", {"dataset": "survey", "column": "weight", "epsilon": 0.1}, "column"),
    ("clamped", {"dataset": "survey", "column": "name", "epsilon": 0.1}, "column"),
    ("clamped", {"dataset": "survey", "column": "region", "epsilon": 0.1}, "column"),
    ("clamped", {"dataset": "survey", "column": "bmi", "epsilon": 0.1, "lower": 30, "upper": 20}, "lower"),
    ("clamped", {"dataset": "survey", "column": "bmi", "epsilon": 0.1, "lower": 100, "upper": 200}, "lower"),
    ("clamped", {"dataset": "survey", "column": "bmi", "epsilon": 0.1, "mechanism": "gaussian"}, "delta"),
    ("clamped", {"dataset": "survey", "column": "bmi", "epsilon": 0.1, "statistic": "median"}, "statistic"),
    (
        "clamped",
        {"dataset": "survey", "column": "bmi", "epsilon": 0.1, "statistic": "sum_and_count"},
        "statistic",
    ),
    ("histogram", {"dataset": "survey", "column": "bmi", "epsilon": 0.1}, "column"),
    ("count", {"dataset": "survey", "epsilon": 0.1}, "dataset"),
    ("glm", {"dataset": "survey", "target": "bmi", "features": ["age"], "epsilon": 1}, "target"),
    ("glm", {"dataset": "survey", "target": "smoker", "features": ["age", "age"], "epsilon": 1}, "features"),
    ("glm", {"dataset": "survey", "target": "smoker", "features": ["region"], "epsilon": 1}, "features[0]"),
    ("glm", {"dataset": "survey", "target": "smoker", "features": [], "epsilon": 1}, "features"),
    (
        "glm",
        {"dataset": "survey", "target": "smoker", "features": ["age"], "epsilon": 1, "delta": 0},
        "delta",
    ),
]


EPS = 0.0625  # exact in binary: 16 of them make 1.0


def release_mean(
    client: httpx.Client, url: str, token: str, column: str = "bmi", eps: float = EPS
) -> httpx.Response:
    body = {"dataset": "survey", "column": column, "epsilon": eps}
    return client.post(f"{url}/v1/releases/clamped", json=body, headers=headers(token), timeout=120)


def race(url: str, toks: list[str], attempts: int) -> list[tuple[str, int, str | None]]:
    """Every token in its own thread (one HTTP client each), all started together."""
    barrier = threading.Barrier(len(toks))
    out: list[tuple[str, int, str | None]] = []
    lock = threading.Lock()

    def worker(token: str) -> None:
        with httpx.Client() as client:
            barrier.wait()
            for _ in range(attempts):
                r = release_mean(client, url, token)
                with lock:
                    out.append((token, r.status_code, r.json().get("id") if r.status_code == 200 else None))

    threads = [threading.Thread(target=worker, args=(t,)) for t in toks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return out
