"""The App's installations: which account each covers, its repositories, whether suspended.

A mixin of Store (store.py). Installation changes come from webhooks (installation_events.py)
and are applied either alone or inside the transaction that records their delivery.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Connection, Engine, delete, select

from triage_bot.store import schema
from triage_bot.store.schema import installations

InstallationOp = Literal["upsert", "delete", "add_repos", "remove_repos"]


@dataclass(frozen=True)
class InstallationChange:
    op: InstallationOp
    installation_id: int
    account: str | None = None
    repos: tuple[str, ...] = ()
    repository_selection: str | None = None
    suspended: bool | None = None  # None: leave as it is


@dataclass(frozen=True)
class Installation:
    id: int
    account: str | None
    repos: tuple[str, ...]
    repository_selection: str | None
    suspended: bool


class InstallationsMixin:
    engine: Engine

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
        schema.upsert(conn, installations, {"id": change.installation_id, **values}, ["id"])

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
