"""huey's SQLite queue, waking this process's idle consumers the moment a job is pushed.

huey's SQLite consumers poll: an idle one sleeps up to `poll_interval` between looks, and a
webhook arriving in that sleep waited for it (a quarter of a second in the embedded set-up,
where the server and the worker share a process). Here a push in this process wakes them at
once; a push from another process is still seen by the poll, at most `poll_interval` later.
"""

from __future__ import annotations

import threading
from typing import Any

from huey import Huey  # type: ignore[import-untyped]
from huey.storage import SqliteStorage  # type: ignore[import-untyped]


class WakingSqliteStorage(SqliteStorage):  # type: ignore[misc]
    blocking = True  # huey's consumer then calls dequeue() without sleeping between calls

    def __init__(self, *args: Any, poll_interval: float = 0.25, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.poll_interval = poll_interval
        self._pushed = threading.Condition()
        self._pushes = 0  # counted, so a push between a look and the wait is not missed

    def enqueue(self, data: bytes, priority: int | None = None) -> None:
        super().enqueue(data, priority)
        with self._pushed:
            self._pushes += 1
            self._pushed.notify_all()

    def dequeue(self) -> bytes | None:
        with self._pushed:
            seen = self._pushes
        found: bytes | None = super().dequeue()
        if found is None:
            with self._pushed:
                if self._pushes == seen:
                    self._pushed.wait(self.poll_interval)
            found = super().dequeue()
        return found


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
