"""The schema's migrations (Alembic): every process that opens the database, and
`triage-bot db upgrade`, bring it to the newest revision before anything else touches it.

The revisions live in migrations/versions/ and ship inside the package. v0001 is the schema
that SQLAlchemy's create_all made before migrations existed (the baseline); a database made
that way has our tables but no `alembic_version`: it is taken to the baseline first (the
baseline creates only the tables missing, none for a database of that release, and stamps it)
and then upgraded in place like any other. An empty database goes from nothing to the head.

Several processes start together (a server and its workers): the whole upgrade runs in one
transaction that holds the schema lock, a transaction-scoped advisory lock on PostgreSQL
(whose DDL is transactional) and BEGIN IMMEDIATE on SQLite (store.py), so one process
migrates and the others then find the head. A database already at the head costs one read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, inspect, text

if TYPE_CHECKING:  # Alembic is imported when a database is opened: the CLI's start stays fast
    from alembic.config import Config

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).with_name("migrations")
BASELINE = "0001"  # the schema of the release before migrations (create_all)
# The newest revision: bump it with each new one. Known here, the check that a database is up
# to date costs one read and no import of Alembic (some 90 ms of CPU at each process's start).
HEAD = "0003"
VERSION_TABLE = "alembic_version"
# PostgreSQL's advisory lock id for changing the schema (any number no other lock uses).
SCHEMA_LOCK_KEY = 0x7472_6961_6765
# A table every create_all database has: its presence without `alembic_version` says "legacy".
_LEGACY_MARK = "deliveries"


class UnknownRevision(RuntimeError):
    """The database is at a revision this release does not have (a newer one migrated it)."""

    def __init__(self, revision: str | None, error: Exception) -> None:
        super().__init__(
            f"the database's schema is at revision {revision}, which this release of "
            f"triage-bot does not know (newest: {HEAD}); run the release that made it ({error})"
        )


@dataclass(frozen=True)
class Upgrade:
    """What an upgrade found and left: the revisions before and after (None: no
    `alembic_version`), and whether the database was one made by create_all."""

    before: str | None
    after: str
    legacy: bool = False

    @property
    def changed(self) -> bool:
        return self.before != self.after


def alembic_config(connection: Connection | None = None) -> Config:
    """Alembic's configuration for our migrations; with `connection`, env.py migrates it."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head() -> str:
    """The newest revision (HEAD; tests/store/test_migrations.py checks it is Alembic's)."""
    return HEAD


def script_head() -> str:
    """The newest revision as Alembic reads it from migrations/versions/."""
    from alembic.script import ScriptDirectory

    found = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if found is None:
        raise RuntimeError(f"no migration in {MIGRATIONS}")
    return found


def current(connection: Connection) -> str | None:
    """The database's revision; None when it has no `alembic_version` (empty, or legacy).
    Read without Alembic (as its MigrationContext would): a process that opens a database
    at the head never imports it."""
    if not inspect(connection).has_table(VERSION_TABLE):
        return None
    found = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    return found[0] if len(found) == 1 else None


def upgrade(engine: Engine) -> Upgrade:
    """Bring the database to the head revision, one process at a time."""
    with engine.connect() as connection:
        found = current(connection)
    if found == head():
        return Upgrade(found, found)
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
        return upgrade_locked(connection)


def upgrade_locked(connection: Connection) -> Upgrade:
    """The upgrade itself, in the caller's transaction that holds the schema lock."""
    before = current(connection)  # again: another process may have migrated meanwhile
    legacy = before is None and inspect(connection).has_table(_LEGACY_MARK)
    if before == head():
        return Upgrade(before, before)
    from alembic import command
    from alembic.util import CommandError

    config = alembic_config(connection)
    if legacy:
        log.info("database made before migrations: taking it to the baseline %s", BASELINE)
        command.upgrade(config, BASELINE)
    try:
        command.upgrade(config, "head")
    except CommandError as error:  # a revision we do not have: a newer release's
        raise UnknownRevision(before, error) from error
    after = current(connection)
    assert after is not None
    log.info("database schema upgraded from %s to %s", before or "nothing", after)
    return Upgrade(before, after, legacy)
