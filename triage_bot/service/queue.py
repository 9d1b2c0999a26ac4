"""The durable job queue: huey for transport, the database's job ledger for durability.

Transport: huey's SQLite storage in the data directory by default (nothing to install), its
Redis storage when REDIS_URL is set (any number of `triage-bot worker` processes on any number
of machines): queue_transport.py makes it. One huey task, `triage_task(payload)`, runs every
job.

Durability, and why not huey alone: huey pops a task before running it, so SIGKILL mid-job
loses the task. Every job therefore has a row in the ledger (triage_bot.store.ledger) written before
it is pushed, in the same transaction as its delivery. A worker *claims* the row before
running (a conditional UPDATE: one winner), keeps a lease on it with a heartbeat thread while
the handler runs, and marks it done or failed at the end. A sweep, run when a worker starts
and every `sweep_interval` seconds, pushes again every job whose lease expired (its worker
died) and every job queued for longer than `stale_after` (its push was lost). Because claims
are exclusive, a job pushed twice still runs once; the pipeline is idempotent on top of that
(one comment per pull request, edited only when its body changes), so a job that was half done
when its worker died is simply done again.

Retries: a failed attempt is re-pushed with a delay of retry_delay * retry_backoff**(n-1)
(2, 4, 8, 16, 32 s by default) through huey's schedule, which is stored with the queue, so a
restart does not lose a pending retry either. The attempt count is the ledger's, so it
survives re-pushes. A job that fails `retries + 1` times, or raises PermanentJobError, is
marked failed with its error in the ledger (and, for triages, in the triages table), logged,
and counted in triage_bot_jobs_failed and triage_bot_jobs_given_up. A RetryLater (or any
error with a `retry_in`, such as the GitHub client's RateLimited) puts the job off without
using an attempt.

Outages: an attempt that failed because GitHub or its log host is down (github_api/outage.py:
GitHubUnavailable after the client's own retries, LogsUnavailable) uses no attempt either; it
is put off with a growing, jittered wait until TRIAGE_OUTAGE_RETRY_HOURS (default 6) after the
job was queued, its error recorded as "outage REASON: ..." (/metrics:
triage_bot_jobs_waiting_on_outage), then failed with that reason
(triage_bot_jobs_failed_on_outage, triage_bot_jobs_given_up). A new delivery for the run wakes
a waiting job (ledger.py). The try at the end of the budget tells the handler so
(JobContext.logs_may_wait False): a log still unreadable then is noted in the comment rather
than leaving the run without one.

Locks: the handler runs under `under_job_lease` (store.py), so a lock it takes (the pull
request's comment lock) is freed by the job's lease: a SIGKILLed worker's within one lease.

For triage jobs the queue records the triage in the triages table: running when an attempt
starts, done with the handler's return value as the report, failed with the error.

Running workers (threads in `serve`, or `triage-bot worker`) is triage_bot.service.worker's part.

The handler, what it gets and what it may raise are handler.py's: `handle_job` unless the
queue was given another.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from triage_bot import metrics
from triage_bot.config import Settings
from triage_bot.github_api.outage import OutagePolicy, outage_reason
from triage_bot.service.handler import Handler, JobContext, PermanentJobError, handle_job
from triage_bot.service.queue_transport import make_huey
from triage_bot.store.ledger import JobRecord, NewJob, outage_error
from triage_bot.store.schema import now
from triage_bot.store.store import Store, under_job_lease
from triage_bot.store.store_errors import describe, storage_failure

log = logging.getLogger(__name__)

TASK_NAME = "triage_task"
MAX_ERROR_CHARS = 4000


@dataclass(frozen=True)
class QueueOptions:
    retries: int = 5
    retry_delay: float = 2.0
    retry_backoff: float = 2.0
    lease: float = 60.0  # seconds a worker may go without a heartbeat before others take over
    stale_after: float = 300.0  # seconds a due job may sit queued before it is pushed again
    sweep_interval: float = 15.0
    poll_interval: float = 0.25  # longest wait between a consumer's looks when the queue failed
    outage: OutagePolicy | None = None  # None: the settings' (TRIAGE_OUTAGE_*), else defaults


class JobQueue:
    def __init__(
        self,
        huey: Any,
        store: Store,
        options: QueueOptions | None = None,
        *,
        handler: Handler | None = None,
        settings: Settings | None = None,
        dry_run: bool = False,
    ) -> None:
        self.huey = huey
        self.store = store
        self.options = options or QueueOptions()
        self.settings = settings
        self.dry_run = dry_run
        self.handler = handler or handle_job
        self.outage = self.options.outage or (
            OutagePolicy.from_settings(settings) if settings is not None else OutagePolicy()
        )
        # One task per huey instance; huey names it so producers and consumers on other
        # machines agree on it.
        self.triage_task = huey.task(name=TASK_NAME)(self._execute)

    @classmethod
    def from_settings(
        cls, settings: Settings, store: Store, options: QueueOptions | None = None, **kw: Any
    ) -> JobQueue:
        return cls(make_huey(settings), store, options, settings=settings, **kw)

    # -- producing ---------------------------------------------------------------------------

    def enqueue(self, kind: str, payload: dict[str, Any]) -> str:
        """Record a job in the ledger and push it; the id of the job that will run it."""
        job_id, created = self.store.jobs.create(NewJob(kind, payload))
        if created:
            self.push(job_id, kind, payload)
        return job_id

    def push(self, job_id: str, kind: str, payload: dict[str, Any], delay: float = 0) -> None:
        """Hand a job already in the ledger to huey (a SQLite insert or a Redis LPUSH)."""
        message = {**payload, "job_id": job_id, "kind": kind}
        if delay > 0:
            self.triage_task.schedule(args=(message,), delay=delay)
        else:
            self.triage_task(message)

    # -- state -------------------------------------------------------------------------------

    def depth(self) -> int:
        return int(self.huey.pending_count())

    def scheduled(self) -> int:
        return int(self.huey.scheduled_count())

    def sweep(self) -> int:
        """Push again the jobs no worker will run otherwise; how many were pushed."""
        pushed = 0
        for record in self.store.jobs.stale(self.options.stale_after):
            if self.store.jobs.mark_requeued(record):
                reason = "lease_expired" if record.status == "running" else "lost_push"
                log.warning("job %s (%s) pushed again: %s", record.id, record.kind, reason)
                self.push(record.id, record.kind, record.payload)
                metrics.JOBS_REQUEUED.labels(reason).inc()
                pushed += 1
        return pushed

    # -- consuming ---------------------------------------------------------------------------

    def _execute(self, message: dict[str, Any]) -> None:
        job_id = str(message.get("job_id") or "")
        if not job_id:
            # Pushed by something that bypassed the ledger: give it a row so it is durable.
            job_id = self.enqueue(str(message.get("kind", "triage")), message)
            return
        owner = uuid.uuid4().hex
        try:
            record = self.store.jobs.claim(job_id, owner, self.options.lease)
            if record is None:
                log.info("job %s is done, failed or running elsewhere: skipped", job_id)
                return
            with self._heartbeat(record, owner) as lease_lost:
                self._attempt(record, owner, lease_lost)
        except Exception as error:
            if not storage_failure(error):
                raise
            # The ledger still has the job (queued, or running until its lease ends): the
            # sweep pushes it again once the database or queue is back.
            log.warning("job %s put off, storage unavailable: %s", job_id, describe(error))

    def _attempt(self, record: JobRecord, owner: str, lease_lost: threading.Event) -> None:
        payload = {**record.payload, "job_id": record.id, "kind": record.kind}
        last_outage_try = self.outage.spent(_waited(record))
        context = JobContext(
            record.id,
            record.attempts,
            self.store,
            self.settings,
            self.dry_run,
            lease_lost,
            logs_may_wait=not last_outage_try,
        )
        triage = _triage_key(record.kind, payload)
        started = time.monotonic()
        try:
            if triage is not None:
                self.store.start_triage(*triage, str(payload.get("head_sha", "")), _pr(payload))
            with under_job_lease(record.id, owner):
                result = self.handler(payload, context)
        except Exception as error:
            self._failed(record, owner, error, time.monotonic() - started, last_outage_try)
            return
        elapsed = time.monotonic() - started
        if triage is not None:
            self.store.finish_triage(*triage, result if isinstance(result, dict) else None)
            metrics.TRIAGE_SECONDS.observe(elapsed)
        self.store.jobs.finish(record.id, owner)
        metrics.JOB_SECONDS.labels(record.kind, "done").observe(elapsed)
        log.info("job %s (%s) done in %.2fs", record.id, record.kind, elapsed)

    def _failed(
        self,
        record: JobRecord,
        owner: str,
        error: Exception,
        elapsed: float,
        last_outage_try: bool,
    ) -> None:
        text = f"{type(error).__name__}: {error}"[:MAX_ERROR_CHARS]
        deferral = getattr(error, "retry_in", None)
        if isinstance(deferral, int | float) and not isinstance(deferral, bool):
            self._defer(record, owner, text, max(0.0, float(deferral)))
            return
        outage = None if isinstance(error, PermanentJobError) else outage_reason(error)
        if outage is not None:
            self._outage(record, owner, outage, text, elapsed, error, last_outage_try)
            return
        final = isinstance(error, PermanentJobError) or record.attempts > self.options.retries
        if not final:
            delay = self.options.retry_delay * self.options.retry_backoff ** (record.attempts - 1)
            log.warning(
                "job %s attempt %d failed, retry in %.1fs: %s",
                record.id,
                record.attempts,
                delay,
                text,
                exc_info=error,
            )
            if self.store.jobs.retry(record.id, owner, text, delay):
                self.push(record.id, record.kind, record.payload, delay=delay)
            metrics.JOB_RETRIES.labels(record.kind).inc()
            metrics.JOB_SECONDS.labels(record.kind, "retry").observe(elapsed)
            return
        reason = "permanent" if isinstance(error, PermanentJobError) else "retries"
        self._give_up(record, owner, text, elapsed, error, reason)

    def _outage(
        self,
        record: JobRecord,
        owner: str,
        reason: str,
        text: str,
        elapsed: float,
        error: Exception,
        last_outage_try: bool,
    ) -> None:
        # The attempt is refunded, as for a deferral: GitHub being down is not the job's fault,
        # and an error of the job's own after the outage still gets its `retries`.
        waited = _waited(record)
        delay = self.outage.delay(waited)
        if delay is None and not last_outage_try:
            # The budget ran out during this attempt (a slow one, or a short budget): the last
            # try, which posts what it can read, is still owed.
            delay = 0.0
        if delay is None:
            hours = waited / 3600
            given_up = outage_error(reason, f"gave up after {hours:.2f} h of outage: {text}")
            self._give_up(record, owner, given_up[:MAX_ERROR_CHARS], elapsed, error, reason)
            return
        log.warning("job %s held up by %s, next try in %.1fs: %s", record.id, reason, delay, text)
        noted = outage_error(reason, text)[:MAX_ERROR_CHARS]
        if self.store.jobs.retry(record.id, owner, noted, delay, refund=True):
            self.push(record.id, record.kind, record.payload, delay=delay)
        metrics.JOB_OUTAGE_RETRIES.labels(reason).inc()
        metrics.JOB_SECONDS.labels(record.kind, "retry").observe(elapsed)

    def _give_up(
        self,
        record: JobRecord,
        owner: str,
        text: str,
        elapsed: float,
        error: Exception,
        reason: str,
    ) -> None:
        log.error(
            "job %s (%s) failed for good after %d attempts: %s",
            record.id,
            record.kind,
            record.attempts,
            text,
            exc_info=error,
        )
        triage = _triage_key(record.kind, record.payload)
        if triage is not None:  # before the ledger, so "job failed" implies "triage failed"
            self.store.fail_triage(*triage, text, str(record.payload.get("head_sha", "")))
        self.store.jobs.fail(record.id, owner, text)
        metrics.JOBS_FAILED.labels(record.kind).inc()
        metrics.JOBS_GIVEN_UP.labels(record.kind, reason).inc()
        metrics.JOB_SECONDS.labels(record.kind, "failed").observe(elapsed)

    def _defer(self, record: JobRecord, owner: str, text: str, delay: float) -> None:
        # The attempt is refunded: waiting out a rate limit is not a failure of the job.
        log.info("job %s deferred for %.0fs: %s", record.id, delay, text)
        if self.store.jobs.retry(record.id, owner, text, delay, refund=True):
            self.push(record.id, record.kind, record.payload, delay=delay)
        metrics.JOBS_DEFERRED.labels(record.kind).inc()

    @contextmanager
    def _heartbeat(self, record: JobRecord, owner: str) -> Iterator[threading.Event]:
        stop, lost = threading.Event(), threading.Event()

        def beat() -> None:
            while not stop.wait(self.options.lease / 3):
                try:
                    if not self.store.jobs.renew(record.id, owner, self.options.lease):
                        log.warning("job %s: lease taken over by another worker", record.id)
                        lost.set()
                        return
                except Exception:  # a database blip: the next beat tries again
                    log.exception("job %s: lease renewal failed", record.id)

        thread = threading.Thread(target=beat, name=f"lease-{record.id[:8]}", daemon=True)
        thread.start()
        try:
            yield lost
        finally:
            stop.set()
            thread.join()


def _waited(record: JobRecord) -> float:
    """Seconds since the job was queued: what the outage budget is counted against."""
    return max(0.0, (now() - record.created_at).total_seconds())


def _triage_key(kind: str, payload: dict[str, Any]) -> tuple[str, int, int] | None:
    if kind != "triage":
        return None
    repo, run_id, attempt = payload.get("repo"), payload.get("run_id"), payload.get("run_attempt")
    if isinstance(repo, str) and isinstance(run_id, int) and isinstance(attempt, int):
        return repo, run_id, attempt
    return None


def _pr(payload: dict[str, Any]) -> int | None:
    prs = payload.get("pull_requests")
    return prs[0] if isinstance(prs, list) and prs and isinstance(prs[0], int) else None
