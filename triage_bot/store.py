"""The database: SQLite by default, PostgreSQL by URL, through SQLAlchemy Core.

Concurrency, which matters because several servers and workers may share one database:
- A delivery is accepted once: its id is the primary key of `deliveries`, the insert either
  wins or raises IntegrityError, and the loser answers "duplicate". The delivery row, the job
  row and any installation change are written in one transaction, so a delivery is never
  recorded without its work (or the other way round).
- The comment lock is a row in `locks`, claimed by an atomic insert (or by an update that
  takes over an expired lease). Nothing holds a database transaction open while the holder
  talks to GitHub, and a holder that dies only blocks others until its lease ends.
- On SQLite every transaction starts with BEGIN IMMEDIATE: two writers never both hold a read
  snapshot and then deadlock upgrading it (SQLITE_BUSY); they queue on the busy timeout.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, delete, event, insert, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.pool import ConnectionPoolEntry

from triage_bot import schema
from triage_bot.comment_sections import CommentSections
from triage_bot.config import normalize_database_url
from triage_bot.event_decision import InstallationChange
from triage_bot.failure_records import FailureRecords, JobFailure
from triage_bot.ledger import JobLedger, NewJob
from triage_bot.schema import (
    claims,
    comments,
    deliveries,
    installations,
    locks,
    triages,
)

SQLITE_BUSY_TIMEOUT_MS = 30_000
_INSERT_DELIVERY = insert(deliveries)  # built once: it is on the webhook's path


class LockTimeout(TimeoutError):
    """The comment lock stayed taken for longer than the caller would wait."""


@dataclass(frozen=True)
class Acceptance:
    new: bool  # False: the delivery id was seen before, nothing was written
    job_id: str | None = None  # the job that will do the work (maybe an older, merged one)
    job_created: bool = False  # True: a new job row exists and must be pushed to the queue


@dataclass(frozen=True)
class Installation:
    id: int
    account: str | None
    repos: tuple[str, ...]
    repository_selection: str | None
    suspended: bool


@dataclass(frozen=True)
class Triage:
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
    repo: str
    pr_number: int
    comment_id: int | None
    body_hash: str | None
    head_sha: str | None
    outdated: bool
    updated_at: datetime


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


class Store:
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

    # -- installations -----------------------------------------------------------------------

    def apply_installation(self, change: InstallationChange) -> None:
        with self.engine.begin() as conn:
            self._apply_installation(conn, change)

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
        self._upsert(conn, installations, {"id": change.installation_id, **values}, ["id"])

    def installation(self, installation_id: int) -> Installation | None:
        with self.engine.connect() as conn:
            return self._installation(conn, installation_id)

    def installation_for_repo(self, repo: str) -> int | None:
        """The id of a live installation that covers `repo`, for payloads that carry none."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(installations).where(installations.c.suspended.is_(False)))
            for row in rows:
                if repo in row.repos:
                    return int(row.id)
        return None

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
        self._set_triage(
            repo,
            run_id,
            run_attempt,
            head_sha=head_sha,
            pr_number=pr_number,
            status="running",
            error=None,
            report=None,
            started_at=schema.now(),
            finished_at=None,
        )

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
                self._upsert(
                    conn,
                    triages,
                    {**row, "started_at": now, "finished_at": now},
                    ["repo", "run_id", "run_attempt"],
                )

    def triage(self, repo: str, run_id: int, run_attempt: int) -> Triage | None:
        columns = [getattr(triages.c, name) for name in Triage.__dataclass_fields__]
        with self.engine.connect() as conn:
            row = conn.execute(select(*columns).where(*_run_key(repo, run_id, run_attempt)))
            found = row.one_or_none()
        return None if found is None else Triage(*found)

    def _set_triage(self, repo: str, run_id: int, run_attempt: int, **values: Any) -> None:
        row = {"repo": repo, "run_id": run_id, "run_attempt": run_attempt, **values}
        with self.engine.begin() as conn:
            self._upsert(conn, triages, row, ["repo", "run_id", "run_attempt"])

    # -- comments ----------------------------------------------------------------------------

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
            self._upsert(conn, comments, row, ["repo", "pr_number"])

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

    def comment_lock(
        self, repo: str, pr_number: int, *, wait: float = 60.0, ttl: float = 120.0
    ) -> AbstractContextManager[None]:
        """Hold the pull request's comment lock: find-or-create-then-edit under it.

        `ttl` bounds how long a dead holder blocks others; keep the work under it short
        (look up, create or edit one comment, record it).
        """
        return self.lock(f"comment:{repo}#{pr_number}", wait=wait, ttl=ttl)

    @contextmanager
    def lock(self, name: str, *, wait: float = 60.0, ttl: float = 120.0) -> Iterator[None]:
        """Hold the lock `name` (waiting up to `wait` seconds, else LockTimeout) for at most
        `ttl` seconds: after that another holder may take it over."""
        owner = uuid.uuid4().hex
        deadline, delay = time.monotonic() + wait, 0.005
        while not self.try_lock(name, owner, ttl):
            if time.monotonic() >= deadline:
                raise LockTimeout(f"{name} is still held after {wait:g}s")
            time.sleep(delay)
            delay = min(delay * 2, 0.25)
        try:
            yield
        finally:
            self.unlock(name, owner)

    def try_lock(self, name: str, owner: str, ttl: float) -> bool:
        now = schema.now()
        expires = now + timedelta(seconds=ttl)
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(locks).values(name=name, owner=owner, expires_at=expires))
            return True
        except IntegrityError:
            pass
        # Taken: take it over only if its lease ran out. PostgreSQL re-checks the WHERE after
        # a concurrent update commits, and SQLite serialises writers, so one taker wins.
        with self.engine.begin() as conn:
            result = conn.execute(
                update(locks)
                .where(locks.c.name == name, locks.c.expires_at < now)
                .values(owner=owner, expires_at=expires)
            )
        return result.rowcount == 1

    def unlock(self, name: str, owner: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(locks).where(locks.c.name == name, locks.c.owner == owner))

    # -- claims ------------------------------------------------------------------------------

    def claim_once(self, name: str) -> bool:
        """Claim `name` for good: True for the one caller that ever gets it, on any worker."""
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(claims).values(name=name, claimed_at=schema.now()))
        except IntegrityError:
            return False
        return True

    # -- job failures (for the base-branch comparison) ---------------------------------------

    def job_failures(self, repo: str, commit_sha: str) -> list[JobFailure]:
        """The failures recorded for one commit (e.g. the base of a pull request)."""
        return self.failures.of_commit(repo, commit_sha)

    # -- helpers -----------------------------------------------------------------------------

    def _upsert(self, conn: Connection, table: Any, row: dict[str, Any], keys: list[str]) -> None:
        schema.upsert(conn, table, row, keys)


def _run_key(repo: str, run_id: int, run_attempt: int) -> tuple[Any, ...]:
    return (
        triages.c.repo == repo,
        triages.c.run_id == run_id,
        triages.c.run_attempt == run_attempt,
    )
