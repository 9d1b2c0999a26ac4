"""Coordination between workers through the database: leased locks and one-time claims.

A mixin of Store (store.py). A lock is a row in `locks`, claimed by an atomic insert (or by an
update that takes over an expired lease). Nothing holds a database transaction open while
the holder works (talks to GitHub), and a holder that dies only blocks others until its lease
ends. A claim is a row in `claims` that is never released: the first inserter wins for good.

A lock taken while a queued job runs (the queue wraps its handler in `under_job_lease`) is
the job's: its row names the job and the claim that runs it, and it is free as soon as that
job's lease is (queue.py: the worker's heartbeat renews it; a SIGKILLed worker's lapses
within one `--lease`), whatever its own `ttl`, which still bounds every other holder. So a
dead worker's comment lock is taken over by the next worker within one lease.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from triage_bot.store import schema
from triage_bot.store.schema import claims, jobs, locks

log = logging.getLogger(__name__)

# The job (and its claim) that the current thread runs, if any: "JOB_ID/CLAIM" (the claim
# cut to fit the 64 characters of locks.owner; a prefix of a random hex id is still unique).
_job_lease: ContextVar[str | None] = ContextVar("job_lease", default=None)
_OWNER_CHARS = 64


@contextmanager
def under_job_lease(job_id: str, claim: str) -> Iterator[None]:
    """Locks taken inside are the job's: free once its lease (held by `claim`) is not live."""
    holder = f"{job_id}/{claim}"
    token = _job_lease.set(holder[:_OWNER_CHARS] if len(job_id) <= 40 else None)
    try:
        yield
    finally:
        _job_lease.reset(token)


class LockTimeout(TimeoutError):
    """The comment lock stayed taken for longer than the caller would wait."""


class LocksMixin:
    engine: Engine

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

    def unlock(self, name: str, owner: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(locks).where(locks.c.name == name, locks.c.owner == owner))

    def claim_once(self, name: str) -> bool:
        """Claim `name` for good: True for the one caller that ever gets it, on any worker."""
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(claims).values(name=name, claimed_at=schema.now()))
        except IntegrityError:
            return False
        return True


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
