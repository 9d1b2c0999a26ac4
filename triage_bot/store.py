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
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, insert, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.pool import ConnectionPoolEntry

from triage_bot import schema
from triage_bot.comment_sections import CommentSections
from triage_bot.config import normalize_database_url
from triage_bot.event_decision import InstallationChange
from triage_bot.failure_records import FailureRecords, JobFailure
from triage_bot.ledger import JobLedger, NewJob
from triage_bot.schema import deliveries
from triage_bot.store_comments import CommentsMixin
from triage_bot.store_installations import InstallationsMixin
from triage_bot.store_locks import LocksMixin
from triage_bot.store_triages import TriagesMixin

SQLITE_BUSY_TIMEOUT_MS = 30_000
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
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
    event.listen(engine, "connect", _sqlite_connect)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    dbapi_connection.isolation_level = None  # we emit BEGIN ourselves, see _sqlite_begin
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers do not block the writer
    cursor.execute("PRAGMA synchronous=NORMAL")  # durable across process crashes in WAL mode
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE")


class Store(InstallationsMixin, TriagesMixin, CommentsMixin, LocksMixin):
    def __init__(self, url: str, *, create: bool = True) -> None:
        self.url = normalize_database_url(url)
        self.engine = make_engine(self.url)
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
