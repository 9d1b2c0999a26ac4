"""job_outcomes: an index on a repository's jobs by time, for the dashboard (issue #14, part 4).

The dashboard reads one repository's failed jobs of the last days (store/dashboard_data.py):
by day and kind, by signature, the newest unexplained. The index leads with the repository
and the time, so those read the days shown and not every row of the repository, and it holds
the columns they group by, so SQLite and PostgreSQL answer them from the index alone. On
100,000 rows (bench/dashboard.py) the busiest repository's page went from 620 ms to 210 ms.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

INDEX = "ix_job_outcomes_repo_finished"
COLUMNS = ["repo", "finished_at", "conclusion", "signature", "failure_key"]


def upgrade() -> None:
    op.create_index(INDEX, "job_outcomes", COLUMNS)


def downgrade() -> None:
    op.drop_index(INDEX, table_name="job_outcomes")
