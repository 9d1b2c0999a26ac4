"""The job ledger: the database's record of every queued job, which makes the queue durable.

huey pops a task from its storage before running it, so a worker killed mid-job takes the
task with it. The ledger keeps what huey forgets:

    queued --claim--> running --finish--> done
       ^                 |  \\--fail----> failed      (retries used up, or a permanent error)
       '----retry--------'
       '----requeue------'   (lease expired: the worker died; or queued for too long: the
                              push was lost between the ledger and huey)

A claim is one conditional UPDATE, so of two workers holding copies of one task exactly one
runs it, and a task pushed twice (by the sweep, or by a retry that raced one) runs once.

A job waiting out an outage (triage_bot.github_api.outage) is queued with its error starting
"outage REASON: "; it stays so when it is given up (failed). `outage_counts` reads both for
/metrics. Only a queued job takes in a later job with its coalesce key: a failed one never
blocks a new delivery for the same run, and a queued one waiting out an outage is woken by it
(the delivery shows GitHub is answering again).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    and_,
    bindparam,
    case,
    func,
    insert,
    or_,
    select,
    update,
)

from triage_bot.github_api.outage import OUTAGE_REASONS
from triage_bot.store.schema import jobs, now

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
OUTAGE_PREFIX = "outage "


def outage_error(reason: str, text: str) -> str:
    """The error recorded for a job held up by an outage: `outage_counts` reads the reason."""
    return f"{OUTAGE_PREFIX}{reason}: {text}"


@dataclass(frozen=True)
class NewJob:
    kind: str
    payload: dict[str, Any]
    coalesce_key: str | None = None
    id: str = ""  # empty: a fresh id is made

    def with_id(self) -> NewJob:
        if self.id:
            return self
        return NewJob(self.kind, self.payload, self.coalesce_key, uuid.uuid4().hex)


@dataclass(frozen=True)
class JobRecord:
    id: str
    kind: str
    payload: dict[str, Any]
    status: str
    attempts: int
    error: str | None
    owner: str | None
    lease_until: datetime | None
    available_at: datetime
    updated_at: datetime
    created_at: datetime


_COLUMNS = [getattr(jobs.c, name) for name in JobRecord.__dataclass_fields__]
# Built once: adding a job is on the webhook's path, and building a statement per call (its
# bound values, its cache key) cost more CPU than the database's round trip.
_QUEUED_WITH_KEY = (
    select(jobs.c.id, jobs.c.available_at, jobs.c.error)
    .where(jobs.c.coalesce_key == bindparam("key"), jobs.c.status == QUEUED)
    .limit(1)
)
_INSERT_JOB = insert(jobs)


class JobLedger:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add(self, conn: Connection, job: NewJob) -> tuple[str, bool]:
        """Insert `job` in the caller's transaction; (id, push): push is True when the caller
        must push the job to the queue.

        A job whose coalesce key matches one still queued is merged into it: the queued one
        has not looked at GitHub yet, so it will see what this one would. push is False then,
        unless the queued one was waiting out an outage: it is made due now and pushed, since
        a new delivery means GitHub is answering again. A failed job is never merged into.
        """
        stamp = now()
        if job.coalesce_key is not None:
            found = conn.execute(_QUEUED_WITH_KEY, {"key": job.coalesce_key}).one_or_none()
            if found is not None:
                existing, available_at, error = found
                waiting = available_at > stamp and (error or "").startswith(OUTAGE_PREFIX)
                if waiting:
                    conn.execute(
                        update(jobs)
                        .where(jobs.c.id == existing, jobs.c.status == QUEUED)
                        .values(available_at=stamp, updated_at=stamp)
                    )
                return str(existing), waiting
        job = job.with_id()
        row = {
            "id": job.id,
            "kind": job.kind,
            "coalesce_key": job.coalesce_key,
            "payload": job.payload,
            "status": QUEUED,
            "attempts": 0,
            "available_at": stamp,
            "created_at": stamp,
            "updated_at": stamp,
        }
        conn.execute(_INSERT_JOB, row)
        return job.id, True

    def create(self, job: NewJob) -> tuple[str, bool]:
        with self.engine.begin() as conn:
            return self.add(conn, job)

    def get(self, job_id: str) -> JobRecord | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(*_COLUMNS).where(jobs.c.id == job_id)).one_or_none()
        return None if row is None else JobRecord(*row)

    def claim(self, job_id: str, owner: str, lease: float) -> JobRecord | None:
        """Take the job to run it; None when it is done, failed, or running under a live lease."""
        stamp = now()
        claimable = or_(
            jobs.c.status == QUEUED, and_(jobs.c.status == RUNNING, jobs.c.lease_until < stamp)
        )
        with self.engine.begin() as conn:
            result = conn.execute(
                update(jobs)
                .where(jobs.c.id == job_id, claimable)
                .values(
                    status=RUNNING,
                    owner=owner,
                    lease_until=stamp + timedelta(seconds=lease),
                    attempts=jobs.c.attempts + 1,
                    updated_at=stamp,
                )
            )
            if result.rowcount != 1:
                return None
            row = conn.execute(select(*_COLUMNS).where(jobs.c.id == job_id)).one()
        return JobRecord(*row)

    def renew(self, job_id: str, owner: str, lease: float) -> bool:
        """Extend a running job's lease; False when another worker has taken it over."""
        stamp = now()
        return self._move(
            job_id, owner, lease_until=stamp + timedelta(seconds=lease), updated_at=stamp
        )

    def finish(self, job_id: str, owner: str) -> bool:
        return self._end(job_id, owner, DONE, None)

    def retry(
        self, job_id: str, owner: str, error: str, delay: float, *, refund: bool = False
    ) -> bool:
        """Queue the job again after `delay`; `refund` gives the attempt back (a deferral)."""
        stamp = now()
        return self._move(
            job_id,
            owner,
            status=QUEUED,
            attempts=jobs.c.attempts - 1 if refund else jobs.c.attempts,
            error=error,
            owner=None,
            lease_until=None,
            available_at=stamp + timedelta(seconds=delay),
            updated_at=stamp,
        )

    def fail(self, job_id: str, owner: str, error: str) -> bool:
        return self._end(job_id, owner, FAILED, error)

    def _end(self, job_id: str, owner: str, status: str, error: str | None) -> bool:
        stamp = now()
        return self._move(
            job_id,
            owner,
            status=status,
            error=error,
            lease_until=None,
            updated_at=stamp,
            finished_at=stamp,
        )

    def _move(self, job_id: str, claimed_by: str, **values: Any) -> bool:
        # Only the worker holding the claim moves a running job on; one whose lease was taken
        # over finds no row and leaves the job to its new owner.
        with self.engine.begin() as conn:
            result = conn.execute(
                update(jobs)
                .where(jobs.c.id == job_id, jobs.c.owner == claimed_by, jobs.c.status == RUNNING)
                .values(**values)
            )
        return result.rowcount == 1

    def stale(self, queued_for: float, limit: int = 100) -> list[JobRecord]:
        """Jobs that no worker will run unless pushed again.

        Running with an expired lease: its worker died. Queued and due for longer than
        `queued_for` seconds: its push was probably lost (or the queue is that far behind, in
        which case a second push costs one no-op claim).
        """
        stamp = now()
        overdue = stamp - timedelta(seconds=queued_for)
        query = (
            select(*_COLUMNS)
            .where(
                or_(
                    and_(jobs.c.status == RUNNING, jobs.c.lease_until < stamp),
                    and_(
                        jobs.c.status == QUEUED,
                        jobs.c.updated_at < overdue,
                        jobs.c.available_at < overdue,
                    ),
                )
            )
            .order_by(jobs.c.updated_at)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            return [JobRecord(*row) for row in conn.execute(query)]

    def mark_requeued(self, record: JobRecord) -> bool:
        """Claim the right to push `record` again; of several sweepers, one wins."""
        with self.engine.begin() as conn:
            result = conn.execute(
                update(jobs)
                .where(
                    jobs.c.id == record.id,
                    jobs.c.status == record.status,
                    jobs.c.updated_at == record.updated_at,
                )
                .values(status=QUEUED, owner=None, lease_until=None, updated_at=now())
            )
        return result.rowcount == 1

    def outage_counts(self) -> dict[tuple[str, str], int]:
        """{(status, reason): jobs}: queued ones waiting out an outage, failed ones given up
        on one; the reason is what `outage_error` recorded."""
        reason = case(
            *((jobs.c.error.like(f"{OUTAGE_PREFIX}{name}:%"), name) for name in OUTAGE_REASONS),
            else_="",
        )
        query = (
            select(jobs.c.status, reason, func.count())
            .where(jobs.c.status.in_((QUEUED, FAILED)), jobs.c.error.like(f"{OUTAGE_PREFIX}%"))
            .group_by(jobs.c.status, reason)
        )
        with self.engine.connect() as conn:
            found = {(str(s), str(r)): int(n) for s, r, n in conn.execute(query) if r}
        return {(s, r): found.get((s, r), 0) for s in (QUEUED, FAILED) for r in OUTAGE_REASONS}

    def counts(self) -> dict[str, int]:
        query = select(jobs.c.status, func.count()).group_by(jobs.c.status)
        with self.engine.connect() as conn:
            found = {status: int(count) for status, count in conn.execute(query)}
        return {status: found.get(status, 0) for status in (QUEUED, RUNNING, DONE, FAILED)}
