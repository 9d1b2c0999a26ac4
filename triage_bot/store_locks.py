"""Coordination between workers through the database: leased locks and one-time claims.

A mixin of Store (store.py). A lock is a row in `locks`, claimed by an atomic insert (or by an
update that takes over an expired lease). Nothing holds a database transaction open while
the holder works (talks to GitHub), and a holder that dies only blocks others until its lease
ends. A claim is a row in `claims` that is never released: the first inserter wins for good.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import timedelta

from sqlalchemy import Engine, delete, insert, update
from sqlalchemy.exc import IntegrityError

from triage_bot import schema
from triage_bot.schema import claims, locks


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

    def claim_once(self, name: str) -> bool:
        """Claim `name` for good: True for the one caller that ever gets it, on any worker."""
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(claims).values(name=name, claimed_at=schema.now()))
        except IntegrityError:
            return False
        return True
