"""Outages lose nothing: GitHub answering 5xx for longer than the client's own retries, a log
host answering 503, an outage that outlasts the budget, and a worker SIGKILLed while it holds
the pull request's comment lock.

End to end, as in tests/test_e2e.py: `triage-bot serve` (and `worker`) as real processes, the
fake GitHub over loopback HTTP with faults injected. Time is compressed through the settings
(TRIAGE_GITHUB_BACKOFF*, TRIAGE_OUTAGE_*): the code path is the production one.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fakegithub import FakeGitHub
from sqlalchemy import select
from test_e2e import REPO, Stack

from triage_bot.config import SettingsError, load_settings
from triage_bot.github_api.outage import OutagePolicy
from triage_bot.store.ledger import NewJob
from triage_bot.store.schema import locks
from triage_bot.store.store import LockTimeout, Store, under_job_lease

# Each request to GitHub: 5 tries, pauses of at most 0.05 + 0.1 + 0.2 + 0.2 s.
IN_WORKER_BUDGET = 0.55
FAST_CLIENT = {"TRIAGE_GITHUB_BACKOFF": "0.05", "TRIAGE_GITHUB_BACKOFF_MAX": "0.2"}
# The queue's waits between tries: from 0.2 s, at most 1 s (huey schedules to the second).
FAST_QUEUE = {"TRIAGE_OUTAGE_BACKOFF": "0.2", "TRIAGE_OUTAGE_BACKOFF_MAX": "1"}
HOUR = 3600.0


def _stack(fake: FakeGitHub, tmp: Path, mode: str, **env: str) -> Stack:
    stack = Stack(fake, tmp, mode)
    stack.env.update({**FAST_CLIENT, **FAST_QUEUE, **env})
    return stack


@pytest.fixture
def embedded(fake_github: FakeGitHub, tmp_path: Path) -> Iterator[Stack]:
    """One `serve` with its worker threads, SQLite; a 60 s outage budget."""
    stack = _stack(fake_github, tmp_path, "embedded", TRIAGE_OUTAGE_RETRY_HOURS=str(60 / HOUR))
    try:
        yield stack
    finally:
        stack.close()


def job_error(stack: Stack, job_id: str) -> str:
    record = stack.store.jobs.get(job_id)
    return (record.error or "") if record is not None else ""


def metrics_text(stack: Stack) -> str:
    return httpx.get(f"{stack.url}/metrics", timeout=10).text


def comment_posts(stack: Stack, number: int) -> int:
    return len(stack.fake.requests(rf"/issues/{number}/comments$", method="POST"))


def test_github_down_longer_than_the_client_retries_ends_in_one_comment(embedded: Stack) -> None:
    stack = embedded
    stack.up()
    pull, run = stack.pull_with_failed_run("outage-500")
    stack.fake.faults.fail("", status=500, times=None)  # every API call, the token's too
    down_since = time.monotonic()
    accepted = stack.send(stack.webhook(run, pull))
    assert accepted.status_code == 202, accepted.text
    job = accepted.json()["job"]
    # The client's retries ran out and the queue took over (the attempt was not used up).
    stack.wait(lambda: job_error(stack, job).startswith("outage github_5xx:"), "an outage retry")
    time.sleep(max(0.0, down_since + 3 * IN_WORKER_BUDGET - time.monotonic()))
    assert stack.comments(pull) == []
    stack.fake.faults.clear()

    stack.wait(lambda: stack.triaged(run) and bool(stack.comments(pull)), "the comment")
    time.sleep(1.0)  # a second copy of the job, if any, would post now
    [body] = stack.comments(pull)
    assert "block_regions" in body and "· 3 failed jobs" in body
    assert comment_posts(stack, pull.number) == 1
    record = stack.store.jobs.get(job)
    assert record is not None and record.status == "done" and record.attempts == 1
    text = metrics_text(stack)
    assert 'triage_bot_job_outage_retries_total{reason="github_5xx"}' in text
    assert 'triage_bot_jobs_waiting_on_outage{reason="github_5xx"} 0.0' in text


def test_a_log_host_503_is_waited_out_not_reported_as_a_missing_log(embedded: Stack) -> None:
    stack = embedded
    stack.up()
    pull, run = stack.pull_with_failed_run("outage-logs")
    stack.fake.faults.fail("", status=503, times=None, host="logs")
    accepted = stack.send(stack.webhook(run, pull))
    job = accepted.json()["job"]
    stack.wait(lambda: job_error(stack, job).startswith("outage log_host:"), "a log-host retry")
    assert "log_host" in metrics_text(stack)
    time.sleep(1.5)  # a while longer: more tries fail
    assert stack.comments(pull) == []
    stack.fake.faults.clear()

    stack.wait(lambda: stack.triaged(run) and bool(stack.comments(pull)), "the comment")
    [body] = stack.comments(pull)
    assert "could not be downloaded" not in body and "broke off" not in body
    assert "block_regions" in body and "Too many open files" in body
    assert "· 3 failed jobs" in body
    assert comment_posts(stack, pull.number) == 1


def test_a_log_still_unreadable_at_the_end_of_the_budget_is_noted(
    fake_github: FakeGitHub, tmp_path: Path
) -> None:
    # One bad log must not leave the run without a comment: the last try posts with a note.
    stack = _stack(fake_github, tmp_path, "embedded", TRIAGE_OUTAGE_RETRY_HOURS=str(3 / HOUR))
    try:
        stack.up()
        pull, run = stack.pull_with_failed_run("log-host-down")
        stack.fake.faults.fail("", status=503, times=None, host="logs")
        job = stack.send(stack.webhook(run, pull)).json()["job"]
        stack.wait(lambda: job_error(stack, job).startswith("outage log_host:"), "a retry")
        assert stack.comments(pull) == []
        stack.wait(lambda: stack.triaged(run) and bool(stack.comments(pull)), "the comment")
        [body] = stack.comments(pull)
        assert "the log could not be downloaded" in body and "503" in body
        record = stack.store.jobs.get(job)
        assert record is not None and record.status == "done"
    finally:
        stack.close()


def test_an_expired_log_is_noted_at_once_not_retried(embedded: Stack) -> None:
    stack = embedded
    stack.up()
    pull, run = stack.pull_with_failed_run("expired-logs")
    stack.fake.faults.fail("", status=410, times=None, host="logs")
    job = stack.send(stack.webhook(run, pull)).json()["job"]
    stack.wait(lambda: stack.triaged(run) and bool(stack.comments(pull)), "the comment")
    [body] = stack.comments(pull)
    assert "the log has expired" in body
    record = stack.store.jobs.get(job)
    assert record is not None and record.attempts == 1 and record.error is None
    # Each log was asked for once: a permanent answer is not retried.
    assert len(stack.fake.requests(host="logs")) == 3


def test_an_outage_past_the_budget_fails_the_job_and_a_later_webhook_triages(
    fake_github: FakeGitHub, tmp_path: Path
) -> None:
    stack = _stack(fake_github, tmp_path, "embedded", TRIAGE_OUTAGE_RETRY_HOURS=str(3 / HOUR))
    try:
        stack.up()
        pull, run = stack.pull_with_failed_run("outage-forever")
        stack.fake.faults.fail("", status=502, times=None)
        first = stack.send(stack.webhook(run, pull)).json()["job"]

        def failed() -> bool:
            record = stack.store.jobs.get(first)
            return record is not None and record.status == "failed"

        stack.wait(failed, "the job to be given up")
        assert job_error(stack, first).startswith("outage github_5xx: gave up after")
        triage = stack.store.triage(REPO, run.id, run.run_attempt)
        assert triage is not None and triage.status == "failed"
        assert triage.error is not None and "502" in triage.error
        text = metrics_text(stack)
        assert 'triage_bot_jobs_failed_on_outage{reason="github_5xx"} 1.0' in text
        assert 'triage_bot_jobs_given_up_total{kind="triage",reason="github_5xx"} 1.0' in text
        assert stack.comments(pull) == []

        stack.fake.faults.clear()  # GitHub is back; the next delivery for the run triages it
        again = stack.send(stack.webhook(run, pull))
        assert again.status_code == 202 and again.json()["outcome"] == "job", again.text
        assert again.json()["job"] != first
        stack.wait(lambda: stack.triaged(run) and bool(stack.comments(pull)), "the comment")
        [body] = stack.comments(pull)
        assert "· 3 failed jobs" in body
    finally:
        stack.close()


def test_a_new_delivery_wakes_a_job_waiting_out_an_outage(
    fake_github: FakeGitHub, tmp_path: Path
) -> None:
    # Long queue waits (about a minute): only the wake-up can bring the comment within WAIT.
    stack = _stack(
        fake_github,
        tmp_path,
        "embedded",
        TRIAGE_OUTAGE_BACKOFF="120",
        TRIAGE_OUTAGE_BACKOFF_MAX="120",
    )
    try:
        stack.up()
        pull, run = stack.pull_with_failed_run("outage-wake")
        stack.fake.faults.fail("", status=503, times=None)
        job = stack.send(stack.webhook(run, pull)).json()["job"]
        stack.wait(lambda: job_error(stack, job).startswith("outage github_5xx:"), "a retry")
        stack.fake.faults.clear()
        again = stack.send(stack.webhook(run, pull))
        assert again.status_code == 202 and again.json()["job"] == job, again.text
        stack.wait(lambda: stack.triaged(run) and bool(stack.comments(pull)), "the comment")
        assert comment_posts(stack, pull.number) == 1
    finally:
        stack.close()


def test_a_worker_killed_holding_the_comment_lock_frees_it_within_a_lease(
    fake_github: FakeGitHub, tmp_path: Path
) -> None:
    stack = _stack(fake_github, tmp_path, "scaled")  # `triage-bot worker` processes
    try:
        workers = stack.up()
        pull, run = stack.pull_with_failed_run("killed-in-lock")
        # The listing of the pull request's comments is made under the comment lock: hold it.
        stack.fake.faults.delay(rf"/issues/{pull.number}/comments$", 10.0, method="GET", times=1)
        stack.send(stack.webhook(run, pull))
        name = f"comment:{REPO}#{pull.number}"

        def lock_held() -> bool:
            with stack.store.engine.connect() as conn:
                found = conn.execute(select(locks.c.name).where(locks.c.name == name))
                return found.first() is not None

        stack.wait(
            lambda: bool(stack.fake.requests(rf"/issues/{pull.number}/comments$")) and lock_held(),
            "the comment lock to be taken",
        )
        for process in workers:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
        assert lock_held() and stack.comments(pull) == []
        restarted = time.monotonic()
        stack.start_workers()
        # The lock's own ttl is 120 s: only the job's lease (2 s here) can free it this soon.
        stack.wait(lambda: bool(stack.comments(pull)), "the comment", timeout=20.0)
        took = time.monotonic() - restarted
        assert took < 15.0, f"the comment came {took:.1f}s after the restart"
        stack.wait(lambda: stack.triaged(run), "the triage to be recorded")
        [body] = stack.comments(pull)
        assert "· 3 failed jobs" in body and comment_posts(stack, pull.number) == 1
        assert not lock_held()
    finally:
        stack.close()


# ---- the parts, in process ------------------------------------------------------------------


def test_outage_waits_grow_with_jitter_and_end_at_the_budget() -> None:
    policy = OutagePolicy(budget=100.0, backoff=2.0, max_backoff=30.0)
    first = [policy.delay(0.0) for _ in range(50)]
    assert all(d is not None and 1.0 <= d <= 2.0 for d in first)
    assert len(set(first)) > 1  # jittered
    later = policy.delay(10.0)  # about as long again as waited so far
    assert later is not None and 5.0 <= later <= 10.0
    capped = policy.delay(60.0)  # at most max_backoff, and never past the budget
    assert capped is not None and 15.0 <= capped <= 30.0
    last = policy.delay(99.0)
    assert last is not None and last <= 1.0
    assert policy.delay(100.0) is None and policy.spent(100.0) and not policy.spent(99.0)


def test_outage_settings_are_read_and_checked(tmp_path: Path) -> None:
    base = {"HOME": str(tmp_path)}
    defaults = load_settings(base)
    assert (defaults.outage_retry_hours, defaults.outage_backoff) == (6.0, 30.0)
    assert OutagePolicy.from_settings(defaults).budget == 6 * HOUR
    tuned = load_settings(
        {**base, "TRIAGE_OUTAGE_RETRY_HOURS": "0.5", "TRIAGE_GITHUB_BACKOFF": "2"}
    )
    assert tuned.outage_retry_hours == 0.5 and tuned.github_backoff == 2.0
    for bad in ("0", "-1", "soon", "nan", "inf"):
        with pytest.raises(SettingsError) as caught:
            load_settings({**base, "TRIAGE_OUTAGE_RETRY_HOURS": bad})
        assert str(caught.value).startswith("TRIAGE_OUTAGE_RETRY_HOURS:")


def test_a_jobs_lock_is_freed_by_its_lease_and_only_then(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'locks.db'}")
    try:
        job_id, _ = store.jobs.create(NewJob("triage", {"repo": "o/r"}))
        claimed = store.jobs.claim(job_id, "claim-1", lease=0.6)
        assert claimed is not None
        with under_job_lease(job_id, "claim-1"):
            held = store.comment_lock("o/r", 7)  # a ttl of 120 s
            held.__enter__()  # and never left: its worker "dies" holding it
        # The lease is live: the lock is held.
        with pytest.raises(LockTimeout), store.comment_lock("o/r", 7, wait=0.2):
            pass
        assert store.jobs.renew(job_id, "claim-1", 0.6)  # a heartbeat keeps it held
        with pytest.raises(LockTimeout), store.comment_lock("o/r", 7, wait=0.2):
            pass
        time.sleep(0.7)  # no heartbeat: the lease lapses, the 120 s ttl does not matter
        started = time.monotonic()
        with store.comment_lock("o/r", 7, wait=5.0):
            assert time.monotonic() - started < 1.0
        # A lock taken outside any job is still held until its ttl.
        outside = store.lock("plain", ttl=120.0)
        outside.__enter__()
        with pytest.raises(LockTimeout), store.lock("plain", wait=0.2):
            pass
    finally:
        store.close()
