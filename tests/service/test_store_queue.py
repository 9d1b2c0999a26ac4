"""The queue on SQLite and Redis, its store on SQLite and PostgreSQL: real servers, real threads,
real worker processes (one of them killed with SIGKILL in the middle of a job). The store's own
tests are tests/store/test_store.py."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from services import create_database, drop_database, queue_url, start_postgres

from triage_bot.service.handler import JobContext, PermanentJobError, RetryLater
from triage_bot.service.queue import JobQueue, QueueOptions
from triage_bot.service.queue_transport import huey_for_url
from triage_bot.service.worker import EmbeddedWorker
from triage_bot.store.ledger import NewJob
from triage_bot.store.store import Store

__all__ = ["queue_url"]  # a fixture

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
