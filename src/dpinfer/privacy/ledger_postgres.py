"""The ledger in a PostgreSQL database: one budget shared by many hosts (psycopg 3).

Install with ``pip install 'dpinfer[postgres]'``. ``Ledger("postgresql://user@host:port/dbname")``
connects with libpq: whatever the URL leaves out (host, port, user, password, sslmode...) comes
from the standard environment (``PGHOST``, ``PGUSER``, ``PGPASSWORD``, ``PGSERVICE``...) and
``~/.pgpass``. The tables live in their own schema, ``dpinfer``, created by ``dpinfer budget init``.

Concurrency
-----------
A charge is one transaction that first locks the data set's row (``SELECT ... FOR UPDATE``, through
``dpinfer.lock_budget``), then reads the budget's composed state, composes the new event into it
under the budget's accountant and inserts the charge (with the new state) only if the total stays
within the budget. The row lock serialises the charges of one data set across every connection
and host; as the transaction runs at READ COMMITTED, the state read *after* the lock is granted
includes every charge committed before it (and ``dpinfer.charge`` refuses a state that does not
end with the data set's last charge, which the client then composes again). A
transaction aborted by a serialisation failure or a deadlock is retried from the start (with a
random back-off); a transaction that waits longer than the ledger's ``timeout`` for the lock is
refused (``lock_timeout``), and a client that stalls inside a transaction loses it
(``idle_in_transaction_session_timeout``), so a frozen process cannot block a budget forever.

Crashes
-------
If the client dies or the server stops before ``COMMIT``, the server rolls the transaction back:
the charge is absent and, since the caller's release runs only after the commit, nothing was
released. If the connection is lost during ``COMMIT`` itself, the outcome is unknown to the
client: :class:`~dpinfer.errors.LedgerConnectionError` says so (the charge is then either fully
recorded or absent; ``dpinfer budget history`` tells which). No message ever contains the password.

Owner and analysts
------------------
The role that runs ``dpinfer budget init`` owns the schema ``dpinfer`` and its tables: it alone
creates, raises and retires budgets (:meth:`~dpinfer.privacy.ledger.Ledger.raise_budget`,
:meth:`~dpinfer.privacy.ledger.Ledger.retire`). An analyst role gets, from
``dpinfer budget grant --ledger URL --analyst ROLE`` (:data:`ANALYST_GRANTS`), ``SELECT`` on the
tables (the budgets, charges, history and composed state, which hold no data values), and
``EXECUTE`` on three ``SECURITY DEFINER`` functions with a fixed ``search_path``:
``dpinfer.lock_budget`` (the data set's row lock), ``dpinfer.charge`` and ``dpinfer.set_status``
(marks the role's own charge released or failed) -- and no table writes. Triggers (:data:`_GUARDS`)
refuse every write to the tables by a role that is not a member of the schema's owner, so the
grants of older READMEs (``INSERT, UPDATE ON ALL TABLES``) no longer let an analyst change a
budget either; they also refuse deleting a budget, lowering it below what was spent, un-retiring
it, and editing or deleting charges or history, and they write every budget change (even one made
with raw SQL by the owner) to ``budget_events`` with ``session_user``.

What ``dpinfer.charge`` checks, and what it cannot
--------------------------------------------------
Inside the database, under the data set's row lock, the function checks everything SQL can
check: the budget exists and is not retired; the caller composed with the data set's latest
charge (``p_previous``; otherwise SQLSTATE 40001 and the client composes again); the spend after
the charge is finite, never below the spend recorded before it (composition never lowers ε) and
within the budget; the data binding of the fingerprint (as in the module docstring of
:mod:`~dpinfer.privacy.ledger`); the event is a JSON object with a type. It records
``session_user`` (which a caller cannot choose) next to any application identity the caller
passes, and stores the caller's composed state atomically with the charge.

It cannot recompute the ε of the composition: the PLD accountant composes by FFT in Python
(dp-accounting), which PL/pgSQL cannot run. An analyst who calls ``dpinfer.charge`` with
arbitrary arguments can therefore *claim* a smaller spend than the event implies (e.g. charge a
Laplace release at ε = 0.5 with a spend increased by 0.01). We chose to make that lie recorded,
attributed and detectable rather than pretend to prevent it: the charge keeps the event exactly
as claimed next to the spend claimed and the role that made the claim, and
:meth:`~dpinfer.privacy.ledger.Ledger.recompute` (``dpinfer budget check``, run by the owner)
recomposes every charge from its recorded event with dpinfer's accountant and names each charge
whose recorded spend is below the recomputed one, with its role. The same holds for a forged
composed state passed to the function: later honest charges compose onto it and record too
little, and the replay names them all, the forger's charge first. Preventing the lie needs the
arithmetic to run where the analyst has no control: the owner's release service (issue #38),
which charges as the owner's role, is the way to give analysts releases they cannot under-charge.
Direct ``EXECUTE`` grants fit analysts the owner trusts to run dpinfer unmodified.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..errors import (
    BudgetExceededError,
    LedgerConnectionError,
    LedgerFileError,
    LedgerNotFoundError,
    UnknownDatasetError,
)
from .ledger_store import (
    HOW_TO_CREATE,
    SCHEMA_VERSION,
    BudgetChangeError,
    BudgetOwnerError,
    BudgetRetiredError,
    DataBindingError,
    check_version,
    redact,
)

T = TypeVar("T")

SCHEMA = "dpinfer"
_RETRIES = 50
# advisory-lock key serialising concurrent `budget init`s of one database (any fixed 64-bit int)
_CREATE_LOCK = 0x6470696E666572

_DDL: tuple[str, ...] = (
    f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}",
    """CREATE TABLE datasets (
    name TEXT PRIMARY KEY,
    epsilon DOUBLE PRECISION NOT NULL,
    delta DOUBLE PRECISION NOT NULL,
    accountant TEXT NOT NULL,
    neighbouring TEXT NOT NULL,
    created TEXT NOT NULL,
    fingerprint TEXT UNIQUE
)""",
    """CREATE TABLE charges (
    id BIGSERIAL PRIMARY KEY,
    dataset TEXT NOT NULL REFERENCES datasets(name),
    event TEXT NOT NULL,
    label TEXT NOT NULL,
    epsilon_spent DOUBLE PRECISION NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('charged', 'released', 'failed')),
    created TEXT NOT NULL,
    pid INTEGER NOT NULL,
    insecure INTEGER NOT NULL DEFAULT 0,
    host TEXT,
    fingerprint TEXT
)""",
    "CREATE INDEX charges_dataset ON charges (dataset, id)",
    "CREATE INDEX charges_fingerprint ON charges (fingerprint)",
    "CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)
_TABLES = ("datasets", "charges", "ledger_meta")
_FIXED = "SET search_path = dpinfer, pg_catalog, pg_temp"
_OWNER = (
    "pg_has_role(current_user, (SELECT nspowner FROM pg_catalog.pg_namespace WHERE nspname = 'dpinfer'),"
    " 'MEMBER')"
)


def _refuse(message: str, code: str = "DP006") -> str:
    return f"RAISE EXCEPTION 'dpinfer: {message}' USING ERRCODE = '{code}';"


# Version 5: who charged and why, owners, retirement, history, composed state, the guards and the
# analysts' functions (module docstring). Every statement idempotent; run at creation and upgrade.
_GUARDS: tuple[str, ...] = (
    "ALTER TABLE datasets ADD COLUMN IF NOT EXISTS owner TEXT",
    "ALTER TABLE datasets ADD COLUMN IF NOT EXISTS retired INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE datasets ADD COLUMN IF NOT EXISTS change_reason TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE datasets ADD COLUMN IF NOT EXISTS changed_by TEXT",
    "ALTER TABLE charges ADD COLUMN IF NOT EXISTS charged_by TEXT",
    "ALTER TABLE charges ADD COLUMN IF NOT EXISTS authenticated_as TEXT",
    "ALTER TABLE charges ADD COLUMN IF NOT EXISTS purpose TEXT NOT NULL DEFAULT ''",
    """CREATE TABLE IF NOT EXISTS budget_events (
    id BIGSERIAL PRIMARY KEY,
    dataset TEXT NOT NULL,
    action TEXT NOT NULL,
    epsilon DOUBLE PRECISION NOT NULL,
    previous DOUBLE PRECISION,
    reason TEXT NOT NULL DEFAULT '',
    by_user TEXT,
    authenticated_as TEXT,
    created TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS budget_state (
    dataset TEXT PRIMARY KEY REFERENCES datasets(name),
    accountant TEXT NOT NULL,
    last_charge BIGINT NOT NULL,
    spent DOUBLE PRECISION NOT NULL,
    state BYTEA,
    updated TEXT NOT NULL
)""",
    # the composed state (float64 arrays, ~400 KB at 10^4 PLD releases) is rewritten by every
    # charge: stored out of line but uncompressed (pglz on floats cost ~4 ms per 220 KB written and
    # saved little; benchmarks/ledger_charge_cost.py)
    "ALTER TABLE budget_state ALTER COLUMN state SET STORAGE EXTERNAL",
    "INSERT INTO budget_events (dataset, action, epsilon, previous, reason, by_user, authenticated_as,"
    " created) SELECT name, 'register', epsilon, NULL, 'registered before budget history was kept"
    " (schema < 5)', NULL, NULL, created FROM datasets d"
    " WHERE NOT EXISTS (SELECT 1 FROM budget_events e WHERE e.dataset = d.name)",
    """CREATE OR REPLACE FUNCTION utc_now() RETURNS text LANGUAGE sql STABLE AS
$$ SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"') $$""",
    f"""CREATE OR REPLACE FUNCTION require_owner() RETURNS void LANGUAGE plpgsql {_FIXED} AS $$
BEGIN
    IF NOT {_OWNER} THEN
        RAISE EXCEPTION 'dpinfer: only the ledger''s owner (the role owning schema dpinfer) may %',
            'change a budget or write the ledger''s tables; role ' || session_user
            || ' may not (analysts charge through dpinfer.charge)' USING ERRCODE = '42501';
    END IF;
END $$""",
    f"""CREATE OR REPLACE FUNCTION guard_datasets() RETURNS trigger LANGUAGE plpgsql {_FIXED} AS $$
DECLARE
    v_spent double precision;
    v_action text;
BEGIN
    PERFORM require_owner();
    IF TG_OP = 'DELETE' THEN {_refuse("a budget is never deleted (retire it)")} END IF;
    IF TG_OP = 'INSERT' THEN
        v_action := 'register';
    ELSE
        IF (NEW.name, NEW.delta, NEW.accountant, NEW.neighbouring, NEW.fingerprint, NEW.created,
            NEW.owner) IS DISTINCT FROM (OLD.name, OLD.delta, OLD.accountant, OLD.neighbouring,
            OLD.fingerprint, OLD.created, OLD.owner) THEN
            {_refuse("only a budget''s epsilon and retirement may change")}
        END IF;
        IF OLD.retired <> 0 AND NEW.retired = 0 THEN {_refuse("a retired budget stays retired")} END IF;
        SELECT c.epsilon_spent INTO v_spent FROM charges c WHERE c.dataset = NEW.name
            ORDER BY c.id DESC LIMIT 1;
        IF NEW.epsilon < coalesce(v_spent, 0) THEN
            RAISE EXCEPTION 'dpinfer: a budget is never lowered below what was spent (%)', v_spent
                USING ERRCODE = 'DP006';
        END IF;
        v_action := CASE WHEN NEW.retired IS DISTINCT FROM OLD.retired THEN 'retire'
                         WHEN NEW.epsilon > OLD.epsilon THEN 'raise'
                         WHEN NEW.epsilon < OLD.epsilon THEN 'lower' END;
    END IF;
    IF v_action IS NOT NULL THEN  -- every change of the budget is in its history, with its role
        INSERT INTO budget_events (dataset, action, epsilon, previous, reason, by_user,
                                   authenticated_as, created)
        VALUES (NEW.name, v_action, NEW.epsilon, CASE WHEN TG_OP = 'UPDATE' THEN OLD.epsilon END,
                coalesce(NEW.change_reason, ''), coalesce(NEW.changed_by, session_user), session_user,
                utc_now());
    END IF;
    NEW.change_reason := '';  -- a later change made without a reason never inherits this one
    NEW.changed_by := NULL;
    RETURN NEW;
END $$""",
    f"""CREATE OR REPLACE FUNCTION guard_charges() RETURNS trigger LANGUAGE plpgsql {_FIXED} AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN {_refuse("charges are never deleted")} END IF;
    PERFORM require_owner();
    IF TG_OP = 'UPDATE' AND (OLD.status <> 'charged' OR NEW.status NOT IN ('released', 'failed') OR
        (NEW.id, NEW.dataset, NEW.event, NEW.label, NEW.epsilon_spent, NEW.created, NEW.pid, NEW.insecure,
         NEW.host, NEW.fingerprint, NEW.charged_by, NEW.authenticated_as, NEW.purpose)
        IS DISTINCT FROM (OLD.id, OLD.dataset, OLD.event, OLD.label, OLD.epsilon_spent, OLD.created, OLD.pid,
         OLD.insecure, OLD.host, OLD.fingerprint, OLD.charged_by, OLD.authenticated_as, OLD.purpose)) THEN
        {_refuse("a charge is never edited (only its status moves once from charged to released or failed)")}
    END IF;
    RETURN NEW;
END $$""",
    f"""CREATE OR REPLACE FUNCTION guard_history() RETURNS trigger LANGUAGE plpgsql {_FIXED} AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN {_refuse("the budget history is append-only")} END IF;
    PERFORM require_owner();
    RETURN NEW;
END $$""",
    f"""CREATE OR REPLACE FUNCTION guard_state() RETURNS trigger LANGUAGE plpgsql {_FIXED} AS $$
BEGIN
    PERFORM require_owner();
    RETURN coalesce(NEW, OLD);
END $$""",
    f"""CREATE OR REPLACE FUNCTION refuse_truncate() RETURNS trigger LANGUAGE plpgsql {_FIXED} AS $$
BEGIN
    {_refuse("the ledger''s tables are never truncated")}
END $$""",
    *(
        statement
        for table, guard in (("datasets", "guard_datasets"), ("charges", "guard_charges"),
                             ("budget_events", "guard_history"), ("budget_state", "guard_state"))
        for statement in (
            f"DROP TRIGGER IF EXISTS guard ON {table}",
            f"CREATE TRIGGER guard BEFORE INSERT OR UPDATE OR DELETE ON {table} FOR EACH ROW "
            f"EXECUTE FUNCTION {guard}()",
        )
    ),
    *(
        statement
        for table in ("datasets", "charges", "budget_events")
        for statement in (
            f"DROP TRIGGER IF EXISTS no_truncate ON {table}",
            f"CREATE TRIGGER no_truncate BEFORE TRUNCATE ON {table} FOR EACH STATEMENT "
            "EXECUTE FUNCTION refuse_truncate()",
        )
    ),
    f"""CREATE OR REPLACE FUNCTION lock_budget(p_dataset text) RETURNS boolean LANGUAGE plpgsql
SECURITY DEFINER {_FIXED} AS $$
BEGIN
    PERFORM 1 FROM datasets WHERE name = p_dataset FOR UPDATE;
    RETURN FOUND;
END $$""",
    f"""CREATE OR REPLACE FUNCTION charge(
    p_dataset text, p_event text, p_label text, p_epsilon_spent double precision, p_previous bigint,
    p_state bytea, p_pid integer, p_insecure integer, p_host text, p_fingerprint text,
    p_charged_by text, p_purpose text
) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER {_FIXED} AS $$
DECLARE
    b datasets%ROWTYPE;
    v_event jsonb;
    v_last bigint;
    v_spent double precision;
    v_holder text;
    v_id bigint;
BEGIN
    IF p_fingerprint IS NOT NULL THEN
        IF p_fingerprint !~ '^[0-9a-f]{{16,128}}$' THEN
            {_refuse("a fingerprint is a hex digest", "DP003")}
        END IF;
        PERFORM pg_advisory_xact_lock(('x0' || substr(p_fingerprint, 1, 15))::bit(64)::bigint);
    END IF;
    SELECT * INTO b FROM datasets WHERE name = p_dataset FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'dpinfer: dataset % is not registered', p_dataset USING ERRCODE = 'DP004';
    END IF;
    IF b.retired <> 0 THEN
        RAISE EXCEPTION 'dpinfer: the budget of % was retired by its owner: it refuses every charge',
            p_dataset USING ERRCODE = 'DP001';
    END IF;
    BEGIN
        v_event := p_event::jsonb;
    EXCEPTION WHEN others THEN
        {_refuse("the event is not JSON")}
    END;
    IF jsonb_typeof(v_event) <> 'object' OR v_event->'type' IS NULL THEN
        {_refuse("the event has no type")}
    END IF;
    SELECT c.id, c.epsilon_spent INTO v_last, v_spent FROM charges c WHERE c.dataset = p_dataset
        ORDER BY c.id DESC LIMIT 1;
    IF v_last IS DISTINCT FROM p_previous THEN
        RAISE EXCEPTION 'dpinfer: another charge of % was committed meanwhile; compose again', p_dataset
            USING ERRCODE = '40001';
    END IF;
    IF p_epsilon_spent IS NULL OR p_epsilon_spent = 'NaN'::float8 OR p_epsilon_spent = 'Infinity'::float8 THEN
        {_refuse("the spend after a charge must be finite", "DP002")}
    END IF;
    IF p_epsilon_spent < coalesce(v_spent, 0) THEN
        RAISE EXCEPTION 'dpinfer: a charge never lowers the spend of % (claimed %, recorded %)', p_dataset,
            p_epsilon_spent, v_spent USING ERRCODE = 'DP002';
    END IF;
    IF p_epsilon_spent > b.epsilon * (1 + 1e-9) THEN
        RAISE EXCEPTION 'dpinfer: charging % would bring its spend to % over the budget %', p_dataset,
            p_epsilon_spent, b.epsilon USING ERRCODE = 'DP002';
    END IF;
    IF p_fingerprint IS NOT NULL THEN
        IF b.fingerprint IS NOT NULL AND b.fingerprint <> p_fingerprint THEN
            {_refuse("the data released are not the data registered for this budget", "DP003")}
        END IF;
        SELECT d.name INTO v_holder FROM datasets d WHERE d.fingerprint = p_fingerprint
            AND d.name <> p_dataset LIMIT 1;
        IF v_holder IS NULL THEN
            SELECT c.dataset INTO v_holder FROM charges c WHERE c.fingerprint = p_fingerprint
                AND c.dataset <> p_dataset LIMIT 1;
        END IF;
        IF v_holder IS NOT NULL THEN
            RAISE EXCEPTION 'dpinfer: these data are bound to dataset %: %', v_holder,
                'the same data cannot spend a second budget' USING ERRCODE = 'DP003';
        END IF;
    END IF;
    INSERT INTO charges (dataset, event, label, epsilon_spent, status, created, pid, insecure, host,
                         fingerprint, charged_by, authenticated_as, purpose)
    VALUES (p_dataset, p_event, coalesce(p_label, ''), p_epsilon_spent, 'charged', utc_now(),
            coalesce(p_pid, 0),
            CASE WHEN coalesce(p_insecure, 0) <> 0 THEN 1 ELSE 0 END, p_host, p_fingerprint,
            coalesce(nullif(p_charged_by, ''), session_user), session_user, coalesce(p_purpose, ''))
    RETURNING id INTO v_id;
    IF p_state IS NOT NULL THEN
        INSERT INTO budget_state (dataset, accountant, last_charge, spent, state, updated)
        VALUES (p_dataset, b.accountant, v_id, p_epsilon_spent, p_state, utc_now())
        ON CONFLICT (dataset) DO UPDATE SET accountant = EXCLUDED.accountant,
            last_charge = EXCLUDED.last_charge, spent = EXCLUDED.spent, state = EXCLUDED.state,
            updated = EXCLUDED.updated;
    END IF;
    RETURN v_id;
END $$""",
    f"""CREATE OR REPLACE FUNCTION set_status(p_id bigint, p_status text) RETURNS void LANGUAGE plpgsql
SECURITY DEFINER {_FIXED} AS $$
BEGIN
    IF p_status NOT IN ('released', 'failed') THEN {_refuse("a charge is marked released or failed")} END IF;
    UPDATE charges SET status = p_status
        WHERE id = p_id AND status = 'charged' AND (authenticated_as = session_user OR {_OWNER});
END $$""",
    *(f"REVOKE ALL ON FUNCTION {f} FROM PUBLIC" for f in ("lock_budget(text)", "set_status(bigint, text)")),
    "REVOKE ALL ON FUNCTION charge(text, text, text, double precision, bigint, bytea, integer, integer,"
    " text, text, text, text) FROM PUBLIC",
)
# Bringing a ledger of an older schema version up to SCHEMA_VERSION (each statement idempotent).
_MIGRATION: tuple[str, ...] = (
    "ALTER TABLE charges ADD COLUMN IF NOT EXISTS fingerprint TEXT",  # version 4
    "CREATE INDEX IF NOT EXISTS charges_fingerprint ON charges (fingerprint)",
    *_GUARDS,  # version 5
)

#: What ``dpinfer budget grant`` gives an analyst role (``{role}``: the quoted role name): first
#: every earlier privilege on the tables is revoked (e.g. the ``INSERT, UPDATE`` of older READMEs).
ANALYST_GRANTS: tuple[str, ...] = (
    "REVOKE ALL ON ALL TABLES IN SCHEMA dpinfer FROM {role}",
    "REVOKE ALL ON ALL SEQUENCES IN SCHEMA dpinfer FROM {role}",
    "GRANT USAGE ON SCHEMA dpinfer TO {role}",
    "GRANT SELECT ON dpinfer.datasets, dpinfer.charges, dpinfer.budget_events, dpinfer.budget_state, "
    "dpinfer.ledger_meta TO {role}",
    "GRANT EXECUTE ON FUNCTION dpinfer.lock_budget(text), dpinfer.set_status(bigint, text), "
    "dpinfer.charge(text, text, text, double precision, bigint, bytea, integer, integer, text, text,"
    " text, text) TO {role}",
)
# SQLSTATEs raised by the functions and triggers above, and the error each becomes in Python.
_ERRORS: dict[str, type[Exception]] = {
    "DP001": BudgetRetiredError,
    "DP002": BudgetExceededError,
    "DP003": DataBindingError,
    "DP004": UnknownDatasetError,
    "DP006": BudgetChangeError,
    "42501": BudgetOwnerError,
}


def _fingerprint_key(fingerprint: str) -> int:
    """The advisory-lock key of a fingerprint: its first 60 bits (a collision only serialises two
    unrelated charges a little more)."""
    return int(fingerprint[:15], 16)


class _PostgresTx:
    """:class:`~dpinfer.privacy.ledger_store.Tx` over one psycopg connection."""

    lock_row = " FOR UPDATE"

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = self._conn.execute(sql.replace("?", "%s"), tuple(params))
        return cur.fetchall() if cur.description is not None else []

    def insert(self, sql: str, params: Sequence[Any]) -> int:
        return int(self._conn.execute(sql.replace("?", "%s") + " RETURNING id", tuple(params)).fetchone()[0])

    def ddl(self, statement: str) -> None:
        """Run a schema statement verbatim (no placeholders: PL/pgSQL bodies contain ``%``)."""
        self._conn.execute(statement)

    def lock_datasets(self) -> None:
        """Registrations wait for each other (charges, which lock single rows, do not wait)."""
        self._conn.execute("LOCK TABLE datasets IN SHARE ROW EXCLUSIVE MODE")

    def lock_fingerprint(self, fingerprint: str) -> None:
        """Registrations and charges of the same data wait for each other (a transaction-scoped
        advisory lock keyed by the fingerprint, released at commit or rollback)."""
        self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (_fingerprint_key(fingerprint),))

    def lock_budget(self, dataset: str) -> None:
        """The data set's row lock, through ``dpinfer.lock_budget`` (analysts have no ``UPDATE``)."""
        self._conn.execute("SELECT dpinfer.lock_budget(%s)", (dataset,))

    def user(self) -> str:
        return str(self._conn.execute("SELECT session_user").fetchone()[0])

    def is_owner(self, owner: str | None) -> bool:
        return bool(self._conn.execute(f"SELECT {_OWNER}").fetchone()[0])

    def record_charge(self, charge: dict[str, Any]) -> int:
        row = self._conn.execute(
            "SELECT dpinfer.charge(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                charge["dataset"], charge["event"], charge["label"], charge["epsilon_spent"],
                charge["previous"], charge.get("state"), charge["pid"], charge["insecure"],
                charge["host"], charge["fingerprint"], charge["charged_by"], charge["purpose"],
            ),
        ).fetchone()
        return int(row[0])

    def set_status(self, charge_id: int, status: str) -> None:
        self._conn.execute("SELECT dpinfer.set_status(%s, %s)", (charge_id, status))


class PostgresStore:
    """The ledger in the PostgreSQL database named by ``url`` (see the module docstring).

    Parameters
    ----------
    url
        ``postgresql://[user[:password]@][host][:port][/dbname][?param=value...]``.
    timeout
        Seconds a charge may wait for another client's lock on the same data set.
    """

    backend = "postgresql"

    def __init__(self, url: str, timeout: float) -> None:
        try:
            import psycopg
            from psycopg.conninfo import conninfo_to_dict
        except ImportError:
            raise LedgerConnectionError(
                f"the PostgreSQL ledger {redact(url)} needs psycopg 3: pip install 'dpinfer[postgres]'."
            ) from None
        self._psycopg = psycopg
        try:
            params: dict[str, Any] = dict(conninfo_to_dict(url))
        except psycopg.Error as exc:
            raise LedgerFileError(f"cannot read the ledger URL {redact(url)}: {redact(exc)}") from None
        self._secret = str(params["password"]) if params.get("password") else None
        self.timeout = float(timeout)
        ms = max(int(self.timeout * 1000), 1)
        idle_ms = max(ms, 60_000)
        settings = (
            f"-c search_path={SCHEMA} -c lock_timeout={ms} -c idle_in_transaction_session_timeout={idle_ms}"
        )
        params["options"] = f"{params.get('options', '')} {settings}".strip()
        params.setdefault("application_name", "dpinfer-ledger")
        self._params = params
        self._local = threading.local()
        where = params.get("host") or "(libpq default host)"
        self.location = redact(
            f"postgresql://{params.get('user', '')}{'@' if params.get('user') else ''}{where}"
            f"{':' + str(params['port']) if params.get('port') else ''}/{params.get('dbname', '')}"
        )

    def _scrub(self, exc: BaseException) -> str:
        return " ".join(redact(exc, self._secret).split())

    def _refusal(self, what: str, exc: Any) -> str:
        """The message of a refusal raised inside the database (a guard, a charge function or a
        missing privilege)."""
        primary = getattr(getattr(exc, "diag", None), "message_primary", None) or str(exc)
        text = " ".join(redact(primary, self._secret).split())
        if getattr(exc, "sqlstate", None) == "42501" and "dpinfer:" not in text:
            text += (
                " -- only the ledger's owner (the role owning schema dpinfer) may register, raise or "
                "retire budgets or write its tables; analysts charge through dpinfer.charge "
                "(`dpinfer budget grant`)"
            )
        return f"{what}: ledger {self.location} refused it: {text}. Nothing was changed, charged or released."

    def grant(self, role: str) -> None:
        """Give ``role`` the analyst's privileges (:data:`ANALYST_GRANTS`), revoking any other
        privilege it had on the ledger's tables; must be run by the ledger's owner."""
        from psycopg import sql

        def run(tx: _PostgresTx) -> None:
            tx.rows("SELECT dpinfer.require_owner()")
            for statement in ANALYST_GRANTS:
                tx._conn.execute(sql.SQL(statement).format(role=sql.Identifier(role)))

        self.transaction(run, write=True, what=f"granting {role!r} the analyst's privileges")

    def _connect(self, what: str) -> Any:
        try:
            return self._psycopg.connect(**self._params)
        except self._psycopg.Error as exc:
            raise LedgerConnectionError(
                f"{what}: cannot connect to ledger {self.location}: {self._scrub(exc)}. Nothing was "
                "recorded or released. Check the URL, PG* environment variables and ~/.pgpass."
            ) from None

    @classmethod
    def open(cls, url: str, timeout: float, *, create: bool) -> PostgresStore:
        """The ledger in the database ``url``; its schema created first if ``create``."""
        store = cls(url, timeout)
        if create:
            store.create()
        kind, version = store.kind()
        if kind == "empty":
            raise LedgerNotFoundError(f"no ledger in database {store.location}; {HOW_TO_CREATE}.")
        if kind == "denied":
            raise LedgerConnectionError(
                f"the user of {store.location} may not use the ledger's schema {SCHEMA!r}; its owner can "
                "let it charge (and read, but not change, the budgets) with `dpinfer budget grant "
                "--ledger URL --analyst <user>` (GRANT USAGE ON SCHEMA dpinfer, SELECT on its tables and "
                "EXECUTE on its charge functions; no table writes)."
            )
        if kind == "other":
            raise LedgerFileError(
                f"database {store.location} has a schema {SCHEMA!r} that is not a complete dpinfer "
                "ledger; it was left untouched. Use another database for the ledger."
            )
        check_version(version, store.location)
        if version is None or version < SCHEMA_VERSION:
            store.migrate()
        return store

    def migrate(self) -> None:
        """Bring a ledger of an older schema version up to :data:`SCHEMA_VERSION` (in place, once,
        under the creation lock); the ledger's owner must do it (it alters the tables)."""

        def upgrade(tx: _PostgresTx) -> None:
            tx.rows("SELECT pg_advisory_xact_lock(?)", (_CREATE_LOCK,))
            row = tx.rows("SELECT value FROM ledger_meta WHERE key = 'schema_version'")
            if row and int(row[0][0]) >= SCHEMA_VERSION:
                return  # another client did it meanwhile
            for statement in _MIGRATION:
                tx.ddl(statement)
            tx.rows(
                "INSERT INTO ledger_meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) "
                "DO UPDATE SET value = EXCLUDED.value",
                (str(SCHEMA_VERSION),),
            )

        try:
            self.transaction(upgrade, write=True, what="upgrading the ledger's schema")
        except LedgerFileError as exc:
            raise LedgerFileError(
                f"ledger {self.location} has an older schema and must be upgraded to version "
                f"{SCHEMA_VERSION} by its owner (the database user who ran `dpinfer budget init`): "
                f"open it once as that user, e.g. `dpinfer budget show --ledger URL` ({exc})"
            ) from None

    def kind(self) -> tuple[str, int | None]:
        """``("ledger", version)``, ``("empty", None)`` (no ``dpinfer`` schema), ``("denied", None)``
        (the user may not use it) or ``("other", None)``."""

        def look(tx: _PostgresTx) -> tuple[str, int | None]:
            found = tx.rows(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = ? AND c.relkind = 'r'",
                (SCHEMA,),
            )
            schema = tx.rows("SELECT 1 FROM pg_namespace WHERE nspname = ?", (SCHEMA,))
            names = {r[0] for r in found}
            if not schema:
                return "empty", None
            if not tx.rows("SELECT has_schema_privilege(?, 'USAGE')", (SCHEMA,))[0][0]:
                return "denied", None
            if not set(_TABLES) <= names:
                return "other", None
            row = tx.rows("SELECT value FROM ledger_meta WHERE key = 'schema_version'")
            return "ledger", int(row[0][0]) if row else None

        return self.transaction(look, write=False, what="opening the ledger")

    def create(self) -> None:
        """Create the ``dpinfer`` schema and its tables; a ledger already there is kept as it is."""

        def make(tx: _PostgresTx) -> None:
            tx.rows("SELECT pg_advisory_xact_lock(?)", (_CREATE_LOCK,))
            if tx.rows("SELECT 1 FROM pg_namespace WHERE nspname = ?", (SCHEMA,)):
                return  # a ledger (or something else, refused by open) is already there
            for statement in (*_DDL, *_GUARDS):
                tx.ddl(statement)
            tx.rows(
                "INSERT INTO ledger_meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )

        self.transaction(make, write=True, what="creating the ledger")

    def transaction(self, body: Callable[[_PostgresTx], T], *, write: bool, what: str) -> T:
        """Run ``body`` in one transaction (READ COMMITTED for writes, REPEATABLE READ READ ONLY
        for reads); retried on serialisation failures and deadlocks."""
        errors = self._psycopg.errors
        for attempt in range(_RETRIES):
            reused = getattr(self._local, "conn", None) is not None
            conn = self._kept(what)
            committing = False
            keep = False
            try:
                level = self._psycopg.IsolationLevel
                conn.isolation_level = level.READ_COMMITTED if write else level.REPEATABLE_READ
                conn.read_only = not write
                result = body(_PostgresTx(conn))
                committing = True
                conn.commit()
                keep = True
                return result
            except (errors.SerializationFailure, errors.DeadlockDetected):
                _rollback(conn)
                if attempt == _RETRIES - 1:
                    raise LedgerConnectionError(
                        f"{what}: ledger {self.location} stayed too contended ({_RETRIES} serialisation "
                        "retries); nothing was recorded or released. Try again."
                    ) from None
                time.sleep(random.uniform(0.001, 0.005) * min(attempt + 1, 20))
            except errors.LockNotAvailable:
                _rollback(conn)
                raise LedgerConnectionError(
                    f"{what}: waited more than {self.timeout:g} s for another client's lock in ledger "
                    f"{self.location}; nothing was recorded or released. Try again, or pass a longer "
                    "timeout."
                ) from None
            except self._psycopg.OperationalError as exc:
                if reused and not committing and attempt < _RETRIES - 1:
                    # a kept connection the server closed meanwhile (a restart, an idle timeout):
                    # nothing was committed, so the transaction runs again on a new connection
                    continue
                outcome = (
                    "the connection was lost while committing: the charge is either fully recorded or "
                    "absent (see `dpinfer budget history`)"
                    if committing
                    else "nothing was recorded (the transaction was rolled back)"
                )
                raise LedgerConnectionError(
                    f"{what}: lost the connection to ledger {self.location} ({self._scrub(exc)}); "
                    f"{outcome}. Nothing was released."
                ) from None
            except self._psycopg.Error as exc:
                _rollback(conn)
                mapped = _ERRORS.get(getattr(exc, "sqlstate", None) or "")
                if mapped is not None:
                    raise mapped(self._refusal(what, exc)) from None
                raise LedgerFileError(
                    f"{what}: ledger {self.location} refused the operation ({self._scrub(exc)}); "
                    "nothing was recorded or released. Is it a dpinfer ledger of this version?"
                ) from None
            except BaseException as exc:
                _rollback(conn)
                # a refusal raised by the body (budget exceeded, data binding, ...) leaves the
                # connection as it was; anything else (an interrupt) drops it
                keep = isinstance(exc, Exception)
                raise
            finally:
                if not keep:
                    self._drop()
        raise AssertionError("unreachable")  # pragma: no cover

    def _kept(self, what: str) -> Any:
        """This thread's open connection to the ledger, opened on first use and reused by every
        transaction (a new connection per transaction costs a TCP handshake and authentication,
        more than the charge itself); dropped after a fork and after any database error. Only
        transaction-scoped state is set on it (advisory locks are ``_xact``; isolation level and
        read-only are set before every transaction)."""
        kept = getattr(self._local, "conn", None)
        if kept is not None and kept[0] == os.getpid() and not kept[1].closed:
            return kept[1]
        self._local.conn = None
        conn = self._connect(what)
        self._local.conn = (os.getpid(), conn)
        return conn

    def _drop(self) -> None:
        kept = getattr(self._local, "conn", None)
        self._local.conn = None
        if kept is not None and kept[0] == os.getpid():  # a forked parent's connection is not closed
            try:
                kept[1].close()
            except Exception:  # noqa: BLE001 - it is being dropped anyway
                pass

    def integrity_check(self) -> bool:
        """All tables present, the schema version known, and no charge of an unknown data set."""

        def check(tx: _PostgresTx) -> bool:
            orphans = tx.rows(
                "SELECT count(*) FROM charges c LEFT JOIN datasets d ON d.name = c.dataset "
                "WHERE d.name IS NULL"
            )
            return orphans[0][0] == 0

        kind, version = self.kind()
        return kind == "ledger" and version == SCHEMA_VERSION and self.transaction(
            check, write=False, what="checking the ledger"
        )


def _rollback(conn: Any) -> None:
    try:
        conn.rollback()
    except Exception:  # noqa: BLE001 - the connection is closed next anyway
        pass
