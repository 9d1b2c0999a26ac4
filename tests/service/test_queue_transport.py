"""The SQLite queue wakes this process's idle consumer on a push, instead of its next poll."""

from __future__ import annotations

import threading
from pathlib import Path

from triage_bot.service.queue_transport import WakingSqliteStorage


def _storage(path: Path, poll_interval: float) -> WakingSqliteStorage:
    return WakingSqliteStorage("q", filename=str(path), fsync=False, poll_interval=poll_interval)


def _dequeue_in_thread(storage: WakingSqliteStorage) -> tuple[threading.Thread, list[bytes]]:
    got: list[bytes] = []
    waiting = threading.Thread(target=lambda: got.append(storage.dequeue() or b""))
    waiting.start()
    return waiting, got


def test_a_push_in_this_process_wakes_a_waiting_consumer(tmp_path: Path) -> None:
    storage = _storage(tmp_path / "q.db", poll_interval=600)  # a poll would take 10 minutes
    waiting, got = _dequeue_in_thread(storage)
    storage.enqueue(b"job")
    waiting.join(timeout=60)
    assert not waiting.is_alive() and got == [b"job"]


def test_a_push_from_another_process_is_found_by_the_poll(tmp_path: Path) -> None:
    consumer = _storage(tmp_path / "q.db", poll_interval=0.05)
    other = _storage(tmp_path / "q.db", poll_interval=0.05)  # its pushes wake no one here
    waiting, got = _dequeue_in_thread(consumer)
    other.enqueue(b"job")
    waiting.join(timeout=60)  # a wait of one poll at most, whether woken or not
    assert not waiting.is_alive()
    # Found by that look, or (if it had looked just before the push) by the next one.
    assert b"job" in [*got, consumer.dequeue()]
