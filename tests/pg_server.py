"""A real, throw-away PostgreSQL server for the tests, started from the binaries installed here.

:func:`find_binaries` looks for ``initdb`` / ``pg_ctl`` on ``PATH``, in ``/usr/local/bin`` and in
``/usr/lib/postgresql/*/bin``. :class:`PGServer` runs ``initdb`` in a fresh temporary folder and
``pg_ctl start`` on a free port of 127.0.0.1 (no unix socket outside that folder), trust
authentication for the test user ``dpinfer`` and password (SCRAM) authentication for the user
``secret`` (to test that passwords stay out of messages). As root (CI runs ``make test`` as root)
``initdb`` refuses to run, so every server command runs as the ``postgres`` user (``runuser``);
the folder is made theirs. ``fsync=off``: the tests stop the server, never the machine (the
operating system keeps what was written), and crash recovery then skips syncing every file
(``PGServer(fsync=True)`` for timings comparable with a durable SQLite file).
Each test gets its own database (:meth:`PGServer.new_database`).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PASSWORD = "s3cret-Pa55word"


def find_binaries() -> tuple[str, str] | None:
    """``(initdb, pg_ctl)``, or None where PostgreSQL's server binaries are not installed."""
    dirs = [*os.environ.get("PATH", "").split(os.pathsep), "/usr/local/bin"]
    dirs += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for d in dirs:
        initdb, pg_ctl = Path(d, "initdb"), Path(d, "pg_ctl")
        if initdb.is_file() and pg_ctl.is_file():
            return str(initdb), str(pg_ctl)
    return None


def why_unavailable() -> str | None:
    """Why no server can be started here (None: one can)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg 3 is not installed (pip install 'dpinfer[postgres]'); PostgreSQL ledger tests skipped"
    if find_binaries() is None:
        return "no PostgreSQL server binaries (initdb, pg_ctl) installed; PostgreSQL ledger tests skipped"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root without a 'postgres' user to run initdb as; PostgreSQL tests skipped"
        if shutil.which("runuser") is None and shutil.which("su") is None:
            return "running as root without runuser/su; PostgreSQL tests skipped"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PGServer:
    """One PostgreSQL cluster in a temporary folder (see the module docstring)."""

    def __init__(self, fsync: bool = False) -> None:
        self.fsync = fsync
        found = find_binaries()
        assert found is not None
        self.initdb, self.pg_ctl = found
        self.port = _free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="dpinfer-pg-"))
        self.data = self.dir / "data"
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.dir.chmod(0o700)
        self._count = 0

    def _run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = list(cmd)
        if self._as_postgres:
            argv = (
                ["runuser", "-u", "postgres", "--", *argv]
                if shutil.which("runuser")
                else ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(argv)]
            )
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=self.dir)
        if check and done.returncode != 0:
            log = (self.dir / "log").read_text() if (self.dir / "log").exists() else ""
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stdout}{done.stderr}{log[-2000:]}")
        return done

    def init(self) -> PGServer:
        self._run(
            self.initdb, "-D", str(self.data), "-U", "dpinfer", "-A", "trust", "--no-sync", "-E", "UTF8"
        )
        hba = self.data / "pg_hba.conf"
        rules = (
            "local all all trust\n"
            "host all secret 127.0.0.1/32 scram-sha-256\n"
            "host all all 127.0.0.1/32 trust\n"
        )
        # the data folder belongs to postgres: write through a file it can read, then copy as it
        tmp = self.dir / "hba.tmp"
        tmp.write_text(rules)
        tmp.chmod(0o644)
        self._run("cp", str(tmp), str(hba))
        self.start()
        self.sql("postgres", f"CREATE ROLE secret LOGIN PASSWORD '{PASSWORD}'")
        return self

    def start(self) -> None:
        opts = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=200 "
            f"-c shared_buffers=16MB -c fsync={'on' if self.fsync else 'off'}"
        )
        self._run(self.pg_ctl, "-D", str(self.data), "-l", str(self.dir / "log"), "-w", "-t", "30",
                  "-o", opts, "start")

    def stop(self, mode: str = "fast") -> None:
        self._run(self.pg_ctl, "-D", str(self.data), "-m", mode, "-w", "-t", "30", "stop", check=False)

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()

    def url(self, dbname: str = "postgres", user: str = "dpinfer", password: str | None = None) -> str:
        auth = f"{user}:{password}" if password else user
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{dbname}"

    def sql(self, dbname: str, statement: str) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.url(dbname), autocommit=True) as conn:
            cur = conn.execute(statement)
            return cur.fetchall() if cur.description else []

    def new_database(self, owner: str = "dpinfer") -> str:
        """A fresh, empty database; its URL (user ``dpinfer``, trust authentication)."""
        self._count += 1
        name = f"t{os.getpid()}_{self._count}"
        self.sql("postgres", f"CREATE DATABASE {name} OWNER {owner}")
        return self.url(name)

    def close(self) -> None:
        self.stop("immediate")
        for _ in range(20):
            try:
                shutil.rmtree(self.dir)
                return
            except OSError:  # pragma: no cover - the server may still be writing
                time.sleep(0.1)
