"""huey's SQLite queue, waking this process's idle consumers the moment a job is pushed.

huey's SQLite consumers poll: an idle one sleeps up to `poll_interval` between looks, and a
webhook arriving in that sleep waited for it (a quarter of a second in the embedded set-up,
where the server and the worker share a process). Here a push in this process wakes them at
once; a push from another process is still seen by the poll, at most `poll_interval` later.

Its connection is prepared as the database's (store_sqlite.py: no mmap, the -shm allocated
ahead, none opened on a full disk). While the queue's file cannot be used (the disk is full,
read-only, failing), the consumers' reads find nothing and wait a poll interval, with one
warning when it starts and one line when it ends, instead of huey's traceback every look; a
push still raises, for its caller to answer (the webhook's 503, the sweep's next round).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

from huey import Huey  # type: ignore[import-untyped]
from huey.storage import SqliteStorage  # type: ignore[import-untyped]

from triage_bot.store.store_errors import describe, storage_failure
from triage_bot.store.store_sqlite import database_path, prepare

log = logging.getLogger(__name__)


class WakingSqliteStorage(SqliteStorage):  # type: ignore[misc]
    blocking = True  # huey's consumer then calls dequeue() without sleeping between calls

    def __init__(self, *args: Any, poll_interval: float = 0.25, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.poll_interval = poll_interval
        self._pushed = threading.Condition()
        self._pushes = 0  # counted, so a push between a look and the wait is not missed
        self._outage = threading.Event()  # set while the file cannot be read or written

    def _create_connection(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.filename, timeout=self._timeout, check_same_thread=False, **self._conn_kwargs
        )
        conn.isolation_level = None  # autocommit, as huey's own
        try:
            prepare(conn, database_path(self.filename))
            conn.execute(f"PRAGMA cache_size={-1000 * self._cache_mb}")
            if self._fsync is not None:
                conn.execute(f"PRAGMA synchronous={2 if self._fsync else 0}")
        except BaseException:
            conn.close()
            raise
        return conn

    def enqueue(self, data: bytes, priority: int | None = None) -> None:
        super().enqueue(data, priority)
        with self._pushed:
            self._pushes += 1
            self._pushed.notify_all()

    def dequeue(self) -> bytes | None:
        with self._pushed:
            seen = self._pushes
        found = self._look()
        if found is None:
            with self._pushed:
                if self._pushes == seen:
                    self._pushed.wait(self.poll_interval)
            found = self._look()
        return found

    def read_schedule(self, ts: Any) -> list[bytes]:
        try:
            due: list[bytes] = super().read_schedule(ts)
        except sqlite3.Error as error:
            self._failed(error)
            return []  # rolled back: the due tasks are still there for the next read
        self._worked()
        return due

    def _look(self) -> bytes | None:
        try:
            found: bytes | None = super().dequeue()
        except sqlite3.Error as error:
            self._failed(error)
            return None
        self._worked()
        return found

    def _failed(self, error: sqlite3.Error) -> None:
        if not storage_failure(error):
            raise error
        if not self._outage.is_set():
            self._outage.set()
            log.warning(
                "queue %s unavailable, its consumers wait: %s",
                Path(self.filename).name,
                describe(error),
            )

    def _worked(self) -> None:
        if self._outage.is_set():
            self._outage.clear()
            log.warning("queue %s available again", Path(self.filename).name)


def waking_sqlite_huey(filename: str, name: str) -> Any:
    """huey over SQLite at `filename`, keeping no results.

    No fsync per push (WAL still survives a process crash): the job ledger, not huey, is the
    record of every job, and the sweep pushes again whatever an OS crash took from huey. An
    fsync on the webhook's path cost milliseconds at the tail."""
    return Huey(
        name,
        results=False,
        storage_class=WakingSqliteStorage,
        filename=filename,
        timeout=30,
        fsync=False,
    )
