"""What the coverage report (`triage-bot report`) reads of the recorded job outcomes
(job_outcomes.py): the failed jobs of a period, and what the catalog made of them.

A failed job is explained when its failure key is a signature's (`sig:`); an unexplained
job's key is its normalised best line (`line:`), or nothing when its log had no line to
show. The counts are per job of a run attempt (one row each), so a job that failed on three
attempts counts three times: each was a red job someone looked at.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import Engine, create_engine, inspect, make_url, select

from triage_bot.config import normalize_database_url
from triage_bot.store.flaky import Verdict, judge_keys, specific
from triage_bot.store.job_outcomes import (
    FAILED_CONCLUSIONS,
    LINE_KEY,
    SIGNATURE_KEY,
    JobOutcome,
    JobOutcomes,
)
from triage_bot.store.schema import job_outcomes


class NoHistory(Exception):
    """The database holds no recorded jobs to report on (one line: what to do)."""


def open_for_report(url: str) -> Engine:
    """An engine on the App's database that only reads. Not Store(url): that upgrades the
    schema (a report should change nothing) and imports the GitHub client with the job
    ledger (0.4 s of a report's 1 s)."""
    url = normalize_database_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database not in ("", ":memory:") and not database.startswith("file:"):
            if not Path(database).is_file():
                raise NoHistory(f"no database at {database} (DATABASE_URL, TRIAGE_DATA_DIR)")
            url = str(parsed.set(database=f"file:{database}?mode=ro", query={"uri": "true"}))
    engine = create_engine(url)
    if not inspect(engine).has_table(job_outcomes.name):
        engine.dispose()
        raise NoHistory("the database has no job history: run `triage-bot db upgrade`")
    return engine


@dataclass(frozen=True)
class FailedJob:
    """What the report needs of one failed job (not the whole row: a few thousand are read)."""

    repo: str
    signature: str | None
    failure_key: str | None
    captures: dict[str, str] | None
    url: str | None
    finished_at: datetime

    @property
    def explained(self) -> bool:
        return (self.failure_key or "").startswith(SIGNATURE_KEY)

    @property
    def best_line(self) -> str | None:
        """An unexplained job's normalised best line; None for an explained job, or one whose
        log had no line to show."""
        key = self.failure_key or ""
        return key[len(LINE_KEY) :] if key.startswith(LINE_KEY) else None


@dataclass(frozen=True)
class Coverage:
    failed: int
    explained: int
    signatures: list[tuple[str, int]]  # the most frequent first

    @property
    def share(self) -> float:
        """The share of failed jobs a signature explains (0.0 when none failed)."""
        return self.explained / self.failed if self.failed else 0.0


def failed_jobs(engine: Engine, since: datetime, repo: str | None = None) -> list[FailedJob]:
    """The failed jobs that finished since `since` (of `repo`, else of every repository),
    oldest first."""
    columns = job_outcomes.c
    query = (
        select(
            columns.repo,
            columns.signature,
            columns.failure_key,
            columns.captures,
            columns.url,
            columns.finished_at,
        )
        .where(columns.finished_at >= since, columns.conclusion.in_(sorted(FAILED_CONCLUSIONS)))
        .order_by(columns.finished_at, columns.id)
    )
    if repo is not None:
        query = query.where(columns.repo == repo)
    with engine.connect() as conn:
        return [FailedJob(*row) for row in conn.execute(query)]


def coverage(jobs: Sequence[FailedJob], top: int = 10) -> Coverage:
    explained = [job for job in jobs if job.explained]
    counts = Counter(job.signature or "?" for job in explained)
    return Coverage(len(jobs), len(explained), counts.most_common(top))


def flaky_verdicts(
    outcomes: JobOutcomes,
    jobs: Sequence[FailedJob],
    *,
    now: datetime,
    never: Collection[str] = (),
) -> dict[str, list[Verdict]]:
    """The likely-flaky failure keys of each repository, by flaky.judge over the flaky window
    (whatever the report's period). Only keys specific enough to be judged are read back
    from the store: the others can never be likely flaky; nor can those of the signatures
    in `never` (their file says `flaky: never`)."""
    keys_by_repo: dict[str, set[str]] = {}
    for job in jobs:
        if job.failure_key and specific(_as_outcome(job)):
            keys_by_repo.setdefault(job.repo, set()).add(job.failure_key)
    found: dict[str, list[Verdict]] = {}
    for repo, keys in sorted(keys_by_repo.items()):
        verdicts = judge_keys(outcomes, repo, keys, now=now, never=never)
        flaky = [verdict for verdict in verdicts.values() if verdict.likely_flaky]
        if flaky:
            found[repo] = sorted(flaky, key=lambda verdict: verdict.key)
    return found


def _as_outcome(job: FailedJob) -> JobOutcome:
    """Enough of a JobOutcome for flaky.specific, which reads only the key and captures."""
    return JobOutcome(
        repo=job.repo, run_id=0, run_attempt=0, job_id=0, workflow=None, workflow_id=None,
        job_name="", job_full_name="", conclusion="failure", commit_sha="",
        finished_at=job.finished_at, signature=job.signature, captures=job.captures,
        failure_key=job.failure_key,
    )  # fmt: skip
