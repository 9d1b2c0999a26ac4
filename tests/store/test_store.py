"""The store on SQLite and PostgreSQL (real servers, real threads): deliveries, installations,
triages, sticky comments, locks and claims, and its parts (the failure records, the job
ledger)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from services import db_url

from triage_bot.store.failure_records import JobFailure, TriagedRun
from triage_bot.store.ledger import NewJob
from triage_bot.store.store import InstallationChange, LockTimeout, Store

__all__ = ["db_url"]  # a fixture

TRIAGE = {"repo": "o/r", "run_id": 10, "run_attempt": 1, "head_sha": "abc", "pull_requests": [7]}


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    store = Store(db_url)
    yield store
    store.close()


def test_processes_starting_together_on_an_empty_database_all_open_it(db_url: str) -> None:
    # A server and its workers started at once each create the missing tables.
    start = threading.Barrier(6)

    def open_store(_: int) -> bool:
        start.wait()
        store = Store(db_url)
        store.close()
        return True

    with ThreadPoolExecutor(6) as pool:
        assert all(pool.map(open_store, range(6)))
    store = Store(db_url, create=False)
    assert store.accept_delivery("d-1", "ping", None, "ignored").new  # the tables are whole
    store.close()


def test_a_delivery_is_accepted_once_under_concurrency(store: Store) -> None:
    barrier = threading.Barrier(12)

    def deliver(_: int) -> bool:
        barrier.wait()
        return store.accept_delivery("delivery-1", "workflow_run", "completed", "accepted").new

    with ThreadPoolExecutor(12) as pool:
        results = list(pool.map(deliver, range(12)))
    assert results.count(True) == 1
    with ThreadPoolExecutor(8) as pool:
        accepted = pool.map(
            lambda i: store.accept_delivery(f"d-{i}", "ping", None, "ignored"), range(40)
        )
        assert all(acceptance.new for acceptance in accepted)


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
    installation = store.installation(5)
    assert installation is not None and installation.repos == ("octo/a",)


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


def test_installation_changes_arrive_with_their_deliveries(store: Store) -> None:
    def deliver(delivery_id: str, change: InstallationChange) -> None:
        assert store.accept_delivery(
            delivery_id, "installation", None, "ok", installation=change
        ).new

    deliver("i1", InstallationChange("upsert", 9, "acme", ("acme/a", "acme/b")))
    deliver("i2", InstallationChange("add_repos", 9, repos=("acme/c",)))
    deliver("i3", InstallationChange("remove_repos", 9, repos=("acme/a",)))
    deliver("i4", InstallationChange("upsert", 9, suspended=True))
    installation = store.installation(9)
    assert installation is not None and installation.suspended
    assert (installation.account, installation.repos) == ("acme", ("acme/b", "acme/c"))
    deliver("i5", InstallationChange("upsert", 9, suspended=False))
    installation = store.installation(9)
    assert installation is not None and not installation.suspended
    assert installation.repos == ("acme/b", "acme/c")  # an upsert without repos keeps them
    deliver("i6", InstallationChange("delete", 9))
    assert store.installation(9) is None


def test_triages_and_comments(store: Store) -> None:
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
    assert store.failures.of_run("o/r", 2**40) == [failure]
    assert store.failures.of_run("o/r", 2**41) == []
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
