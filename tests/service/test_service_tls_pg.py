"""The service over TLS, and on a PostgreSQL ledger (slow; real servers).

* ``dpinfer serve --certfile --keyfile``: HTTPS with a certificate made here by ``openssl``; the
  client verifies it (a client that does not trust it is refused by TLS, before any request).
* A PostgreSQL ledger (a throw-away server from tests/pg_server.py): releases charged there with
  who charged them, and 16 clients racing for one allowance never overspend it.
"""

from __future__ import annotations

import shutil
import subprocess

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("argon2")

from service_helpers import EPS, Server, headers, make_site, race, tokens  # noqa: E402

import dpinfer  # noqa: E402
from dpinfer.privacy import Ledger  # noqa: E402
from dpinfer.privacy.report import PrivateRelease  # noqa: E402
from pg_server import PGServer, why_unavailable  # noqa: E402

pytestmark = pytest.mark.slow


def test_https_with_a_certificate(tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    site = make_site(tmp_path / "site", accountant="pure", delta=None)
    made = tokens(site, {"alice": ("alice", "analyst", 1.0)})
    server = Server(site, extra_args=("--certfile", str(cert), "--keyfile", str(key)), scheme="https")
    try:
        assert server.url.startswith("https://")
        with dpinfer.connect(server.url, made["alice"][0], verify=str(cert)) as svc:
            rel = svc.mean("survey", "bmi", epsilon=0.5)
        assert isinstance(rel, PrivateRelease) and rel.privacy.accounted
        with pytest.raises(httpx.ConnectError):  # a client that does not trust the certificate
            httpx.get(f"{server.url}/v1/me", headers=headers(made["alice"][0]))
        with pytest.raises(httpx.HTTPError):  # plain HTTP to the TLS port
            httpx.get(f"http://127.0.0.1:{server.port}/v1/health", timeout=5)
        assert "serving 1 data set(s) on https://" in server.log()
    finally:
        server.stop()


def test_a_postgresql_ledger_records_who_charged_and_holds_therace(tmp_path):
    reason = why_unavailable()
    if reason:
        pytest.skip(reason)
    pg = PGServer().init()
    try:
        url = pg.new_database()
        site = make_site(
            tmp_path,
            budget=3.0,
            accountant="pure",
            delta=None,
            ledger=url,
            allowances={"alice": 1.0, "bob": 1.0},
        )
        made = tokens(
            site, {f"a{i}": ("alice", "analyst", 1.0) for i in range(16)} | {"bob": ("bob", "analyst", 1.0)}
        )
        server = Server(site)
        try:
            with dpinfer.connect(server.url, made["bob"][0]) as svc:
                rel = svc.mean("survey", "age", epsilon=0.25, purpose="pg check")
            results = race(server.url, [made[f"a{i}"][0] for i in range(16)], attempts=2)
            ok = [r for r in results if r[1] == 200]
            assert len(ok) == 16 and {r[1] for r in results if r[1] != 200} == {409}
            led = Ledger(url)
            hist = led.history("survey")
            assert len(hist) == 17 and led.spent("survey") == pytest.approx(16 * EPS + 0.25)
            by = {h["charged_by"] for h in hist}
            assert by == {"alice", "bob"}
            bob = [h for h in hist if h["charged_by"] == "bob"][0]
            assert rel.details["id"] in bob["label"] and bob["purpose"] == "pg check"
            assert "s3cret" not in server.log() and url not in server.log()
        finally:
            server.stop()
    finally:
        pg.close()
