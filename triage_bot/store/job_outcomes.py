"""Every job of every triaged run, passing or failing: the history the flaky rules (flaky.py)
read, kept for a retention period (TRIAGE_HISTORY_DAYS) and pruned by the worker.

One row a job of a run attempt (the unique key repo, run, attempt, job): a later triage of the
same attempt (the run was still going, a worker died half-way) writes its jobs over, so what
stays is the newest view of each job; another attempt of the run is other rows, which is what
tells "failed, then passed on a re-run of the same commit".

A failed job's `failure_key` says which failure it was: `sig:` its root cause's signature and
`group_by` captures (the key of the base-branch comparison), else `line:` the normalised best
line of an unexplained job. Passing and cancelled jobs have none.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, delete, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from triage_bot.store import schema
from triage_bot.store.schema import job_outcomes

# GitHub's job conclusions that count as "failed" and as "passed" (cancelled, skipped and
# neutral say neither).
FAILED_CONCLUSIONS = frozenset({"failure", "timed_out"})
PASSED_CONCLUSIONS = frozenset({"success"})
SIGNATURE_KEY = "sig:"
LINE_KEY = "line:"
_KEY_CHARS = 400
# Rows written per INSERT: SQLite allows 32,766 bound values, and a row binds 20.
_INSERT_BATCH = 500


@dataclass(frozen=True)
class JobOutcome:
    repo: str
    run_id: int
    run_attempt: int
    job_id: int
    workflow: str | None  # the workflow's name
    workflow_id: int | None
    job_name: str  # without matrix values and shard number (same_job.job_family)
    job_full_name: str  # as GitHub names it: one shard of one matrix entry
    conclusion: str
    commit_sha: str
    finished_at: datetime
    signature: str | None = None  # the root cause's, when it explains the job
    captures: dict[str, str] | None = None  # its `group_by` captures, by name
    failure_key: str | None = None
    tree_sha: str | None = None  # the commit's tree: the same code under another commit
    branch: str | None = None
    pr_number: int | None = None
    url: str | None = None
    recorded_at: datetime | None = field(default=None, compare=False)

    @property
    def failed(self) -> bool:
        return self.conclusion in FAILED_CONCLUSIONS

    @property
    def passed(self) -> bool:
        return self.conclusion in PASSED_CONCLUSIONS


_FIELDS = tuple(JobOutcome.__dataclass_fields__)


def signature_key(signature: str, captures_key: str) -> str:
    """The failure key of a root cause: its signature and its `group_by` captures (JSON)."""
    return f"{SIGNATURE_KEY}{signature}:{captures_key}"[:_KEY_CHARS]


def line_key(normalised_line: str) -> str:
    """The failure key of an unexplained job: its normalised best line."""
    return f"{LINE_KEY}{normalised_line.strip()}"[:_KEY_CHARS]


class JobOutcomes:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def record(self, outcomes: Sequence[JobOutcome]) -> int:
        """Write `outcomes`, each over the row of the same job of the same attempt; how many."""
        now = schema.now()
        rows = [_row(outcome) | {"recorded_at": now} for outcome in outcomes]
        with self.engine.begin() as conn:
            for start in range(0, len(rows), _INSERT_BATCH):
                _upsert_many(conn, rows[start : start + _INSERT_BATCH])
        return len(rows)

    def history(self, repo: str, keys: Collection[str], since: datetime) -> list[JobOutcome]:
        """The jobs since `since` that failed with one of `keys`, and every job at the same
        commits or trees (their re-runs, and re-pushes of the same code, passing or not): what
        the flaky rules weigh. Oldest first."""
        if not keys:
            return []
        columns = [job_outcomes.c[name] for name in _FIELDS]
        recent = job_outcomes.c.finished_at >= since
        with self.engine.connect() as conn:
            failed_here = (
                job_outcomes.c.repo == repo,
                job_outcomes.c.failure_key.in_(list(keys)),
                recent,
            )
            commits = select(job_outcomes.c.commit_sha).where(*failed_here)
            # flaky.same_code: a pass at another commit with the same tree changed no code.
            trees = select(job_outcomes.c.tree_sha).where(
                *failed_here, job_outcomes.c.tree_sha.is_not(None)
            )
            query = (
                select(*columns)
                .where(job_outcomes.c.repo == repo, recent)
                .where(
                    or_(
                        job_outcomes.c.failure_key.in_(list(keys)),
                        job_outcomes.c.commit_sha.in_(commits),
                        job_outcomes.c.tree_sha.in_(trees),
                    )
                )
                .order_by(job_outcomes.c.finished_at, job_outcomes.c.id)
            )
            return [_outcome(row._mapping) for row in conn.execute(query)]

    def of_run(self, repo: str, run_id: int) -> list[JobOutcome]:
        columns = [job_outcomes.c[name] for name in _FIELDS]
        query = (
            select(*columns)
            .where(job_outcomes.c.repo == repo, job_outcomes.c.run_id == run_id)
            .order_by(job_outcomes.c.run_attempt, job_outcomes.c.id)
        )
        with self.engine.connect() as conn:
            return [_outcome(row._mapping) for row in conn.execute(query)]

    def prune(self, before: datetime, batch: int = 1000) -> int:
        """Delete at most `batch` rows of jobs finished before `before` (oldest first); how
        many. Bounded so that one pass never holds the database's write lock for long."""
        oldest = (
            select(job_outcomes.c.id)
            .where(job_outcomes.c.finished_at < before)
            .order_by(job_outcomes.c.finished_at)
            .limit(batch)
        )
        with self.engine.begin() as conn:
            ids = list(conn.execute(oldest).scalars())
            if ids:
                conn.execute(delete(job_outcomes).where(job_outcomes.c.id.in_(ids)))
        return len(ids)


def _row(outcome: JobOutcome) -> dict[str, Any]:
    return {name: getattr(outcome, name) for name in _FIELDS}


def _outcome(row: Any) -> JobOutcome:
    return JobOutcome(**{name: row[name] for name in _FIELDS})


def _upsert_many(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """INSERT ... ON CONFLICT (the job of the attempt) DO UPDATE: concurrent triages of one
    attempt each write every job whole, never a duplicate row."""
    if not rows:
        return
    make = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    statement = make(job_outcomes).values(rows)
    keys = ["repo", "run_id", "run_attempt", "job_id"]
    changes = {name: statement.excluded[name] for name in rows[0] if name not in keys}
    conn.execute(statement.on_conflict_do_update(index_elements=keys, set_=changes))
