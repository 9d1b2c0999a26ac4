"""What each triage leaves in the database for the base-branch comparison.

`job_failures` holds each failed job's root cause (signature and `group_by` captures), by run
and commit; `triaged_runs` says which runs those rows describe, so a run that was triaged and
showed nothing recognised is told apart from one never triaged. A run's rows are replaced as
one: a later triage of the same run (a worker that died and ran the job again, a
`workflow_job` triage that saw more jobs fail, a re-run's attempt) supersedes the earlier one,
and an older one arriving late is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import ColumnElement, Engine, delete, insert, or_, select

from triage_bot.store import schema
from triage_bot.store.schema import job_failures, triaged_runs


@dataclass(frozen=True)
class JobFailure:
    repo: str
    workflow: str | None
    job_name: str  # without its matrix values: "test (3.11, ubuntu)" is "test"
    signature: str
    captures_key: str  # the `group_by` captures, as a JSON list
    commit_sha: str
    run_id: int
    recorded_at: datetime | None = field(default=None, compare=False)


@dataclass(frozen=True)
class TriagedRun:
    repo: str
    run_id: int
    run_attempt: int
    workflow_id: int | None
    commit_sha: str
    complete: bool  # the run had finished when triaged, so every failed job was seen
    partial_logs: int = 0  # failed jobs whose log was not read whole (capped, expired, missing)
    recorded_at: datetime | None = field(default=None, compare=False)


class FailureRecords:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def record(self, run: TriagedRun, failures: Sequence[JobFailure]) -> bool:
        """Make the stored findings of `run` these, in one transaction; False (nothing
        written) when a later attempt, or a complete triage of this one, is there already."""
        now = schema.now()
        row = {name: getattr(run, name) for name in TriagedRun.__dataclass_fields__}
        with self.engine.begin() as conn:
            # The upsert locks the run's row (PostgreSQL), so concurrent triages of one run
            # replace its failures one after the other, never interleaved.
            if not schema.upsert(
                conn,
                triaged_runs,
                row | {"recorded_at": now},
                ["repo", "run_id"],
                where=_supersedes(run),
            ):
                return False
            conn.execute(
                delete(job_failures).where(
                    job_failures.c.repo == run.repo, job_failures.c.run_id == run.run_id
                )
            )
            rows = [
                {name: getattr(f, name) for name in JobFailure.__dataclass_fields__}
                | {"recorded_at": now}
                for f in dict.fromkeys(failures)  # one row per distinct failure
            ]
            if rows:
                conn.execute(insert(job_failures), rows)
        return True

    def run(self, repo: str, run_id: int) -> TriagedRun | None:
        columns = [getattr(triaged_runs.c, name) for name in TriagedRun.__dataclass_fields__]
        query = select(*columns).where(triaged_runs.c.repo == repo, triaged_runs.c.run_id == run_id)
        with self.engine.connect() as conn:
            found = conn.execute(query).one_or_none()
        return None if found is None else TriagedRun(*found)

    def of_run(self, repo: str, run_id: int) -> list[JobFailure]:
        columns = [getattr(job_failures.c, name) for name in JobFailure.__dataclass_fields__]
        query = (
            select(*columns)
            .where(job_failures.c.repo == repo, job_failures.c.run_id == run_id)
            .order_by(job_failures.c.id)
        )
        with self.engine.connect() as conn:
            return [JobFailure(*row) for row in conn.execute(query)]


def _supersedes(run: TriagedRun) -> ColumnElement[bool]:
    """Whether `run` replaces the stored triage: a later attempt, or the same attempt unless
    the stored one is complete and this one is not (a partial triage that arrived late)."""
    stored = triaged_runs.c
    if run.complete:
        return stored.run_attempt <= run.run_attempt
    return or_(
        stored.run_attempt < run.run_attempt,
        (stored.run_attempt == run.run_attempt) & ~stored.complete,
    )
