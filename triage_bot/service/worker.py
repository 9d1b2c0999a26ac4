"""Running jobs: worker threads in this process (`triage-bot serve`) or a worker process
(`triage-bot worker`), each with a sweeper that pushes again the jobs a dead worker left.

Workers are huey consumer threads: jobs are I/O-bound (downloading logs, calling GitHub), so
threads share one process's catalog and connection pools. The sweeper is what makes the queue
durable (see triage_bot.service.queue); several sweepers (one per worker process) are safe, since
re-pushing a job is claimed by one of them in the ledger.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta
from typing import Any

from huey.consumer import Consumer  # type: ignore[import-untyped]

from triage_bot.config import DEFAULT_HISTORY_DAYS, Settings, configure_logging
from triage_bot.service.handler import Handler
from triage_bot.service.queue import JobQueue, QueueOptions
from triage_bot.store import schema
from triage_bot.store.store import Store
from triage_bot.triage.run import warm_up

log = logging.getLogger(__name__)

# Job outcomes older than the retention deleted per sweep: a short write each time, and still
# some 5 million a day at the sweep's 15 s.
PRUNE_BATCH = 1000


def consumer_options(queue: JobQueue, workers: int) -> dict[str, Any]:
    return {
        "workers": workers,
        "worker_type": "thread",
        "periodic": False,
        # Both queues block in dequeue (Redis's pop; WakingSqliteStorage's wait for a push), so
        # these only space out the looks after the queue failed to answer.
        "initial_delay": 0.05,
        "backoff": 1.5,
        "max_delay": queue.options.poll_interval,
        "scheduler_interval": 1,  # huey's finest: delayed retries are due to the second
        "graceful_signal": "TERM",  # SIGTERM lets running jobs finish; SIGINT stops now
    }


def prune_history(queue: JobQueue, batch: int = PRUNE_BATCH) -> int:
    """Delete up to `batch` job outcomes older than TRIAGE_HISTORY_DAYS; how many."""
    days = queue.settings.history_days if queue.settings is not None else DEFAULT_HISTORY_DAYS
    return queue.store.outcomes.prune(schema.now() - timedelta(days=days), batch)


class Sweeper:
    """Runs JobQueue.sweep at start and then every sweep_interval seconds, in a daemon thread,
    and prunes a batch of job outcomes past their retention each time."""

    def __init__(self, queue: JobQueue) -> None:
        self.queue = queue
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="job-sweeper", daemon=True)

    def start(self) -> Sweeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while True:
            try:
                self.queue.sweep()
            except Exception:  # the database or queue is down: try again next round
                log.exception("job sweep failed")
            try:
                prune_history(self.queue)
            except Exception:  # the history waits: the triages do not need it pruned
                log.exception("pruning the job outcomes failed")
            if self._stop.wait(self.queue.options.sweep_interval):
                return


class _InProcessConsumer(Consumer):  # type: ignore[misc]
    # Consumer.start() installs signal handlers, which only the main thread may do and which
    # belong to uvicorn when the worker runs inside `triage-bot serve`.
    def _set_signal_handlers(self) -> None:
        pass


class EmbeddedWorker:
    """Worker threads and the sweeper inside the current process (for `triage-bot serve`)."""

    def __init__(self, queue: JobQueue, workers: int = 2) -> None:
        self.queue = queue
        self.consumer = _InProcessConsumer(queue.huey, **consumer_options(queue, workers))
        self.sweeper = Sweeper(queue)

    def start(self) -> EmbeddedWorker:
        warm_up()
        self.consumer.start()
        self.sweeper.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Let running jobs finish (up to `timeout`); unfinished ones are swept up later."""
        self.sweeper.stop()
        self.consumer.shutdown_timeout = timeout
        self.consumer.stop(graceful=True)
        log.info("worker stopped")


def run_worker(
    settings: Settings,
    workers: int = 2,
    *,
    options: QueueOptions | None = None,
    handler: Handler | None = None,
    dry_run: bool = False,
) -> None:
    """`triage-bot worker`: run jobs until SIGTERM (graceful) or SIGINT; blocks."""
    settings.require("worker")
    configure_logging(settings.log_level)
    store = Store(settings.database_url)
    queue = JobQueue.from_settings(settings, store, options, handler=handler, dry_run=dry_run)
    warm_up()
    sweeper = Sweeper(queue).start()
    log.info(
        "worker: %d threads, queue %s, database %s",
        workers,
        "redis" if settings.redis_url else settings.queue_path,
        store.dialect,
    )
    try:
        Consumer(queue.huey, **consumer_options(queue, workers)).run()
    finally:
        sweeper.stop()
        store.close()
