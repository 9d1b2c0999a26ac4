"""The store on SQLite and PostgreSQL, the queue on SQLite and Redis: real servers, real threads,
real worker processes (one of them killed with SIGKILL in the middle of a job)."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from services import create_database, db_url, drop_database, queue_url, start_postgres

from triage_bot.service.handler import JobContext, PermanentJobError, RetryLater
from triage_bot.service.queue import JobQueue, QueueOptions
from triage_bot.service.queue_transport import huey_for_url
from triage_bot.service.worker import EmbeddedWorker
from triage_bot.store.failure_records import JobFailure, TriagedRun
from triage_bot.store.ledger import NewJob
from triage_bot.store.store import Store
from triage_bot.store.store_installations import InstallationChange
from triage_bot.store.store_locks import LockTimeout

__all__ = ["db_url", "queue_url"]  # fixtures

ROOT = Path(__file__).resolve().parents[2]
FAST = QueueOptions(
    retries=2,
    retry_delay=0.05,
    retry_backoff=2.0,
    lease=1.0,
    stale_after=0.5,
    sweep_interval=0.1,
    poll_interval=0.05,
)
TRIAGE = {"repo": "o/r", "run_id": 10, "run_attempt": 1, "head_sha": "abc", "pull_requests": [7]}


def wait_for(predicate: Callable[[], object], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {predicate}")
        time.sleep(0.02)


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    store = Store(db_url)
    yield store
    store.close()


# -- store -------------------------------------------------------------------------------------


def test_a_delivery_is_accepted_once_under_concurrency(store: Store) -> None:
    barrier = threading.Barrier(12)

    def deliver(_: int) -> bool:
        barrier.wait()
        return store.record_delivery("delivery-1", "workflow_run", "completed")

    with ThreadPoolExecutor(12) as pool:
        results = list(pool.map(deliver, range(12)))
    assert results.count(True) == 1
    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(lambda i: store.record_delivery(f"d-{i}", "ping"), range(40)))


def test_a_claim_is_won_once_under_concurrency(store: Store) -> None:
    barrier = threading.Barrier(8)

    def claim(_: int) -> bool:
        barrier.wait()
        return store.claim_once("auto-retry:octo/a:42")

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(claim, range(8)))
    assert results.count(True) == 1
    assert store.claim_once("auto-retry:octo/a:43") and not store.claim_once("auto-retry:octo/a:43")


def test_delivery_job_and_installation_are_written_together(store: Store) -> None:
    job = NewJob("triage", dict(TRIAGE), "key-1")
    change = InstallationChange("upsert", 5, "octo", ("octo/a",), "selected", False)
    first = store.accept_delivery(
        "d1", "workflow_run", "completed", "job", job=job, installation=change
    )
    assert first.new and first.job_created and first.job_id
    again = store.accept_delivery("d1", "workflow_run", "completed", "job", job=job)
    assert not again.new and again.job_id is None
    merged = store.accept_delivery("d2", "workflow_job", "completed", "job", job=job)
    assert merged.new and not merged.job_created and merged.job_id == first.job_id
    assert store.delivery_outcome("d2") == "coalesced"
    assert store.jobs.counts() == {"queued": 1, "running": 0, "done": 0, "failed": 0}
    assert store.installation_for_repo("octo/a") == 5


def test_comment_lock_lets_one_triage_create_the_comment(store: Store) -> None:
    created, active, most = [], [0], [0]
    guard = threading.Lock()

    def triage(worker: int) -> None:
        with store.comment_lock("o/r", 7, wait=30):
            with guard:
                active[0] += 1
                most[0] = max(most[0], active[0])
            existing = store.comment("o/r", 7)
            if existing is None:
                created.append(worker)  # "POST /issues/7/comments"
                store.record_comment("o/r", 7, 1000 + worker, f"hash-{worker}", "abc")
            else:
                store.record_comment("o/r", 7, existing.comment_id or 0, f"hash-{worker}", "abc")
            time.sleep(0.002)
            with guard:
                active[0] -= 1

    with ThreadPoolExecutor(10) as pool:
        list(pool.map(triage, range(10)))
    assert len(created) == 1 and most[0] == 1
    comment = store.comment("o/r", 7)
    assert comment is not None and comment.comment_id == 1000 + created[0]


def test_comment_lock_times_out_and_expires(store: Store) -> None:
    assert store.try_lock("comment:o/r#1", "dead-worker", ttl=0.3)
    with pytest.raises(LockTimeout), store.comment_lock("o/r", 1, wait=0.1):
        pass
    time.sleep(0.35)  # the dead holder's lease runs out
    with store.comment_lock("o/r", 1, wait=1):
        assert not store.try_lock("comment:o/r#1", "someone-else", ttl=5)
    assert store.try_lock("comment:o/r#1", "someone-else", ttl=5)  # released


def test_installations(store: Store) -> None:
    store.apply_installation(InstallationChange("upsert", 9, "acme", ("acme/a", "acme/b")))
    store.apply_installation(InstallationChange("add_repos", 9, repos=("acme/c",)))
    store.apply_installation(InstallationChange("remove_repos", 9, repos=("acme/a",)))
    store.apply_installation(InstallationChange("upsert", 9, suspended=True))
    installation = store.installation(9)
    assert installation is not None
    assert (installation.account, installation.repos) == ("acme", ("acme/b", "acme/c"))
    assert installation.suspended and store.installation_for_repo("acme/b") is None
    store.apply_installation(InstallationChange("upsert", 9, suspended=False))
    assert store.installation_for_repo("acme/b") == 9
    store.apply_installation(InstallationChange("delete", 9))
    assert store.installation(9) is None


def test_triages_comments_and_job_failures(store: Store) -> None:
    store.start_triage("o/r", 2**40, 1, "abc", 7)
    store.finish_triage("o/r", 2**40, 1, {"failures": [{"signature": "x"}]})
    done = store.triage("o/r", 2**40, 1)
    assert (
        done is not None
        and done.status == "done"
        and done.report == {"failures": [{"signature": "x"}]}
    )
    assert done.finished_at is not None and done.finished_at >= done.started_at
    store.fail_triage("o/r", 11, 2, "RuntimeError: boom", "def")  # never started
    failed = store.triage("o/r", 11, 2)
    assert failed is not None and (failed.status, failed.error) == ("failed", "RuntimeError: boom")

    assert store.comment("o/r", 7) is None
    store.record_comment("o/r", 7, 555, "h1", "abc")
    assert not store.mark_comment_outdated("o/r", 7, "zzz")
    assert store.mark_comment_outdated("o/r", 7, "abc")
    comment = store.comment("o/r", 7)
    assert comment is not None and comment.outdated and comment.comment_id == 555
    store.record_comment("o/r", 7, 555, "h2", "def")
    comment = store.comment("o/r", 7)
    assert comment is not None and not comment.outdated and comment.body_hash == "h2"


def test_a_triaged_run_is_recorded_with_its_failures_and_replaced_as_one(store: Store) -> None:
    failure = JobFailure("o/r", "CI", "test", "python-type-error", '["x"]', "base1", 2**40)
    other = JobFailure("o/r", "CI", "build", "rust-too-many-open-files", "[]", "base1", 2**40)
    assert store.failures.run("o/r", 2**40) is None  # never triaged
    partial = TriagedRun("o/r", 2**40, 1, 77, "base1", complete=False)
    assert store.failures.record(partial, [failure, failure])  # one row per distinct failure
    assert store.job_failures("o/r", "base1") == [failure]
    assert store.job_failures("o/r", "other") == []
    # The same attempt triaged once it finished: it replaces the partial findings.
    complete = TriagedRun("o/r", 2**40, 1, 77, "base1", complete=True, partial_logs=1)
    assert store.failures.record(complete, [failure, other])
    assert store.failures.of_run("o/r", 2**40) == [failure, other]
    assert store.failures.run("o/r", 2**40) == complete
    # A partial triage of that attempt arriving late changes nothing; a second complete one
    # (a job run again after its worker died) replaces it without doubling a row.
    assert not store.failures.record(partial, [])
    assert store.failures.record(complete, [other])
    assert store.failures.of_run("o/r", 2**40) == [other]
    # A re-run's attempt that recognised nothing is told apart from "never triaged".
    second = TriagedRun("o/r", 2**40, 2, 77, "base1", complete=True)
    assert store.failures.record(second, [])
    assert store.failures.of_run("o/r", 2**40) == [] and store.failures.run("o/r", 2**40) == second
    assert not store.failures.record(complete, [failure])  # an older attempt, late
    assert store.failures.of_run("o/r", 2**40) == []


def test_a_job_is_claimed_by_one_worker(store: Store) -> None:
    job_id, _ = store.jobs.create(NewJob("triage", {}))
    barrier = threading.Barrier(8)

    def claim(worker: int) -> bool:
        barrier.wait()
        return store.jobs.claim(job_id, f"w{worker}", lease=30) is not None

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(claim, range(8))).count(True) == 1


# -- queue -------------------------------------------------------------------------------------


@pytest.fixture
def stack(queue_url: str, tmp_path: Path) -> Iterator[tuple[Store, str]]:
    """Embedded (SQLite + SQLite queue) or scaled out (PostgreSQL + Redis)."""
    if queue_url.startswith("sqlite"):
        store = Store(f"sqlite:///{tmp_path / 'triage.db'}")
        yield store, queue_url
        store.close()
        return
    url = create_database(start_postgres())
    store = Store(url)
    yield store, queue_url
    store.close()
    drop_database(url)


class Recorder:
    """A real handler: it writes to the store under the comment lock, as the pipeline will."""

    def __init__(self, failures: int = 0, permanent: bool = False) -> None:
        self.failures, self.permanent = failures, permanent
        self.calls: list[tuple[str, int]] = []

    def __call__(self, payload: dict[str, Any], context: JobContext) -> dict[str, Any]:
        self.calls.append((payload["job_id"], context.attempt))
        if self.permanent:
            raise PermanentJobError("repository is gone")
        if context.attempt <= self.failures:
            raise RuntimeError(f"GitHub said 502 (attempt {context.attempt})")
        with context.store.comment_lock(payload["repo"], 7):
            context.store.record_comment(payload["repo"], 7, 99, "hash", payload["head_sha"])
        return {"summary": "1 failure", "attempt": context.attempt}


def running(queue: JobQueue) -> EmbeddedWorker:
    return EmbeddedWorker(queue, workers=2).start()


def test_enqueued_job_is_run_by_a_real_consumer(stack: tuple[Store, str]) -> None:
    store, url = stack
    handler = Recorder()
    queue = JobQueue(huey_for_url(url, read_timeout=0.1), store, FAST, handler=handler)
    job_id = queue.enqueue("triage", dict(TRIAGE))
    assert queue.depth() == 1
    worker = running(queue)
    try:
        wait_for(lambda: _status(store, job_id) == "done")
    finally:
        worker.stop()
    assert handler.calls == [(job_id, 1)] and queue.depth() == 0
    triage = store.triage("o/r", 10, 1)
    assert triage is not None and triage.status == "done" and triage.pr_number == 7
    assert triage.report == {"summary": "1 failure", "attempt": 1}
    assert store.comment("o/r", 7) is not None


def test_a_failing_job_is_retried_then_succeeds(stack: tuple[Store, str]) -> None:
    store, url = stack
    handler = Recorder(failures=1)
    queue = JobQueue(huey_for_url(url, read_timeout=0.1), store, FAST, handler=handler)
    retries = metric("triage_bot_job_retries_total", kind="triage")
    job_id = queue.enqueue("triage", dict(TRIAGE))
    worker = running(queue)
    try:
        wait_for(lambda: _status(store, job_id) == "done")
    finally:
        worker.stop()
    assert [attempt for _, attempt in handler.calls] == [1, 2]
    assert metric("triage_bot_job_retries_total", kind="triage") == retries + 1
    record = store.jobs.get(job_id)
    assert record is not None and record.attempts == 2 and record.error is None


@pytest.mark.parametrize("permanent", [False, True])
def test_a_job_that_keeps_failing_is_recorded_as_failed(
    stack: tuple[Store, str], permanent: bool
) -> None:
    store, url = stack
    handler = Recorder(failures=99, permanent=permanent)
    options = dataclasses.replace(FAST, retries=1)
    queue = JobQueue(huey_for_url(url, read_timeout=0.1), store, options, handler=handler)
    failed = metric("triage_bot_jobs_failed_total", kind="triage")
    job_id = queue.enqueue("triage", dict(TRIAGE))
    worker = running(queue)
    try:
        wait_for(lambda: _status(store, job_id) == "failed")
    finally:
        worker.stop()
    assert len(handler.calls) == (1 if permanent else 2)
    record = store.jobs.get(job_id)
    assert record is not None and record.error is not None
    assert record.error.startswith("PermanentJobError" if permanent else "RuntimeError: GitHub")
    triage = store.triage("o/r", 10, 1)
    assert triage is not None and triage.status == "failed" and triage.error == record.error
    assert metric("triage_bot_jobs_failed_total", kind="triage") == failed + 1


def test_a_rate_limited_job_is_deferred_without_using_an_attempt(
    stack: tuple[Store, str],
) -> None:
    store, url = stack
    calls: list[int] = []

    def handler(payload: dict[str, Any], context: JobContext) -> None:
        calls.append(context.attempt)
        if len(calls) == 1:
            raise RetryLater(0.05, "GitHub rate limit")

    queue = JobQueue(huey_for_url(url, read_timeout=0.1), store, FAST, handler=handler)
    deferred = metric("triage_bot_jobs_deferred_total", kind="outdated")
    job_id = queue.enqueue("outdated", {"repo": "o/r", "pr_number": 7})
    worker = running(queue)
    try:
        wait_for(lambda: _status(store, job_id) == "done")
    finally:
        worker.stop()
    assert calls == [1, 1]
    assert metric("triage_bot_jobs_deferred_total", kind="outdated") == deferred + 1


def test_a_lost_push_is_swept_up(stack: tuple[Store, str]) -> None:
    store, url = stack
    handler = Recorder()
    queue = JobQueue(huey_for_url(url, read_timeout=0.1), store, FAST, handler=handler)
    job_id, _ = store.jobs.create(NewJob("triage", dict(TRIAGE)))  # in the ledger, never pushed
    assert queue.depth() == 0
    worker = running(queue)
    try:
        wait_for(lambda: _status(store, job_id) == "done")
    finally:
        worker.stop()
    assert handler.calls == [(job_id, 1)]


def test_a_job_pushed_twice_runs_once(stack: tuple[Store, str]) -> None:
    store, url = stack
    handler = Recorder()
    queue = JobQueue(huey_for_url(url, read_timeout=0.1), store, FAST, handler=handler)
    job_id = queue.enqueue("triage", dict(TRIAGE))
    queue.push(job_id, "triage", dict(TRIAGE))
    worker = running(queue)
    try:
        wait_for(lambda: _status(store, job_id) == "done" and queue.depth() == 0)
        time.sleep(0.2)
    finally:
        worker.stop()
    assert handler.calls == [(job_id, 1)]


WORKER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from triage_bot.config import load_settings
    from triage_bot.service.queue import QueueOptions
    from triage_bot.service.worker import run_worker

    marks = Path(sys.argv[1])

    def handler(payload, context):
        with marks.open("a") as out:
            out.write(f"start {os.getpid()} {context.attempt}\\n")
        while (marks.parent / "block").exists():
            time.sleep(0.05)  # "downloading logs" until killed
        with context.store.comment_lock(payload["repo"], 7):
            if context.store.comment(payload["repo"], 7) is None:
                with marks.open("a") as out:
                    out.write("created\\n")
                context.store.record_comment(payload["repo"], 7, 1, "h", payload["head_sha"])
        return {"ok": True}

    options = QueueOptions(lease=1.0, stale_after=0.5, sweep_interval=0.1, poll_interval=0.05)
    run_worker(load_settings(os.environ), workers=1, options=options, handler=handler)
    """
)


def start_worker(env: dict[str, str], marks: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(marks)],
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_a_worker_killed_mid_job_loses_nothing(stack: tuple[Store, str], tmp_path: Path) -> None:
    store, url = stack
    env = {"DATABASE_URL": store.url, "TRIAGE_DATA_DIR": str(tmp_path), "GITHUB_TOKEN": "t"}
    if url.startswith("redis"):
        env["REDIS_URL"] = url
    marks, block = tmp_path / "marks", tmp_path / "block"
    block.touch()
    queue = JobQueue(huey_for_url(url, read_timeout=0.1), store, FAST)
    job_id = queue.enqueue("triage", dict(TRIAGE))

    first = start_worker(env, marks)
    try:
        wait_for(lambda: marks.exists() and "start" in marks.read_text(), timeout=20)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    finally:
        first.kill()
    assert _status(store, job_id) == "running"  # what the dead worker left behind
    block.unlink()

    second = start_worker(env, marks)
    try:
        wait_for(lambda: _status(store, job_id) == "done", timeout=20)
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=10)
    lines = marks.read_text().splitlines()
    assert [line.split()[0] for line in lines] == ["start", "start", "created"]
    assert lines[1].endswith(" 2")  # the second run is the job's second attempt
    record = store.jobs.get(job_id)
    assert record is not None and record.attempts == 2


def _status(store: Store, job_id: str) -> str | None:
    record = store.jobs.get(job_id)
    return None if record is None else record.status
