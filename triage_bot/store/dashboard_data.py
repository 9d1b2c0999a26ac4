"""What the dashboard (service/dashboard_page.py) shows of one repository's recorded job
outcomes (job_outcomes.py). The counts are aggregated in SQL (GROUP BY day, kind, signature;
migration 0003's index holds what they read); rows of jobs are read only for the likely-flaky
judgement (the signature failures of the 14-day flaky window and the passes that could prove
them) and for the newest CLUSTER_LIMIT unexplained jobs that drain3 clusters (report_clusters).

The figures are those of the coverage report (coverage.py) over the days shown: a failed job
is one job of one run attempt that failed; it is explained when its failure key is a
signature's (`sig:`). A failed job is counted as likely flaky, instead of explained, when its
key is judged likely flaky now (flaky.py, over the last 14 days), whatever its day.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Engine, and_, case, func, null, or_, select, tuple_

from triage_bot.store.coverage import FailedJob
from triage_bot.store.flaky import FLAKY_WINDOW, Verdict, judge
from triage_bot.store.job_outcomes import (
    FAILED_CONCLUSIONS,
    LINE_KEY,
    PASSED_CONCLUSIONS,
    SIGNATURE_KEY,
    JobOutcome,
)
from triage_bot.store.report_clusters import Cluster, cluster_unexplained
from triage_bot.store.schema import job_outcomes

DEFAULT_DAYS = 30
TOP = 10
# drain3 takes some 60 us a line: the newest this many unexplained jobs are clustered, which
# bounds the page's time whatever the repository's size (the page says how many it took).
CLUSTER_LIMIT = 1000
# `failed_counts` binds one parameter a repository, and `_flaky_history` one a commit:
# chunks stay far below SQLite's limit.
_REPOS_PER_QUERY = 500
_COMMITS_PER_QUERY = 2000

_FAILED = sorted(FAILED_CONCLUSIONS)
_PASSED = sorted(PASSED_CONCLUSIONS)
_SIGNATURE, _LINE, _NO_LINE = "signature", "line", "none"


@dataclass(frozen=True)
class DayCounts:
    """The failed jobs of one day (UTC), by what the catalog and the history made of them."""

    day: date
    explained: int  # by a signature, and not likely flaky
    likely_flaky: int
    unexplained: int

    @property
    def failed(self) -> int:
        return self.explained + self.likely_flaky + self.unexplained


@dataclass(frozen=True)
class FlakyKey:
    key: str
    signature: str | None
    why: str
    failures: int  # its failed jobs in the days shown
    proofs: tuple[tuple[JobOutcome, JobOutcome], ...]  # (failed, passed), newest first


@dataclass(frozen=True)
class DashboardData:
    repo: str
    since: datetime  # the first day's midnight (UTC)
    days: list[DayCounts]  # oldest first, one per day, days without failures too
    signatures: list[tuple[str, int]]  # the most frequent first
    flaky: list[FlakyKey]
    clusters: list[Cluster]
    clustered: int  # the unexplained jobs drain3 clustered (the newest CLUSTER_LIMIT)
    with_line: int  # the unexplained jobs that have a best line to cluster

    @property
    def failed(self) -> int:
        return sum(day.failed for day in self.days)

    @property
    def explained(self) -> int:
        """Failed jobs a signature explains (the likely-flaky ones included: a signature's)."""
        return sum(day.explained + day.likely_flaky for day in self.days)

    @property
    def likely_flaky(self) -> int:
        return sum(day.likely_flaky for day in self.days)

    @property
    def unexplained(self) -> int:
        return sum(day.unexplained for day in self.days)

    @property
    def coverage(self) -> float:
        return self.explained / self.failed if self.failed else 0.0


@dataclass(frozen=True)
class WeekCoverage:
    first: date
    failed: int
    explained: int

    @property
    def share(self) -> float | None:
        """The share a signature explains; None for a week without failed jobs."""
        return self.explained / self.failed if self.failed else None


def weekly(days: Sequence[DayCounts]) -> list[WeekCoverage]:
    """`days` (oldest first) in weeks of 7 days that end with the last day, oldest first; the
    first week may be shorter."""
    weeks = []
    for end in range(len(days), 0, -7):
        week = days[max(end - 7, 0) : end]
        failed = sum(day.failed for day in week)
        explained = sum(day.explained + day.likely_flaky for day in week)
        weeks.append(WeekCoverage(week[0].day, failed, explained))
    return weeks[::-1]


def first_day(now: datetime, days: int) -> datetime:
    """Midnight (UTC) of the first of `days` days that end with `now`'s."""
    today = now.astimezone(UTC).date()
    return datetime.combine(today - timedelta(days=days - 1), time(), UTC)


def dashboard_data(
    engine: Engine,
    repo: str,
    now: datetime,
    *,
    days: int = DEFAULT_DAYS,
    never: Collection[str] = (),
    top: int = TOP,
    cluster_limit: int = CLUSTER_LIMIT,
) -> DashboardData:
    """`repo`'s figures over the `days` days that end with `now`'s (UTC); `never`: the
    signatures that are never flaky (`flaky: never`). Reads only `repo`'s rows."""
    if days < 1:
        raise ValueError(f"days: at least 1, not {days}")
    since = first_day(now, days)
    until = since + timedelta(days=days)
    flaky = likely_flaky(engine, repo, now=now, never=never)
    flaky_keys = [verdict.key for verdict in flaky]
    per_day, failures, with_line = _per_day(engine, repo, since, until, flaky_keys)
    recent = _newest_unexplained(engine, repo, since, until, cluster_limit)
    return DashboardData(
        repo=repo,
        since=since,
        days=[per_day.get(since.date() + timedelta(days=n), _empty(since, n)) for n in range(days)],
        signatures=top_signatures(engine, repo, since, until, top),
        flaky=[_flaky_key(verdict, failures.get(verdict.key, 0)) for verdict in flaky],
        clusters=cluster_unexplained(recent, top),
        clustered=len(recent),
        with_line=with_line,
    )


def _empty(since: datetime, n: int) -> DayCounts:
    return DayCounts(since.date() + timedelta(days=n), 0, 0, 0)


def _failed_in(repo: str, since: datetime, until: datetime) -> ColumnElement[bool]:
    columns = job_outcomes.c
    return and_(
        columns.repo == repo,
        columns.finished_at >= since,
        columns.finished_at < until,
        columns.conclusion.in_(_FAILED),
    )


def _day(engine: Engine) -> ColumnElement[Any]:
    """A failed job's day as 'YYYY-MM-DD' (UTC): SQLite keeps the time as UTC text
    (schema.UTCDateTime); PostgreSQL's timestamptz is put in UTC first."""
    finished = job_outcomes.c.finished_at
    if engine.dialect.name == "postgresql":
        return func.to_char(func.timezone("UTC", finished), "YYYY-MM-DD")
    return func.substr(finished, 1, 10)


def _kind() -> ColumnElement[str]:
    key = job_outcomes.c.failure_key
    return case(
        (key.startswith(SIGNATURE_KEY, autoescape=True), _SIGNATURE),
        (key.startswith(LINE_KEY, autoescape=True), _LINE),
        else_=_NO_LINE,
    )


def _per_day(
    engine: Engine, repo: str, since: datetime, until: datetime, flaky_keys: Sequence[str]
) -> tuple[dict[date, DayCounts], dict[str, int], int]:
    """The failed jobs of each day by kind, each likely-flaky key's failed jobs, and how many
    unexplained jobs have a best line: one scan of the days' rows."""
    key = job_outcomes.c.failure_key
    day, kind = _day(engine), _kind()
    flaky = case((key.in_(flaky_keys), key), else_=None) if flaky_keys else null()
    # PostgreSQL refuses a constant (no flaky key: NULL) in GROUP BY.
    grouped = [day, kind, flaky] if flaky_keys else [day, kind]
    query = (
        select(day, kind, flaky, func.count())
        .where(_failed_in(repo, since, until))
        .group_by(*grouped)
    )
    counts: dict[date, Counter[str]] = {}
    of_key: Counter[str] = Counter()
    with engine.connect() as conn:
        for text, what, flaky_key, count in conn.execute(query):
            found = counts.setdefault(date.fromisoformat(text), Counter())
            found[what] += count
            if flaky_key is not None:
                found["flaky"] += count
                of_key[flaky_key] += count
    days = {
        when: DayCounts(
            when,
            explained=found[_SIGNATURE] - found["flaky"],  # a likely-flaky key is a signature's
            likely_flaky=found["flaky"],
            unexplained=found[_LINE] + found[_NO_LINE],
        )
        for when, found in counts.items()
    }
    return days, dict(of_key), sum(found[_LINE] for found in counts.values())


def top_signatures(
    engine: Engine, repo: str, since: datetime, until: datetime, top: int = TOP
) -> list[tuple[str, int]]:
    """The `top` signatures that explained the most failed jobs, with how many (ties: by
    name)."""
    signature, count = job_outcomes.c.signature, func.count()
    query = (
        select(signature, count)
        .where(_failed_in(repo, since, until))
        .where(job_outcomes.c.failure_key.startswith(SIGNATURE_KEY, autoescape=True))
        .group_by(signature)
        .order_by(count.desc(), signature)
        .limit(top)
    )
    with engine.connect() as conn:
        return [(name or "?", number) for name, number in conn.execute(query)]


def _newest_unexplained(
    engine: Engine, repo: str, since: datetime, until: datetime, limit: int
) -> list[FailedJob]:
    """The newest `limit` failed jobs with a best line, oldest first (as cluster_unexplained
    takes them: its example is a cluster's newest)."""
    columns = job_outcomes.c
    # An unexplained job has no signature nor captures: NULL for both, nothing to read.
    read = [columns.repo, null(), columns.failure_key, null(), columns.url, columns.finished_at]
    query = (
        select(*read)
        .where(_failed_in(repo, since, until))
        .where(columns.failure_key.startswith(LINE_KEY, autoescape=True))
        .order_by(columns.finished_at.desc(), columns.id.desc())
        .limit(limit)
    )
    with engine.connect() as conn:
        return [FailedJob(*row) for row in reversed(conn.execute(query).all())]


def likely_flaky(
    engine: Engine, repo: str, *, now: datetime, never: Collection[str] = ()
) -> list[Verdict]:
    """`repo`'s failure keys that flaky.judge calls likely flaky now, by key.

    Each signature key that failed in the flaky window is judged on its own history, with
    the verdict `judge_keys(outcomes, repo, {key})` gives (the comment's and the report's),
    read for all keys at once and lean: judge weighs only the key's failures and the passes
    of the same job on the same code (the commit, or another with the same tree: within
    JobOutcomes.history's reach); the other jobs there, which history reads too, are left
    out (half the rows of a busy repository). A key without such a pass is not judged: both
    rules need one."""
    since = now - FLAKY_WINDOW
    failures, passes = _flaky_history(engine, repo, since)
    at_commit: dict[tuple[str, str], list[_Row]] = {}
    at_tree: dict[tuple[str, str], list[_Row]] = {}
    for row in passes:
        outcome = row[1]
        at_commit.setdefault((outcome.commit_sha, outcome.job_full_name), []).append(row)
        if outcome.tree_sha is not None:
            at_tree.setdefault((outcome.tree_sha, outcome.job_full_name), []).append(row)
    of_key: dict[str, list[_Row]] = {}
    for row in failures:
        of_key.setdefault(row[1].failure_key or "", []).append(row)
    verdicts = []
    for key, failed in sorted(of_key.items()):
        usable = _passes_for(failed, at_commit, at_tree)
        if usable:
            history = [outcome for _, outcome in sorted(failed + usable, key=_history_order)]
            verdicts.append(judge(key, history, now=now, never=never))
    return [verdict for verdict in verdicts if verdict.likely_flaky]


_Row = tuple[int, JobOutcome]  # with the row's id: history's order is (finished_at, id)
_FIELDS = [field.name for field in fields(JobOutcome)]


def _history_order(row: _Row) -> tuple[datetime, int]:
    return row[1].finished_at, row[0]


def _passes_for(
    failed: Sequence[_Row],
    at_commit: dict[tuple[str, str], list[_Row]],
    at_tree: dict[tuple[str, str], list[_Row]],
) -> list[_Row]:
    """The passes that could prove one key's `failed` jobs flaky: the same job at the same
    commit or tree."""
    found: dict[int, _Row] = {}
    for _, outcome in failed:
        same = at_commit.get((outcome.commit_sha, outcome.job_full_name), [])
        if outcome.tree_sha is not None:
            same = same + at_tree.get((outcome.tree_sha, outcome.job_full_name), [])
        found.update((row[0], row) for row in same)
    return list(found.values())


def _flaky_history(engine: Engine, repo: str, since: datetime) -> tuple[list[_Row], list[_Row]]:
    """The signature failures since `since`, and the passes since then of a job that one of
    them failed in, at its commit or its tree."""
    columns = job_outcomes.c
    recent = and_(columns.repo == repo, columns.finished_at >= since)
    failed = and_(
        recent,
        columns.conclusion.in_(_FAILED),
        columns.failure_key.startswith(SIGNATURE_KEY, autoescape=True),
    )
    same_commit = select(columns.commit_sha, columns.job_full_name).where(failed)
    same_tree = select(columns.tree_sha, columns.job_full_name).where(
        failed, columns.tree_sha.is_not(None)
    )
    pairs = or_(
        tuple_(columns.commit_sha, columns.job_full_name).in_(same_commit),
        tuple_(columns.tree_sha, columns.job_full_name).in_(same_tree),
    )
    read = [columns.id, *(columns[name] for name in _FIELDS)]
    with engine.connect() as conn:
        failures = _rows(conn.execute(select(*read).where(failed)))
        commits = sorted({outcome.commit_sha for _, outcome in failures})
        trees = sorted({o.tree_sha for _, o in failures if o.tree_sha is not None})
        passes: dict[int, _Row] = {}
        # The failures' commits as a list, not a subquery: it makes both databases start
        # from the commit index (with a subquery PostgreSQL read every repository's days).
        # Then their trees: a pass at another commit with the same tree changed no code.
        for column, values in ((columns.commit_sha, commits), (columns.tree_sha, trees)):
            for start in range(0, len(values), _COMMITS_PER_QUERY):
                chunk = values[start : start + _COMMITS_PER_QUERY]
                where = [recent, columns.conclusion.in_(_PASSED), column.in_(chunk), pairs]
                passes.update(
                    (row[0], row) for row in _rows(conn.execute(select(*read).where(*where)))
                )
    return failures, list(passes.values())


def _rows(result: Iterable[Any]) -> list[_Row]:
    return [(row[0], JobOutcome(*row[1:])) for row in result]


def _flaky_key(verdict: Verdict, failures: int) -> FlakyKey:
    signature = verdict.proofs[0].failed.signature if verdict.proofs else None
    proofs = tuple((proof.failed, proof.passed) for proof in verdict.proofs)
    return FlakyKey(verdict.key, signature, verdict.why, failures, proofs)


def failed_counts(
    engine: Engine, repos: Sequence[str], now: datetime, days: int = DEFAULT_DAYS
) -> dict[str, int]:
    """Each of `repos`' failed jobs in the `days` days that end with `now`'s (0 for none)."""
    since = first_day(now, days)
    until = since + timedelta(days=days)
    columns = job_outcomes.c
    found = dict.fromkeys(repos, 0)
    with engine.connect() as conn:
        for start in range(0, len(repos), _REPOS_PER_QUERY):
            chunk = list(repos[start : start + _REPOS_PER_QUERY])
            query = (
                select(columns.repo, func.count())
                .where(
                    columns.repo.in_(chunk),
                    columns.finished_at >= since,
                    columns.finished_at < until,
                    columns.conclusion.in_(_FAILED),
                )
                .group_by(columns.repo)
            )
            for repo, count in conn.execute(query):
                found[repo] = count
    return found
