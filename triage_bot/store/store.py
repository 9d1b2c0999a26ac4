"""The database: SQLite by default, PostgreSQL by URL, through SQLAlchemy Core.

Store is the one object callers hold. Its methods keep the deliveries, the installations,
each run attempt's triage, what we know of each sticky comment, and the locks and claims
through which workers coordinate; the jobs, failures and comment sections are parts of it
(store.jobs, store.failures, store.outcomes, store.sections: ledger.py,
failure_records.py, job_outcomes.py, comment_sections.py).

Concurrency, which matters because several servers and workers may share one database:
- A delivery is accepted once: its id is the primary key of `deliveries`, the insert either
  wins or raises IntegrityError, and the loser answers "duplicate". The delivery row, the job
  row and any installation change are written in one transaction, so a delivery is never
  recorded without its work (or the other way round).
- A lock (the comment lock above all) is a leased row in `locks`, claimed by an atomic insert
  (or by an update that takes over an expired lease): no database transaction is held open
  while the holder talks to GitHub, and a dead holder blocks only until its lease ends. A
  claim is a row in `claims` that is never released: the first inserter wins for good.
- A lock taken while a queued job runs (the queue wraps its handler in `under_job_lease`) is
  the job's: its row names the job and the claim that runs it, and it is free as soon as that
  job's lease is (queue.py: the worker's heartbeat renews it; a SIGKILLed worker's lapses
  within one `--lease`), whatever the lock's own `ttl`, which still bounds every other holder.
  So a dead worker's comment lock is taken over by the next worker within one lease.
- On SQLite every transaction starts with BEGIN IMMEDIATE: two writers never both hold a read
  snapshot and then deadlock upgrading it (SQLITE_BUSY); they queue on the busy timeout.

A full disk or a failing file is an error, never a crash: store_sqlite.py prepares each SQLite
connection (no mmap of the database, the WAL's -shm allocated ahead, no new connection on a
full disk), and store_errors.py says which errors mean "storage unavailable".
`check_writable` is /healthz's probe: a small write that must commit within a short wait.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import (
    Connection,
    Engine,
    create_engine,
    delete,
    event,
    insert,
    select,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.pool import ConnectionPoolEntry

from triage_bot.config import normalize_database_url
from triage_bot.store import migrate, schema
from triage_bot.store.comment_sections import CommentSections
from triage_bot.store.failure_records import FailureRecords
from triage_bot.store.job_outcomes import JobOutcomes
from triage_bot.store.ledger import JobLedger, NewJob
from triage_bot.store.schema import (
    claims,
    comments,
    deliveries,
    installations,
    jobs,
    locks,
    triages,
)
from triage_bot.store.store_sqlite import database_path, prepare, require_free_space

log = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 30_000
PROBE_WAIT_MS = 2_000  # how long /healthz's write waits for a lock before it says so
# The heartbeat of /healthz: one row in `locks` that nothing ever waits for (its lease is over
# when written), rewritten by every probe of every server.
HEARTBEAT_LOCK = "healthz"
_INSERT_DELIVERY = insert(deliveries)  # built once: it is on the webhook's path
_RUN_KEY = ["repo", "run_id", "run_attempt"]

# The job (and its claim) that the current thread runs, if any: "JOB_ID/CLAIM" (the claim
# cut to fit the 64 characters of locks.owner; a prefix of a random hex id is still unique).
_job_lease: ContextVar[str | None] = ContextVar("job_lease", default=None)
_OWNER_CHARS = 64


@dataclass(frozen=True)
class Acceptance:
    new: bool  # False: the delivery id was seen before, nothing was written
    job_id: str | None = None  # the job that will do the work (maybe an older, merged one)
    job_created: bool = False  # True: a new job row exists and must be pushed to the queue


InstallationOp = Literal["upsert", "delete", "add_repos", "remove_repos"]


@dataclass(frozen=True)
class InstallationChange:
    """A change to the App's installations, from a webhook (installation_events.py), applied
    inside the transaction that records its delivery."""

    op: InstallationOp
    installation_id: int
    account: str | None = None
    repos: tuple[str, ...] = ()
    repository_selection: str | None = None
    suspended: bool | None = None  # None: leave as it is


@dataclass(frozen=True)
class Installation:
    """An installation of the App: which account it covers, its repositories, whether
    suspended."""

    id: int
    account: str | None
    repos: tuple[str, ...]
    repository_selection: str | None
    suspended: bool


@dataclass(frozen=True)
class Triage:
    """A run attempt's triage: running, done with its report, or failed with its error (the
    queue records a triage job's progress)."""

    repo: str
    run_id: int
    run_attempt: int
    head_sha: str
    pr_number: int | None
    status: str
    error: str | None
    report: dict[str, Any] | None
    started_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True)
class Comment:
    """What we know of a pull request's sticky comment: its id, the hash of its body, the head
    commit it describes and whether a newer commit made it outdated."""

    repo: str
    pr_number: int
    comment_id: int | None
    body_hash: str | None
    head_sha: str | None
    outdated: bool
    updated_at: datetime


class LockTimeout(TimeoutError):
    """A lock (the comment lock, say) stayed taken for longer than the caller would wait."""


@contextmanager
def under_job_lease(job_id: str, claim: str) -> Iterator[None]:
    """Locks taken inside are the job's: free once its lease (held by `claim`) is not live."""
    holder = f"{job_id}/{claim}"
    token = _job_lease.set(holder[:_OWNER_CHARS] if len(job_id) <= 40 else None)
    try:
        yield
    finally:
        _job_lease.reset(token)


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


class Store:
    def __init__(self, url: str, *, create: bool = True) -> None:
        self.url = normalize_database_url(url)
        self.engine = make_engine(self.url)
        # The SQLite file (None for PostgreSQL or in memory): its folder's free space counts.
        self.sqlite_file = (
            database_path(make_url(self.url).database) if self.dialect == "sqlite" else None
        )
        self.jobs = JobLedger(self.engine)
        self.failures = FailureRecords(self.engine)
        self.outcomes = JobOutcomes(self.engine)
        self.sections = CommentSections(self.engine)
        if create:
            self._create_tables()

    def _create_tables(self) -> None:
        """Bring the schema to the newest migration, one process at a time (migrate.py): a
        server and its workers started together on an empty database would otherwise all see
        no table and all CREATE it, and PostgreSQL refuses the second (duplicate key in
        pg_type)."""
        migrate.upgrade(self.engine)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def close(self) -> None:
        self.engine.dispose()

    def check_writable(self) -> None:
        """Raise unless the database takes a write now: the heartbeat row is rewritten and
        committed, waiting at most PROBE_WAIT_MS for a lock; on SQLite the data directory must
        also have its minimum free space (a write that reuses the WAL's room would commit on
        a full disk, while a new delivery would not)."""
        if self.sqlite_file is not None:
            require_free_space(self.sqlite_file.parent)
        with self.engine.connect() as conn:
            if self.dialect == "sqlite":
                _with_sqlite_busy_timeout(conn, PROBE_WAIT_MS, _write_heartbeat)
                return
            with conn.begin():
                conn.exec_driver_sql(f"SET LOCAL statement_timeout = {PROBE_WAIT_MS}")
                _heartbeat(conn)

    # -- deliveries --------------------------------------------------------------------------

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
        """What became of a delivery ("job", "coalesced", ...); None when never received."""
        with self.engine.connect() as conn:
            query = select(deliveries.c.outcome).where(deliveries.c.delivery_id == delivery_id)
            return conn.execute(query).scalar_one_or_none()

    # -- installations -----------------------------------------------------------------------

    def _apply_installation(self, conn: Connection, change: InstallationChange) -> None:
        if change.op == "delete":
            conn.execute(delete(installations).where(installations.c.id == change.installation_id))
            return
        current = self._installation(conn, change.installation_id)
        repos = set(current.repos) if current else set()
        if change.op == "upsert" and change.repos:
            repos = set(change.repos)
        elif change.op == "add_repos":
            repos |= set(change.repos)
        elif change.op == "remove_repos":
            repos -= set(change.repos)
        values = {
            "account": change.account or (current.account if current else None),
            "repository_selection": change.repository_selection
            or (current.repository_selection if current else None),
            "repos": sorted(repos),
            "suspended": change.suspended
            if change.suspended is not None
            else bool(current and current.suspended),
            "updated_at": schema.now(),
        }
        schema.upsert(conn, installations, {"id": change.installation_id, **values}, ["id"])

    def installation(self, installation_id: int) -> Installation | None:
        with self.engine.connect() as conn:
            return self._installation(conn, installation_id)

    def _installation(self, conn: Connection, installation_id: int) -> Installation | None:
        query = select(installations).where(installations.c.id == installation_id)
        row = conn.execute(query).one_or_none()
        if row is None:
            return None
        return Installation(
            row.id, row.account, tuple(row.repos), row.repository_selection, row.suspended
        )

    # -- triages -----------------------------------------------------------------------------

    def start_triage(
        self, repo: str, run_id: int, run_attempt: int, head_sha: str, pr_number: int | None = None
    ) -> None:
        """Mark a run attempt's triage as running (again, if it ran before)."""
        row = {
            "repo": repo,
            "run_id": run_id,
            "run_attempt": run_attempt,
            "head_sha": head_sha,
            "pr_number": pr_number,
            "status": "running",
            "error": None,
            "report": None,
            "started_at": schema.now(),
            "finished_at": None,
        }
        with self.engine.begin() as conn:
            schema.upsert(conn, triages, row, _RUN_KEY)

    def finish_triage(
        self, repo: str, run_id: int, run_attempt: int, report: dict[str, Any] | None
    ) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(triages)
                .where(*_run_key(repo, run_id, run_attempt))
                .values(status="done", report=report, error=None, finished_at=schema.now())
            )

    def fail_triage(
        self, repo: str, run_id: int, run_attempt: int, error: str, head_sha: str = ""
    ) -> None:
        """Record a triage that failed for good; the row is created if it never started."""
        with self.engine.begin() as conn:
            result = conn.execute(
                update(triages)
                .where(*_run_key(repo, run_id, run_attempt))
                .values(status="failed", error=error, finished_at=schema.now())
            )
            if result.rowcount == 0:
                now = schema.now()
                values = {"head_sha": head_sha, "status": "failed", "error": error}
                row = {"repo": repo, "run_id": run_id, "run_attempt": run_attempt, **values}
                schema.upsert(
                    conn, triages, {**row, "started_at": now, "finished_at": now}, _RUN_KEY
                )

    def triage(self, repo: str, run_id: int, run_attempt: int) -> Triage | None:
        columns = [getattr(triages.c, name) for name in Triage.__dataclass_fields__]
        with self.engine.connect() as conn:
            row = conn.execute(select(*columns).where(*_run_key(repo, run_id, run_attempt)))
            found = row.one_or_none()
        return None if found is None else Triage(*found)

    # -- sticky comments (written under the comment lock; their sections: store.sections) ----

    def comment(self, repo: str, pr_number: int) -> Comment | None:
        """What we know of the sticky comment on a pull request (None: we never made one)."""
        columns = [getattr(comments.c, name) for name in Comment.__dataclass_fields__]
        query = select(*columns).where(comments.c.repo == repo, comments.c.pr_number == pr_number)
        with self.engine.connect() as conn:
            found = conn.execute(query).one_or_none()
        return None if found is None else Comment(*found)

    def record_comment(
        self, repo: str, pr_number: int, comment_id: int, body_hash: str, head_sha: str | None
    ) -> None:
        """Remember the comment as just created or edited; it is current again."""
        row = {
            "repo": repo,
            "pr_number": pr_number,
            "comment_id": comment_id,
            "body_hash": body_hash,
            "head_sha": head_sha,
            "outdated": False,
            "updated_at": schema.now(),
        }
        with self.engine.begin() as conn:
            schema.upsert(conn, comments, row, ["repo", "pr_number"])

    def mark_comment_outdated(self, repo: str, pr_number: int, old_head_sha: str) -> bool:
        """Flag the comment as describing `old_head_sha`; False when there is none for it."""
        with self.engine.begin() as conn:
            result = conn.execute(
                update(comments)
                .where(comments.c.repo == repo, comments.c.pr_number == pr_number)
                .where(comments.c.head_sha == old_head_sha)
                .values(outdated=True, updated_at=schema.now())
            )
        return result.rowcount > 0

    # -- locks and claims --------------------------------------------------------------------

    def comment_lock(
        self, repo: str, pr_number: int, *, wait: float = 60.0
    ) -> AbstractContextManager[None]:
        """Hold the pull request's comment lock: find-or-create-then-edit under it.

        Its `ttl` bounds how long a dead holder blocks others; keep the work under it short
        (look up, create or edit one comment, record it).
        """
        return self.lock(f"comment:{repo}#{pr_number}", wait=wait)

    @contextmanager
    def lock(self, name: str, *, wait: float = 60.0, ttl: float = 120.0) -> Iterator[None]:
        """Hold the lock `name` (waiting up to `wait` seconds, else LockTimeout) for at most
        `ttl` seconds: after that another holder may take it over."""
        owner = _job_lease.get() or uuid.uuid4().hex
        deadline, delay = time.monotonic() + wait, 0.005
        while not self.try_lock(name, owner, ttl):
            if time.monotonic() >= deadline:
                raise LockTimeout(f"{name} is still held after {wait:g}s")
            time.sleep(delay)
            delay = min(delay * 2, 0.25)
        try:
            yield
        finally:
            with self.engine.begin() as conn:
                conn.execute(delete(locks).where(locks.c.name == name, locks.c.owner == owner))

    def try_lock(self, name: str, owner: str, ttl: float) -> bool:
        now = schema.now()
        expires = now + timedelta(seconds=ttl)
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(locks).values(name=name, owner=owner, expires_at=expires))
            return True
        except IntegrityError:
            pass
        # Taken: take it over only if its ttl ran out or its holder's job lease did. The
        # update names the holder it judged: PostgreSQL re-checks the WHERE after a
        # concurrent update commits, and SQLite serialises writers, so one taker wins.
        with self.engine.begin() as conn:
            found = conn.execute(
                select(locks.c.owner, locks.c.expires_at).where(locks.c.name == name)
            ).one_or_none()
            if found is None:
                return False  # released meanwhile: the next try inserts
            holder, expires_at = found
            if expires_at >= now and _holder_alive(conn, holder, now):
                return False
            result = conn.execute(
                update(locks)
                .where(locks.c.name == name, locks.c.owner == holder)
                .values(owner=owner, expires_at=expires)
            )
        taken = result.rowcount == 1
        if taken and expires_at >= now:
            log.warning("lock %s taken over from %s, whose job lease has lapsed", name, holder)
        return taken

    def claim_once(self, name: str) -> bool:
        """Claim `name` for good: True for the one caller that ever gets it, on any worker."""
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(claims).values(name=name, claimed_at=schema.now()))
        except IntegrityError:
            return False
        return True


def _write_heartbeat(conn: Connection) -> None:
    with conn.begin():
        _heartbeat(conn)


def _heartbeat(conn: Connection) -> None:
    owner = f"{socket.gethostname()}:{os.getpid()}"[-64:]
    row = {"name": HEARTBEAT_LOCK, "owner": owner, "expires_at": schema.now()}
    schema.upsert(conn, locks, row, ["name"])


def _run_key(repo: str, run_id: int, run_attempt: int) -> tuple[Any, ...]:
    return (
        triages.c.repo == repo,
        triages.c.run_id == run_id,
        triages.c.run_attempt == run_attempt,
    )


def _holder_alive(conn: Connection, holder: str, now: datetime) -> bool:
    """False when `holder` names a job whose claim is no longer live (its worker died, or
    another took the job over); True otherwise, including for a holder that is no job's."""
    job_id, slash, claim = holder.partition("/")
    if not slash or not claim:
        return True  # a lock taken outside any job: only its ttl frees it
    row = conn.execute(
        select(jobs.c.owner, jobs.c.status, jobs.c.lease_until).where(jobs.c.id == job_id)
    ).one_or_none()
    if row is None:
        return False
    owner, status, lease_until = row
    return (
        status == "running"
        and str(owner or "").startswith(claim)
        and lease_until is not None
        and lease_until >= now
    )
