"""The job outcomes (store/job_outcomes.py) on SQLite and PostgreSQL: one row a job of a run
attempt, written over by a later triage of the same attempt, even by concurrent ones; the
history the flaky rules read; pruning by retention, a bounded batch at a time, by the worker's
sweeper."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from services import db_url

from triage_bot.config import Settings
from triage_bot.service.queue import JobQueue
from triage_bot.service.queue_transport import sqlite_huey
from triage_bot.service.worker import prune_history
from triage_bot.store.flaky import judge_keys
from triage_bot.store.job_outcomes import JobOutcome, line_key, signature_key
from triage_bot.store.store import Store

__all__ = ["db_url"]  # a fixture

NOW = datetime.now(UTC).replace(microsecond=0)
KEY = signature_key("pytest-failed", '["tests/test_io.py::test_read"]')


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    store = Store(db_url)
    yield store
    store.close()


def outcome(job_id: int, conclusion: str = "success", **changes: Any) -> JobOutcome:
    base = JobOutcome(
        repo="o/r", run_id=100, run_attempt=1, job_id=job_id, workflow="CI", workflow_id=7,
        job_name="test", job_full_name="test (3.11)", conclusion=conclusion, commit_sha="c1",
        finished_at=NOW,
        branch="feature", pr_number=12, url=f"https://github.com/o/r/actions/runs/100/job/{job_id}",
    )  # fmt: skip
    if conclusion == "failure" and "failure_key" not in changes:
        changes = {"signature": "pytest-failed", "failure_key": KEY,
                   "captures": {"test": "tests/test_io.py::test_read"}} | changes  # fmt: skip
    return replace(base, **changes)


def test_outcomes_round_trip_with_their_keys_and_times(store: Store) -> None:
    written = [outcome(1), outcome(2, "failure"), outcome(3, "cancelled", job_name="deploy")]
    assert store.outcomes.record(written) == 3
    read = store.outcomes.of_run("o/r", 100)
    assert read == written
    assert read[1].captures == {"test": "tests/test_io.py::test_read"}
    assert read[1].finished_at == NOW and read[1].finished_at.tzinfo is not None
    assert [o.failed for o in read] == [False, True, False]
    assert [o.passed for o in read] == [True, False, False]


def test_a_later_triage_of_the_same_attempt_writes_over_and_attempts_stay_apart(
    store: Store,
) -> None:
    store.outcomes.record([outcome(1, "failure", failure_key=line_key("boom"))])
    store.outcomes.record([outcome(1, "failure"), outcome(2)])  # the run went on: more jobs
    store.outcomes.record([outcome(1, run_attempt=2), outcome(2, run_attempt=2)])  # a re-run
    read = store.outcomes.of_run("o/r", 100)
    assert [(o.run_attempt, o.job_id, o.conclusion, o.failure_key) for o in read] == [
        (1, 1, "failure", KEY),
        (1, 2, "success", None),
        (2, 1, "success", None),
        (2, 2, "success", None),
    ]


def test_concurrent_triages_of_one_attempt_leave_one_row_a_job(store: Store) -> None:
    start = threading.Barrier(6)
    jobs = [outcome(job_id, "failure" if job_id % 3 == 0 else "success") for job_id in range(40)]

    def write(_: int) -> int:
        start.wait()
        return store.outcomes.record(jobs)

    with ThreadPoolExecutor(6) as pool:
        assert list(pool.map(write, range(6))) == [40] * 6
    assert store.outcomes.of_run("o/r", 100) == jobs


def test_history_is_the_keys_failures_and_every_job_at_their_commits(store: Store) -> None:
    old = NOW - timedelta(days=20)
    store.outcomes.record(
        [
            outcome(1, "failure", commit_sha="c1"),  # the key fails at c1 ...
            outcome(2, "success", commit_sha="c1", run_attempt=2),  # ... and passes there
            outcome(3, "success", commit_sha="c1", job_name="lint"),  # another job at c1
            outcome(4, "success", commit_sha="c2", run_id=101),  # a commit the key never hit
            outcome(5, "failure", commit_sha="c3", run_id=102, failure_key=line_key("x")),
            outcome(6, "failure", commit_sha="c4", run_id=103, finished_at=old),  # too old
            outcome(7, "failure", commit_sha="c1", repo="other/r"),  # another repository
        ]
    )
    found = store.outcomes.history("o/r", {KEY}, since=NOW - timedelta(days=14))
    assert [o.job_id for o in found] == [1, 2, 3]
    assert store.outcomes.history("o/r", set(), since=old) == []


def test_history_holds_a_re_push_of_the_same_tree_so_judge_keys_sees_it(store: Store) -> None:
    """flaky.same_code counts a pass at another commit with the same tree as no code
    change; the history must reach that pass, or the rule never fires outside a test."""
    history: list[JobOutcome] = []
    for pr, run in ((3, 200), (4, 300)):
        failed_at, repushed_at = f"f{pr}", f"f{pr}-amended"
        at = NOW - timedelta(hours=40 - pr)
        history += [
            outcome(run, "failure", run_id=run, pr_number=pr, commit_sha=failed_at,
                    tree_sha=f"tree{pr}", finished_at=at),
            outcome(run + 1, "success", run_id=run + 1, pr_number=pr, commit_sha=repushed_at,
                    tree_sha=f"tree{pr}", finished_at=at + timedelta(hours=1)),
        ]  # fmt: skip
    history.append(  # a pass at a commit whose code changed proves nothing, and is not read
        outcome(400, "success", run_id=400, pr_number=3, commit_sha="f3-fixed", tree_sha="other")
    )
    store.outcomes.record(history)
    found = store.outcomes.history("o/r", {KEY}, since=NOW - timedelta(days=14))
    assert sorted(o.job_id for o in found) == [200, 201, 300, 301]
    verdict = judge_keys(store.outcomes, "o/r", {KEY}, now=NOW, asking=("pr", "9"))[KEY]
    assert verdict.likely_flaky, verdict.why
    assert {p.passed.commit_sha for p in verdict.proofs} == {"f3-amended", "f4-amended"}


def test_prune_deletes_only_rows_past_retention_a_batch_at_a_time(store: Store) -> None:
    old = [outcome(i, finished_at=NOW - timedelta(days=100, minutes=i)) for i in range(25)]
    recent = [outcome(100 + i, finished_at=NOW - timedelta(days=89)) for i in range(5)]
    store.outcomes.record(old + recent)
    cutoff = NOW - timedelta(days=90)
    assert [store.outcomes.prune(cutoff, batch=10) for _ in range(4)] == [10, 10, 5, 0]
    assert [o.job_id for o in store.outcomes.of_run("o/r", 100)] == [100, 101, 102, 103, 104]


@pytest.mark.parametrize("days, kept", [(90.0, 5), (30.0, 0)])
def test_the_workers_pass_prunes_by_the_retention_setting(
    store: Store, tmp_path: Path, days: float, kept: int
) -> None:
    store.outcomes.record(
        [outcome(i, finished_at=NOW - timedelta(days=95)) for i in range(3)]
        + [outcome(10 + i, finished_at=NOW - timedelta(days=60)) for i in range(5)]
    )
    queue = JobQueue(
        sqlite_huey(tmp_path / "queue.db"), store, settings=Settings(history_days=days)
    )
    assert prune_history(queue, batch=2) == 2  # bounded
    while prune_history(queue, batch=2):
        pass
    assert len(store.outcomes.of_run("o/r", 100)) == kept
