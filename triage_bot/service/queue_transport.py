"""The queue's transport: huey over Redis when REDIS_URL is set, else over SQLite in the data
directory (nothing to install). The durability is the job ledger's (queue.py), not huey's.

huey's SQLite consumers poll: an idle one sleeps up to `poll_interval` between looks, and a
webhook arriving in that sleep waited for it (a quarter of a second in the embedded set-up,
where the server and the worker share a process). WakingSqliteStorage wakes this process's
idle consumers the moment a job is pushed; a push from another process is still seen by the
poll, at most `poll_interval` later.

Its connection is prepared as the database's (store_sqlite.py: no mmap, the -shm allocated
ahead, none opened on a full disk). While the queue's file cannot be used (the disk is full,
read-only, failing), the consumers' reads find nothing and wait a poll interval, with one
warning when it starts and one line when it ends, instead of huey's traceback every look; a
push still raises, for its caller to answer (the webhook's 503, the sweep's next round).

`check_writable(huey)` is /healthz's probe of the queue: a write that must succeed now.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import redis
from huey import Huey, RedisHuey  # type: ignore[import-untyped]
from huey.storage import SqliteStorage  # type: ignore[import-untyped]

from triage_bot.config import Settings
from triage_bot.store.store_errors import describe, storage_failure
from triage_bot.store.store_sqlite import database_path, prepare, require_free_space

log = logging.getLogger(__name__)

NAME = "triage-bot"  # huey's name for the queue: its Redis keys, its tasks' names
HEARTBEAT_KEY = "healthz"
HEARTBEAT_SECONDS = 60  # Redis forgets the key after this: nothing accumulates


def make_huey(settings: Settings) -> Any:
    """huey over Redis when REDIS_URL is set, else over SQLite in the data directory."""
    if settings.redis_url:
        return redis_huey(settings.redis_url)
    return sqlite_huey(settings.queue_path)


def huey_for_url(url: str, read_timeout: float = 1.0) -> Any:
    """huey for "redis://..." (also rediss://, unix://) or "sqlite:///PATH"."""
    if url.startswith("sqlite:///"):
        return sqlite_huey(Path(url.removeprefix("sqlite:///")))
    return redis_huey(url, read_timeout)


def redis_huey(url: str, read_timeout: float = 1.0) -> Any:
    # Short connect timeouts keep /healthz and the webhook from hanging on a dead Redis; the
    # socket timeout must stay above the blocking pop's `read_timeout`, which is also how long
    # an idle worker takes to notice it should stop.
    pool = redis.ConnectionPool.from_url(
        url, socket_connect_timeout=2, socket_timeout=read_timeout + 4, health_check_interval=30
    )
    return RedisHuey(NAME, results=False, connection_pool=pool, read_timeout=read_timeout)


def sqlite_huey(path: Path) -> Any:
    """huey over SQLite at `path`, keeping no results.

    No fsync per push (WAL still survives a process crash): the job ledger, not huey, is the
    record of every job, and the sweep pushes again whatever an OS crash took from huey. An
    fsync on the webhook's path cost milliseconds at the tail."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return Huey(
        NAME,
        results=False,
        storage_class=WakingSqliteStorage,
        filename=str(path),
        timeout=30,
        fsync=False,
    )


def check_writable(huey: Any) -> None:
    """Raise unless the queue's storage takes a write now: on Redis a SET with an expiry (a
    stopped, full or read-only Redis raises), on SQLite the data directory's minimum free
    space and a one-row write in huey's key-value table, committed."""
    storage = huey.storage
    stamp = str(time.time()).encode()
    conn = getattr(storage, "conn", None)
    if isinstance(conn, redis.Redis):
        conn.set(f"{huey.name}.{HEARTBEAT_KEY}", stamp, ex=HEARTBEAT_SECONDS)
    elif isinstance(storage, SqliteStorage):
        require_free_space(Path(storage.filename).resolve().parent)
        storage.put_data(HEARTBEAT_KEY, stamp)
    else:  # another huey storage: that it answers is all that can be checked
        huey.pending_count()


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
