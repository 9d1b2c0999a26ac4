"""`triage-bot db upgrade`: bring the database (DATABASE_URL, else the data directory's SQLite
file) to the newest schema, as every `serve` and `worker` also does when it starts."""

from __future__ import annotations

import argparse
import sys

from triage_bot.config import environment, load_settings

EXIT_OK = 0
EXIT_FAILED = 1


def add_db_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    db = commands.add_parser("db", help="manage the database's schema")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="COMMAND")
    text = (
        "Upgrade the database (DATABASE_URL, else TRIAGE_DATA_DIR's triage.db) to the newest "
        "schema, in place, keeping its rows. A database made before migrations existed is "
        "stamped at the baseline first. `serve` and `worker` do the same when they start; "
        "this runs it alone, e.g. before starting them."
    )
    upgrade = db_commands.add_parser(
        "upgrade", help="upgrade the schema in place", description=text
    )
    upgrade.set_defaults(run=upgrade_database)


def upgrade_database(_args: argparse.Namespace) -> int:
    # Imported here: the database's modules would slow every other command's start.
    from sqlalchemy.exc import SQLAlchemyError

    from triage_bot.store import migrate
    from triage_bot.store.store import make_engine

    url = load_settings(environment()).database_url
    engine = make_engine(url)
    try:
        done = migrate.upgrade(engine)
    except (SQLAlchemyError, migrate.UnknownRevision) as exc:
        print(f"triage-bot: database: {exc}".splitlines()[0], file=sys.stderr)
        return EXIT_FAILED
    finally:
        engine.dispose()
    if not done.changed:
        print(f"the database is at the newest schema ({done.after})")
    elif done.legacy:
        print(f"stamped at the baseline {migrate.BASELINE}, then upgraded to {done.after}")
    else:
        print(f"upgraded from {done.before or 'an empty database'} to {done.after}")
    return EXIT_OK
