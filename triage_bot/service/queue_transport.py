"""The queue's transport: huey over Redis when REDIS_URL is set, else over SQLite in the data
directory (nothing to install). The durability is the job ledger's (queue.py), not huey's.

`check_writable(huey)` is /healthz's probe of the queue: a write that must succeed now.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import redis
from huey import RedisHuey  # type: ignore[import-untyped]
from huey.storage import SqliteStorage  # type: ignore[import-untyped]

from triage_bot.config import Settings
from triage_bot.service.sqlite_queue import waking_sqlite_huey
from triage_bot.store.store_sqlite import require_free_space

HEARTBEAT_KEY = "healthz"
HEARTBEAT_SECONDS = 60  # Redis forgets the key after this: nothing accumulates


def make_huey(settings: Settings, name: str = "triage-bot") -> Any:
    """huey over Redis when REDIS_URL is set, else over SQLite in the data directory."""
    if settings.redis_url:
        return redis_huey(settings.redis_url, name)
    return sqlite_huey(settings.queue_path, name)


def huey_for_url(url: str, name: str = "triage-bot", read_timeout: float = 1.0) -> Any:
    """huey for "redis://..." (also rediss://, unix://) or "sqlite:///PATH"."""
    if url.startswith("sqlite:///"):
        return sqlite_huey(Path(url.removeprefix("sqlite:///")), name)
    return redis_huey(url, name, read_timeout)


def redis_huey(url: str, name: str = "triage-bot", read_timeout: float = 1.0) -> Any:
    # Short connect timeouts keep /healthz and the webhook from hanging on a dead Redis; the
    # socket timeout must stay above the blocking pop's `read_timeout`, which is also how long
    # an idle worker takes to notice it should stop.
    pool = redis.ConnectionPool.from_url(
        url, socket_connect_timeout=2, socket_timeout=read_timeout + 4, health_check_interval=30
    )
    return RedisHuey(name, results=False, connection_pool=pool, read_timeout=read_timeout)


def sqlite_huey(path: Path, name: str = "triage-bot") -> Any:
    path.parent.mkdir(parents=True, exist_ok=True)
    return waking_sqlite_huey(str(path), name)


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
