"""job_outcomes: every job of every triaged run, passing or failing (issue #14, part 1).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

UTC_TIME = sa.DateTime(timezone=True)  # schema.UTCDateTime's column type
# SQLite numbers a row only through an INTEGER PRIMARY KEY; PostgreSQL's may pass 2**31.
ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "job_outcomes",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(255), nullable=False),
        sa.Column("run_id", sa.BigInteger, nullable=False),
        sa.Column("run_attempt", sa.BigInteger, nullable=False),
        sa.Column("job_id", sa.BigInteger, nullable=False),
        sa.Column("workflow", sa.String(255)),
        sa.Column("workflow_id", sa.BigInteger),
        sa.Column("job_name", sa.String(400), nullable=False),
        sa.Column("job_full_name", sa.String(400), nullable=False),
        sa.Column("conclusion", sa.String(32), nullable=False),
        sa.Column("signature", sa.String(255)),
        sa.Column("captures", sa.JSON),
        sa.Column("failure_key", sa.String(400)),
        sa.Column("commit_sha", sa.String(64), nullable=False),
        sa.Column("tree_sha", sa.String(64)),
        sa.Column("branch", sa.String(255)),
        sa.Column("pr_number", sa.BigInteger),
        sa.Column("url", sa.String(500)),
        sa.Column("finished_at", UTC_TIME, nullable=False),
        sa.Column("recorded_at", UTC_TIME, nullable=False),
        sa.UniqueConstraint("repo", "run_id", "run_attempt", "job_id", name="uq_job_outcomes_job"),
    )
    op.create_index("ix_job_outcomes_key", "job_outcomes", ["repo", "failure_key"])
    op.create_index("ix_job_outcomes_commit", "job_outcomes", ["repo", "commit_sha"])
    op.create_index("ix_job_outcomes_finished", "job_outcomes", ["finished_at"])


def downgrade() -> None:
    op.drop_index("ix_job_outcomes_finished", table_name="job_outcomes")
    op.drop_index("ix_job_outcomes_commit", table_name="job_outcomes")
    op.drop_index("ix_job_outcomes_key", table_name="job_outcomes")
    op.drop_table("job_outcomes")
