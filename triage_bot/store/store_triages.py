"""Each run attempt's triage: running, done with its report, or failed with its error.

A mixin of Store (store.py); the queue records a triage job's progress here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, select, update

from triage_bot.store import schema
from triage_bot.store.schema import triages

_RUN_KEY = ["repo", "run_id", "run_attempt"]


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


class TriagesMixin:
    engine: Engine

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
                schema.upsert(
                    conn, triages, {**row, "started_at": now, "finished_at": now}, _RUN_KEY
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
            schema.upsert(conn, triages, row, _RUN_KEY)


def _run_key(repo: str, run_id: int, run_attempt: int) -> tuple[Any, ...]:
    return (
        triages.c.repo == repo,
        triages.c.run_id == run_id,
        triages.c.run_attempt == run_attempt,
    )
