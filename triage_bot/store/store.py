"""The database: SQLite by default, PostgreSQL by URL, through SQLAlchemy Core.

Store is the one object callers hold; each table's methods are a mixin of their own module:
installations (store_installations.py), triages (store_triages.py), sticky comments
(store_comments.py), locks and claims (store_locks.py). The jobs, failures and comment
sections are parts of it (store.jobs, store.failures, store.sections). This module makes the
engine and accepts deliveries.

Concurrency, which matters because several servers and workers may share one database:
- A delivery is accepted once: its id is the primary key of `deliveries`, the insert either
  wins or raises IntegrityError, and the loser answers "duplicate". The delivery row, the job
  row and any installation change are written in one transaction, so a delivery is never
  recorded without its work (or the other way round).
- The comment lock is a leased row in `locks` (store_locks.py): no database transaction is
  held open while the holder talks to GitHub, and a dead holder blocks only until its lease
  ends.
- On SQLite every transaction starts with BEGIN IMMEDIATE: two writers never both hold a read
  snapshot and then deadlock upgrading it (SQLITE_BUSY); they queue on the busy timeout.

A full disk or a failing file is an error, never a crash: store_sqlite.py prepares each SQLite
connection (no mmap of the database, the WAL's -shm allocated ahead, no new connection on a
full disk), and store_errors.py says which errors mean "storage unavailable".
`check_writable` is /healthz's probe: a small write that must commit within a short wait.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.pool import ConnectionPoolEntry

from triage_bot.config import normalize_database_url
from triage_bot.store import schema
from triage_bot.store.comment_sections import CommentSections
from triage_bot.store.failure_records import FailureRecords, JobFailure
from triage_bot.store.ledger import JobLedger, NewJob
from triage_bot.store.schema import deliveries, locks
from triage_bot.store.store_comments import CommentsMixin
from triage_bot.store.store_installations import InstallationChange, InstallationsMixin
from triage_bot.store.store_locks import LocksMixin
from triage_bot.store.store_sqlite import database_path, prepare, require_free_space
from triage_bot.store.store_triages import TriagesMixin

SQLITE_BUSY_TIMEOUT_MS = 30_000
PROBE_WAIT_MS = 2_000  # how long /healthz's write waits for a lock before it says so
# The heartbeat of /healthz: one row in `locks` that nothing ever waits for (its lease is over
# when written), rewritten by every probe of every server.
HEARTBEAT_LOCK = "healthz"
_INSERT_DELIVERY = insert(deliveries)  # built once: it is on the webhook's path


@dataclass(frozen=True)
class Acceptance:
    new: bool  # False: the delivery id was seen before, nothing was written
    job_id: str | None = None  # the job that will do the work (maybe an older, merged one)
    job_created: bool = False  # True: a new job row exists and must be pushed to the queue


def make_engine(url: str) -> Engine:
    url = normalize_database_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    path = database_path(parsed.database)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
    event.listen(engine, "connect", partial(_sqlite_connect, path))
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_connect(path: Path | None, dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    dbapi_connection.isolation_level = None  # we emit BEGIN ourselves, see _sqlite_begin
    dbapi_connection.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    prepare(dbapi_connection, path)  # WAL, no mmap, the -shm allocated (store_sqlite.py)
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")  # durable across process crashes


def _sqlite_begin(conn: Connection) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE")


def _with_sqlite_busy_timeout(
    conn: Connection, wait_ms: int, work: Callable[[Connection], None]
) -> None:
    """Run `work(conn)` with a shorter busy timeout, then give the pool back the usual one
    (or no connection at all: one left with the short timeout would fail others' writes)."""
    raw = conn.connection.dbapi_connection
    assert raw is not None
    raw.execute(f"PRAGMA busy_timeout={wait_ms}")
    try:
        work(conn)
    finally:
        try:
            raw.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        except Exception:
            conn.invalidate()


class Store(InstallationsMixin, TriagesMixin, CommentsMixin, LocksMixin):
    def __init__(self, url: str, *, create: bool = True) -> None:
        self.url = normalize_database_url(url)
        self.engine = make_engine(self.url)
        # The SQLite file (None for PostgreSQL or in memory): its folder's free space counts.
        self.sqlite_file = (
            database_path(make_url(self.url).database) if self.dialect == "sqlite" else None
        )
        self.jobs = JobLedger(self.engine)
        self.failures = FailureRecords(self.engine)
        self.sections = CommentSections(self.engine)
        if create:
            schema.metadata.create_all(self.engine)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def close(self) -> None:
        self.engine.dispose()

    def ping(self) -> None:
        """Raise when the database cannot be reached."""
        with self.engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")

    def check_writable(self) -> None:
        """Raise unless the database takes a write now: the heartbeat row is rewritten and
        committed, waiting at most PROBE_WAIT_MS for a lock; on SQLite the data directory must
        also have its minimum free space (a write that reuses the WAL's room would commit on
        a full disk, while a new delivery would not)."""
        if self.sqlite_file is not None:
            require_free_space(self.sqlite_file.parent)
        with self.engine.connect() as conn:
            if self.dialect == "sqlite":
                _with_sqlite_busy_timeout(conn, PROBE_WAIT_MS, self._write_heartbeat)
                return
            with conn.begin():
                conn.exec_driver_sql(f"SET LOCAL statement_timeout = {PROBE_WAIT_MS}")
                conn.execute(self._heartbeat())

    def _write_heartbeat(self, conn: Connection) -> None:
        with conn.begin():
            conn.execute(self._heartbeat())

    def _heartbeat(self) -> Any:
        dialect_insert = sqlite.insert if self.dialect == "sqlite" else postgresql.insert
        owner = f"{socket.gethostname()}:{os.getpid()}"[-64:]
        upsert = dialect_insert(locks).values(
            name=HEARTBEAT_LOCK, owner=owner, expires_at=schema.now()
        )
        changed = {"owner": upsert.excluded.owner, "expires_at": upsert.excluded.expires_at}
        return upsert.on_conflict_do_update(index_elements=[locks.c.name], set_=changed)

    # -- deliveries --------------------------------------------------------------------------

    def record_delivery(
        self, delivery_id: str, event: str, action: str | None = None, outcome: str = "accepted"
    ) -> bool:
        """Record a delivery id; False when it was already recorded (a redelivery)."""
        return self.accept_delivery(delivery_id, event, action, outcome).new

    def accept_delivery(
        self,
        delivery_id: str,
        event: str,
        action: str | None,
        outcome: str,
        *,
        job: NewJob | None = None,
        installation: InstallationChange | None = None,
    ) -> Acceptance:
        """Record the delivery with its job and installation change, in one transaction.

        A redelivery fails on the delivery's primary key and rolls back the job written
        before it, so nothing at all is left of it.
        """
        try:
            with self.engine.begin() as conn:
                job_id, created = (None, False) if job is None else self.jobs.add(conn, job)
                if job_id is not None and not created:
                    outcome = "coalesced"
                row = {
                    "delivery_id": delivery_id,
                    "event": event,
                    "action": action,
                    "outcome": outcome,
                    "job_id": job_id,
                    "received_at": schema.now(),
                }
                conn.execute(_INSERT_DELIVERY, row)
                if installation is not None:
                    self._apply_installation(conn, installation)
        except IntegrityError:
            return Acceptance(new=False)
        return Acceptance(new=True, job_id=job_id, job_created=created)

    def delivery_outcome(self, delivery_id: str) -> str | None:
        with self.engine.connect() as conn:
            query = select(deliveries.c.outcome).where(deliveries.c.delivery_id == delivery_id)
            return conn.execute(query).scalar_one_or_none()

    # -- job failures (for the base-branch comparison) ---------------------------------------

    def job_failures(self, repo: str, commit_sha: str) -> list[JobFailure]:
        """The failures recorded for one commit (e.g. the base of a pull request)."""
        return self.failures.of_commit(repo, commit_sha)
