"""The baseline: the schema that create_all made before migrations existed.

Revision ID: 0001
Revises: (none)

A copy, frozen here, of schema.py's tables as that release had them: later changes go in
later revisions, never here. Only the missing tables are created, so a database made by that
release (every table there, no `alembic_version`) is merely stamped (migrate.py).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

UTC_TIME = sa.DateTime(timezone=True)  # schema.UTCDateTime's column type


def _tables() -> list[sa.Table]:
    meta = sa.MetaData()
    return [
        sa.Table(
            "deliveries",
            meta,
            sa.Column("delivery_id", sa.String(100), primary_key=True),
            sa.Column("event", sa.String(100), nullable=False),
            sa.Column("action", sa.String(100)),
            sa.Column("outcome", sa.String(32), nullable=False),
            sa.Column("job_id", sa.String(64)),
            sa.Column("received_at", UTC_TIME, nullable=False),
        ),
        sa.Table(
            "installations",
            meta,
            sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
            sa.Column("account", sa.String(255)),
            sa.Column("repository_selection", sa.String(16)),
            sa.Column("repos", sa.JSON, nullable=False),
            sa.Column("suspended", sa.Boolean, nullable=False),
            sa.Column("updated_at", UTC_TIME, nullable=False),
        ),
        sa.Table(
            "triages",
            meta,
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("repo", sa.String(255), nullable=False),
            sa.Column("run_id", sa.BigInteger, nullable=False),
            sa.Column("run_attempt", sa.BigInteger, nullable=False),
            sa.Column("head_sha", sa.String(64), nullable=False),
            sa.Column("pr_number", sa.BigInteger),
            sa.Column("status", sa.String(16), nullable=False),
            sa.Column("error", sa.Text),
            sa.Column("report", sa.JSON),
            sa.Column("started_at", UTC_TIME, nullable=False),
            sa.Column("finished_at", UTC_TIME),
            sa.UniqueConstraint("repo", "run_id", "run_attempt", name="uq_triages_run"),
        ),
        sa.Table(
            "comments",
            meta,
            sa.Column("repo", sa.String(255), primary_key=True),
            sa.Column("pr_number", sa.BigInteger, primary_key=True, autoincrement=False),
            sa.Column("comment_id", sa.BigInteger),
            sa.Column("body_hash", sa.String(64)),
            sa.Column("head_sha", sa.String(64)),
            sa.Column("outdated", sa.Boolean, nullable=False),
            sa.Column("updated_at", UTC_TIME, nullable=False),
        ),
        sa.Table(
            "locks",
            meta,
            sa.Column("name", sa.String(400), primary_key=True),
            sa.Column("owner", sa.String(64), nullable=False),
            sa.Column("expires_at", UTC_TIME, nullable=False),
        ),
        sa.Table(
            "claims",
            meta,
            sa.Column("name", sa.String(400), primary_key=True),
            sa.Column("claimed_at", UTC_TIME, nullable=False),
        ),
        sa.Table(
            "job_failures",
            meta,
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("repo", sa.String(255), nullable=False),
            sa.Column("workflow", sa.String(255)),
            sa.Column("job_name", sa.String(400), nullable=False),
            sa.Column("signature", sa.String(255), nullable=False),
            sa.Column("captures_key", sa.String(400), nullable=False),
            sa.Column("commit_sha", sa.String(64), nullable=False),
            sa.Column("run_id", sa.BigInteger, nullable=False),
            sa.Column("recorded_at", UTC_TIME, nullable=False),
            sa.Index("ix_job_failures_commit", "repo", "commit_sha"),
            sa.Index("ix_job_failures_signature", "repo", "signature", "captures_key"),
            sa.Index("ix_job_failures_run", "repo", "run_id"),
        ),
        sa.Table(
            "triaged_runs",
            meta,
            sa.Column("repo", sa.String(255), primary_key=True),
            sa.Column("run_id", sa.BigInteger, primary_key=True, autoincrement=False),
            sa.Column("run_attempt", sa.BigInteger, nullable=False),
            sa.Column("workflow_id", sa.BigInteger),
            sa.Column("commit_sha", sa.String(64), nullable=False),
            sa.Column("complete", sa.Boolean, nullable=False),
            sa.Column("partial_logs", sa.Integer, nullable=False),
            sa.Column("recorded_at", UTC_TIME, nullable=False),
        ),
        sa.Table(
            "comment_sections",
            meta,
            sa.Column("repo", sa.String(255), primary_key=True),
            sa.Column("pr_number", sa.BigInteger, primary_key=True, autoincrement=False),
            sa.Column("workflow", sa.String(255), primary_key=True),
            sa.Column("title", sa.String(255), nullable=False),
            sa.Column("run_id", sa.BigInteger, nullable=False),
            sa.Column("run_attempt", sa.BigInteger, nullable=False),
            sa.Column("head_sha", sa.String(64), nullable=False),
            sa.Column("body", sa.Text, nullable=False),
            sa.Column("problems", sa.JSON, nullable=False),
            sa.Column("updated_at", UTC_TIME, nullable=False),
            sa.Index("ix_comment_sections_head", "repo", "head_sha", "workflow"),
        ),
        sa.Table(
            "jobs",
            meta,
            sa.Column("id", sa.String(64), primary_key=True),
            sa.Column("kind", sa.String(32), nullable=False),
            sa.Column("coalesce_key", sa.String(400)),
            sa.Column("payload", sa.JSON, nullable=False),
            sa.Column("status", sa.String(16), nullable=False),
            sa.Column("attempts", sa.Integer, nullable=False),
            sa.Column("error", sa.Text),
            sa.Column("owner", sa.String(64)),
            sa.Column("lease_until", UTC_TIME),
            sa.Column("available_at", UTC_TIME, nullable=False),
            sa.Column("created_at", UTC_TIME, nullable=False),
            sa.Column("updated_at", UTC_TIME, nullable=False),
            sa.Column("finished_at", UTC_TIME),
            sa.Index("ix_jobs_status", "status", "updated_at"),
            sa.Index("ix_jobs_coalesce", "coalesce_key", "status"),
        ),
    ]


def upgrade() -> None:
    connection = op.get_bind()
    for table in _tables():
        # checkfirst: the tables a create_all database has already are left as they are.
        table.create(connection, checkfirst=True)


def downgrade() -> None:
    connection = op.get_bind()
    for table in reversed(_tables()):
        table.drop(connection, checkfirst=True)
