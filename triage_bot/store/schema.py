"""The database tables (SQLAlchemy Core), shared by the store and the job ledger.

GitHub's numbers (run ids, installation ids, comment ids) pass 2**31, so they are BigInteger.
Timestamps are UTC; SQLite keeps them as naive text, so `UTCDateTime` puts the zone back.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    ColumnElement,
    Connection,
    DateTime,
    Dialect,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert


class UTCDateTime(TypeDecorator[datetime]):
    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = value.astimezone(UTC)
        # SQLite compares timestamps as text: one zone-less format keeps that ordering right.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def now() -> datetime:
    return datetime.now(UTC)


def upsert(
    conn: Connection,
    table: Table,
    row: dict[str, Any],
    keys: list[str],
    where: ColumnElement[bool] | None = None,
) -> bool:
    """INSERT ... ON CONFLICT DO UPDATE (only `where` it holds), one atomic statement on both
    databases, so two writers of the same key never race between a SELECT and an INSERT.
    True when the row was written (told by RETURNING: the rowcount of an upsert is not
    reliable across drivers)."""
    make = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    statement = make(table).values(**row)
    changes = {name: statement.excluded[name] for name in row if name not in keys}
    upserted = statement.on_conflict_do_update(index_elements=keys, set_=changes, where=where)
    return conn.execute(upserted.returning(*(table.c[key] for key in keys))).first() is not None


metadata = MetaData()

deliveries = Table(
    "deliveries",
    metadata,
    # The primary key is what makes a redelivery (same X-GitHub-Delivery) detectable
    # atomically, across any number of servers sharing the database.
    Column("delivery_id", String(100), primary_key=True),
    Column("event", String(100), nullable=False),
    Column("action", String(100)),
    Column("outcome", String(32), nullable=False),
    Column("job_id", String(64)),
    Column("received_at", UTCDateTime(), nullable=False),
)

installations = Table(
    "installations",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=False),
    Column("account", String(255)),
    Column("repository_selection", String(16)),
    Column("repos", JSON, nullable=False),  # sorted list of "owner/name"
    Column("suspended", Boolean, nullable=False, default=False),
    Column("updated_at", UTCDateTime(), nullable=False),
)

triages = Table(
    "triages",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("repo", String(255), nullable=False),
    Column("run_id", BigInteger, nullable=False),
    Column("run_attempt", BigInteger, nullable=False),
    Column("head_sha", String(64), nullable=False),
    Column("pr_number", BigInteger),
    Column("status", String(16), nullable=False),  # running | done | failed
    Column("error", Text),
    Column("report", JSON),
    Column("started_at", UTCDateTime(), nullable=False),
    Column("finished_at", UTCDateTime()),
    UniqueConstraint("repo", "run_id", "run_attempt", name="uq_triages_run"),
)

comments = Table(
    "comments",
    metadata,
    Column("repo", String(255), primary_key=True),
    Column("pr_number", BigInteger, primary_key=True, autoincrement=False),
    Column("comment_id", BigInteger),
    Column("body_hash", String(64)),
    Column("head_sha", String(64)),
    Column("outdated", Boolean, nullable=False, default=False),
    Column("updated_at", UTCDateTime(), nullable=False),
)

# Short leases, claimed by an atomic insert; see Store.comment_lock.
locks = Table(
    "locks",
    metadata,
    Column("name", String(400), primary_key=True),
    Column("owner", String(64), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
)

# Things done at most once, whoever tries (an automatic re-run of a run, the answer to a
# command): the primary key makes claiming one atomic, across workers and databases.
claims = Table(
    "claims",
    metadata,
    Column("name", String(400), primary_key=True),
    Column("claimed_at", UTCDateTime(), nullable=False),
)

job_failures = Table(
    "job_failures",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("repo", String(255), nullable=False),
    Column("workflow", String(255)),
    Column("job_name", String(400), nullable=False),
    Column("signature", String(255), nullable=False),
    Column("captures_key", String(400), nullable=False),
    Column("commit_sha", String(64), nullable=False),
    Column("run_id", BigInteger, nullable=False),
    Column("recorded_at", UTCDateTime(), nullable=False),
    Index("ix_job_failures_commit", "repo", "commit_sha"),
    Index("ix_job_failures_signature", "repo", "signature", "captures_key"),
    Index("ix_job_failures_run", "repo", "run_id"),
)

# The runs whose failures `job_failures` holds (one row a run, its latest attempt triaged):
# what tells "triaged, nothing recognised" from "never triaged" (triage_bot.store.failure_records).
triaged_runs = Table(
    "triaged_runs",
    metadata,
    Column("repo", String(255), primary_key=True),
    Column("run_id", BigInteger, primary_key=True, autoincrement=False),
    Column("run_attempt", BigInteger, nullable=False),
    Column("workflow_id", BigInteger),
    Column("commit_sha", String(64), nullable=False),
    Column("complete", Boolean, nullable=False),  # the run had finished when triaged
    Column("partial_logs", Integer, nullable=False),  # failed jobs whose log was not read whole
    Column("recorded_at", UTCDateTime(), nullable=False),
)

# The pull request comment's part for each workflow (triage_bot.store.comment_sections): one comment
# shows every failing workflow of the head commit, each run's section rendered when it was
# triaged, and the comment is put together from them under the comment lock.
comment_sections = Table(
    "comment_sections",
    metadata,
    Column("repo", String(255), primary_key=True),
    Column("pr_number", BigInteger, primary_key=True, autoincrement=False),
    Column("workflow", String(255), primary_key=True),  # the workflow's id, or its name
    Column("title", String(255), nullable=False),  # the workflow's name, for ordering
    Column("run_id", BigInteger, nullable=False),
    Column("run_attempt", BigInteger, nullable=False),
    Column("head_sha", String(64), nullable=False),
    Column("body", Text, nullable=False),
    Column("problems", JSON, nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    Index("ix_comment_sections_head", "repo", "head_sha", "workflow"),
)

# Every job of every triaged run, passing or failing (triage_bot.store.job_outcomes): what the
# flaky rules (triage_bot.store.flaky) and the history read. One row a job of a run attempt.
# Made by migration 0002, indexed by 0003 (migrations/versions/): a change here needs a new
# revision there.
job_outcomes = Table(
    "job_outcomes",
    metadata,
    Column("id", BigInteger().with_variant(Integer(), "sqlite"), primary_key=True),
    Column("repo", String(255), nullable=False),
    Column("run_id", BigInteger, nullable=False),
    Column("run_attempt", BigInteger, nullable=False),
    Column("job_id", BigInteger, nullable=False),
    Column("workflow", String(255)),  # the workflow's name
    Column("workflow_id", BigInteger),
    Column("job_name", String(400), nullable=False),  # without matrix values and shard number
    Column("job_full_name", String(400), nullable=False),  # as GitHub names it: one shard
    Column("conclusion", String(32), nullable=False),  # GitHub's: success, failure, ...
    Column("signature", String(255)),  # the root cause's signature; None: passed, unexplained
    Column("captures", JSON),  # the root cause's `group_by` captures, by name
    Column("failure_key", String(400)),  # captures as a JSON list, or the normalised best line
    Column("commit_sha", String(64), nullable=False),
    Column("tree_sha", String(64)),  # the commit's tree: the same code under another commit
    Column("branch", String(255)),  # the run's head branch
    Column("pr_number", BigInteger),  # the pull request triaged; None: a branch's own run
    Column("url", String(500)),  # the job on GitHub
    Column("finished_at", UTCDateTime(), nullable=False),
    Column("recorded_at", UTCDateTime(), nullable=False),
    UniqueConstraint("repo", "run_id", "run_attempt", "job_id", name="uq_job_outcomes_job"),
    Index("ix_job_outcomes_key", "repo", "failure_key"),
    Index("ix_job_outcomes_commit", "repo", "commit_sha"),
    Index("ix_job_outcomes_finished", "finished_at"),
    # A repository's jobs by time, with what the dashboard groups them by (migration 0003).
    Index(
        "ix_job_outcomes_repo_finished",
        "repo",
        "finished_at",
        "conclusion",
        "signature",
        "failure_key",
    ),
)

# The job ledger: every queued job has a row here before it is pushed to huey, so a job that
# a killed worker had popped can be found and pushed again (see triage_bot.service.queue).
jobs = Table(
    "jobs",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("coalesce_key", String(400)),
    Column("payload", JSON, nullable=False),
    Column("status", String(16), nullable=False),  # queued | running | done | failed
    Column("attempts", Integer, nullable=False, default=0),
    Column("error", Text),
    Column("owner", String(64)),  # the claim token of the worker running it
    Column("lease_until", UTCDateTime()),
    Column("available_at", UTCDateTime(), nullable=False),  # not expected to run before
    Column("created_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    Column("finished_at", UTCDateTime()),
    Index("ix_jobs_status", "status", "updated_at"),
    Index("ix_jobs_coalesce", "coalesce_key", "status"),
)
