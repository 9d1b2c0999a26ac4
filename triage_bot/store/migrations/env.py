"""Alembic's entry point. The bot's own upgrade (triage_bot.store.migrate) hands over its
connection, inside the transaction that holds the schema lock; Alembic's command line (a
developer writing the next revision: `alembic -c <ini> revision --autogenerate`) gets a
connection to its `sqlalchemy.url`, else DATABASE_URL."""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import Connection

from triage_bot.store import schema


def run(connection: Connection) -> None:
    # render_as_batch: SQLite alters a table by copying it, which batch mode writes for us.
    context.configure(connection=connection, target_metadata=schema.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def main() -> None:
    given = context.config.attributes.get("connection")
    if given is not None:
        run(given)
        return
    from triage_bot.store.store import make_engine  # only here: store.py runs the migrations

    url = context.config.get_main_option("sqlalchemy.url") or os.environ["DATABASE_URL"]
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            run(connection)
    finally:
        engine.dispose()


main()
