"""The schema's migrations (Alembic) on SQLite and PostgreSQL: a database made by the release
before migrations (create_all, no `alembic_version`) upgrades in place and keeps its rows; an
empty one is made at the head; processes starting together on either all open it; the
migrations match schema.py; `triage-bot db upgrade` does the same from the command line."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from helpers import ROOT
from services import db_url

from triage_bot.store import migrate, schema
from triage_bot.store.failure_records import JobFailure, TriagedRun
from triage_bot.store.migrations.versions import v0001_baseline
from triage_bot.store.store import Store, make_engine

__all__ = ["db_url"]  # a fixture

WHEN = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def make_legacy_database(url: str) -> None:
    """What the release before migrations left: its tables by create_all, with rows in them
    (a delivery, a triage, a run's recorded failure), and no `alembic_version`."""
    engine = make_engine(url)
    tables = {table.name: table for table in v0001_baseline._tables()}
    try:
        with engine.begin() as conn:
            next(iter(tables.values())).metadata.create_all(conn)
            conn.execute(
                sa.insert(tables["deliveries"]),
                [
                    {
                        "delivery_id": "d-old",
                        "event": "ping",
                        "outcome": "ignored",
                        "received_at": WHEN,
                    }
                ],
            )
            conn.execute(
                sa.insert(tables["triaged_runs"]),
                [
                    {"repo": "o/r", "run_id": 5, "run_attempt": 1, "workflow_id": 9,
                     "commit_sha": "c0ffee", "complete": True, "partial_logs": 0,
                     "recorded_at": WHEN}
                ],
            )  # fmt: skip
            conn.execute(
                sa.insert(tables["job_failures"]),
                [
                    {"repo": "o/r", "workflow": "CI", "job_name": "test", "signature": "py-test",
                     "captures_key": '["test_a"]', "commit_sha": "c0ffee", "run_id": 5,
                     "recorded_at": WHEN}
                ],
            )  # fmt: skip
    finally:
        engine.dispose()


def schema_differences(url: str) -> list[Any]:
    """What Alembic's autogenerate would still change to make the database schema.py's."""
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return list(compare_metadata(MigrationContext.configure(conn), schema.metadata))
    finally:
        engine.dispose()


def revision_of(url: str) -> str | None:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return migrate.current(conn)
    finally:
        engine.dispose()


def test_head_is_the_newest_revision_alembic_finds() -> None:
    assert migrate.head() == migrate.script_head() == "0003"


def test_an_empty_database_is_made_at_the_head_and_matches_schema_py(db_url: str) -> None:
    Store(db_url).close()
    assert revision_of(db_url) == migrate.head() == "0003"
    assert schema_differences(db_url) == []


def test_the_baseline_is_schema_py_without_what_later_revisions_add(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            command.upgrade(migrate.alembic_config(conn), migrate.BASELINE)
    finally:
        engine.dispose()
    added = {diff[1].name for diff in schema_differences(db_url) if diff[0] == "add_table"}
    others = [diff for diff in schema_differences(db_url) if diff[0] != "add_table"]
    assert added == {"job_outcomes"}
    # Only the new table's own indexes are missing besides: nothing of today's tables differs.
    assert {diff[1].table.name for diff in others} == {"job_outcomes"}


def test_a_database_made_before_migrations_upgrades_in_place_and_keeps_its_rows(
    db_url: str,
) -> None:
    make_legacy_database(db_url)
    assert revision_of(db_url) is None
    store = Store(db_url)
    try:
        assert revision_of(db_url) == migrate.head()
        assert schema_differences(db_url) == []
        assert store.delivery_outcome("d-old") == "ignored"
        assert store.failures.run("o/r", 5) == TriagedRun("o/r", 5, 1, 9, "c0ffee", True, 0)
        old = store.failures.of_run("o/r", 5)
        assert old == [JobFailure("o/r", "CI", "test", "py-test", '["test_a"]', "c0ffee", 5)]
        assert old[0].recorded_at == WHEN
        # and the new table takes rows
        with store.engine.begin() as conn:
            conn.execute(sa.insert(schema.job_outcomes), [_outcome_row()])
            assert (
                conn.execute(
                    sa.select(sa.func.count()).select_from(schema.job_outcomes)
                ).scalar_one()
                == 1
            )
    finally:
        store.close()


def test_an_upgrade_at_the_head_changes_nothing(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        first = migrate.upgrade(engine)
        again = migrate.upgrade(engine)
    finally:
        engine.dispose()
    assert (first.before, first.after, first.changed) == (None, "0003", True)
    assert (again.before, again.after, again.changed) == ("0003", "0003", False)


def test_a_database_from_a_newer_release_is_refused_with_its_revision(db_url: str) -> None:
    Store(db_url).close()
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE alembic_version SET version_num = '0099'"))
        with pytest.raises(migrate.UnknownRevision, match="revision 0099, which this release"):
            migrate.upgrade(engine)
    finally:
        engine.dispose()


@pytest.mark.parametrize("legacy", [False, True], ids=["empty", "legacy"])
def test_processes_starting_together_all_open_the_database(db_url: str, legacy: bool) -> None:
    if legacy:
        make_legacy_database(db_url)
    start = threading.Barrier(5)

    def open_store(_: int) -> migrate.Upgrade:
        start.wait()
        engine = make_engine(db_url)  # each its own engine, as a process has
        try:
            return migrate.upgrade(engine)
        finally:
            engine.dispose()

    with ThreadPoolExecutor(5) as pool:
        done = list(pool.map(open_store, range(5)))
    assert [d.changed for d in done].count(True) == 1  # one migrated, the others found it done
    assert {d.after for d in done} == {"0003"}
    assert schema_differences(db_url) == []


def test_db_upgrade_command_upgrades_a_legacy_database_from_processes_started_together(
    db_url: str, tmp_path: Path
) -> None:
    make_legacy_database(db_url)
    env = {**os.environ, "DATABASE_URL": db_url, "TRIAGE_DATA_DIR": str(tmp_path)}
    command_line = [sys.executable, "-m", "triage_bot", "db", "upgrade"]
    processes = [
        subprocess.Popen(command_line, env=env, cwd=tmp_path, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    outputs = [process.communicate(timeout=120)[0] for process in processes]
    assert [process.returncode for process in processes] == [0, 0, 0]
    assert sum("stamped at the baseline 0001, then upgraded to 0003" in o for o in outputs) == 1
    assert sum("the database is at the newest schema (0003)" in o for o in outputs) == 2
    assert revision_of(db_url) == "0003"
    store = Store(db_url, create=False)
    assert store.delivery_outcome("d-old") == "ignored"
    store.close()


def test_the_wheel_carries_the_migrations(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    wheel = next(tmp_path.glob("triage_bot-*.whl"))
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    probe = (
        "import sys; from triage_bot.store import migrate, store; "
        "s = store.Store(sys.argv[1]); print(migrate.MIGRATIONS, migrate.script_head())"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, f"sqlite:///{tmp_path / 'w.db'}"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(unpacked)},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    folder, head = done.stdout.split()
    assert folder.startswith(str(unpacked)) and head == "0003"
    assert revision_of(f"sqlite:///{tmp_path / 'w.db'}") == "0003"


def _outcome_row() -> dict[str, Any]:
    return {
        "repo": "o/r", "run_id": 6, "run_attempt": 1, "job_id": 60, "job_name": "test",
        "job_full_name": "test",
        "conclusion": "success", "commit_sha": "c0ffee", "finished_at": WHEN, "recorded_at": WHEN,
    }  # fmt: skip
