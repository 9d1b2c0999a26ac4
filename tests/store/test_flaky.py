"""The flaky rules (store/flaky.py) on recorded histories: a re-run of the same commit that
passed proves a specific failure flaky; failures on two other pull requests or base-branch
commits that passed again without a code change do too; and the traps Dr. CI fell into
(pytorch/test-infra 4741, 5028, 5046, 5537, 5540) never do: a generic signature, a best-guess
line, a capture that names nothing, a pass of a sibling shard or another workflow at the same
commit, a pass after a fix or a revert, a failure that never passed again. Last, the same
through the store on SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from services import db_url

from triage_bot.store.flaky import MAX_PROOFS, context_of, judge, judge_keys, specific
from triage_bot.store.job_outcomes import JobOutcome, line_key, signature_key
from triage_bot.store.store import Store

__all__ = ["db_url"]  # a fixture

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
TEST = "tests/test_net.py::test_download"
KEY = signature_key("python-pytest-failed", json.dumps([TEST]))
_ids = itertools.count(1)


def job(
    conclusion: str,
    *,
    hours_ago: float,
    commit: str,
    pr: int | None = 7,
    run: int = 1,
    attempt: int = 1,
    key: str | None = KEY,
    captures: dict[str, str] | None = None,
    **changes: Any,
) -> JobOutcome:
    """One recorded job; a failed one has `key` (a pytest failure of TEST by default)."""
    job_id = next(_ids)
    failed = conclusion == "failure"
    outcome = JobOutcome(
        repo="o/r", run_id=run, run_attempt=attempt, job_id=job_id, workflow="CI",
        workflow_id=11, job_name="test", job_full_name="test (3.12, 1, 2)",
        conclusion=conclusion, commit_sha=commit, tree_sha=f"tree-{commit}",
        finished_at=NOW - timedelta(hours=hours_ago), branch="feature", pr_number=pr,
        url=f"https://github.com/o/r/actions/runs/{run}/job/{job_id}",
        signature="python-pytest-failed" if failed and key == KEY else None,
        captures=(captures if captures is not None else {"test": TEST}) if failed else None,
        failure_key=key if failed else None,
    )  # fmt: skip
    return replace(outcome, **changes)


def rerun_history(commit: str = "c1", run: int = 1, **failed_changes: Any) -> list[JobOutcome]:
    """PR 7's commit `commit`: the job failed, and passed when attempt 2 re-ran it."""
    return [
        job("failure", hours_ago=5, commit=commit, run=run, **failed_changes),
        job("success", hours_ago=4, commit=commit, run=run, attempt=2),
    ]


# ---- the re-run rule ------------------------------------------------------------------------


def test_failed_then_passed_on_a_re_run_of_the_same_commit_is_likely_flaky() -> None:
    history = rerun_history()
    verdict = judge(KEY, history, now=NOW, asking=("pr", "8"))  # the next pull request asks
    assert verdict.likely_flaky
    [proof] = verdict.proofs
    assert (proof.rule, proof.failed, proof.passed) == ("re-run", history[0], history[1])
    assert proof.failed.url != proof.passed.url  # two links: the failure and the pass


def test_another_run_of_the_same_commit_that_passed_proves_it_too() -> None:
    history = [
        job("failure", hours_ago=5, commit="c1", run=1),
        job("success", hours_ago=3, commit="c1", run=2),  # "Re-run all jobs" as a new run
    ]
    assert judge(KEY, history, now=NOW).likely_flaky


def test_a_pass_before_the_failure_proves_nothing() -> None:
    history = [
        job("success", hours_ago=6, commit="c1", run=1),
        job("failure", hours_ago=5, commit="c1", run=2),
    ]
    assert not judge(KEY, history, now=NOW).likely_flaky


def test_at_most_three_proofs_newest_first() -> None:
    history = []
    for n in range(5):
        history += [
            job("failure", hours_ago=50 - n, commit=f"c{n}", run=n + 1, pr=n + 1),
            job("success", hours_ago=49.5 - n, commit=f"c{n}", run=n + 1, pr=n + 1, attempt=2),
        ]
    verdict = judge(KEY, history, now=NOW)
    assert len(verdict.proofs) == MAX_PROOFS
    assert [p.failed.commit_sha for p in verdict.proofs] == ["c4", "c3", "c2"]


def test_a_re_run_older_than_the_window_is_forgotten() -> None:
    history = [
        job("failure", hours_ago=15 * 24, commit="c1"),
        job("success", hours_ago=15 * 24 - 1, commit="c1", attempt=2),
    ]
    assert not judge(KEY, history, now=NOW).likely_flaky
    assert judge(KEY, history, now=NOW - timedelta(days=2)).likely_flaky


# ---- the traps ------------------------------------------------------------------------------


def test_a_signature_without_a_specific_capture_is_never_flaky() -> None:
    # pytorch/test-infra 4741: a key every failure of the kind shares ("exit code 1").
    generic = signature_key("make-error", json.dumps([]))
    history = rerun_history(key=generic, captures={}, signature="make-error")
    verdict = judge(generic, history, now=NOW)
    assert not verdict.likely_flaky and "generic" in verdict.why


def test_a_best_guess_line_alone_is_never_flaky() -> None:
    # pytorch/test-infra 5046: the log classifier's line was the same across bazel failures.
    line = line_key("ERROR: Build did NOT complete successfully")
    history = rerun_history(key=line, captures=None, signature=None)
    assert not judge(line, history, now=NOW).likely_flaky


@pytest.mark.parametrize(
    "captures, is_specific",
    [
        ({"test": TEST}, True),
        ({"class": "NetTest", "test": "test_download"}, True),
        ({"module": "torch._inductor"}, True),
        ({"file": "src/net.rs", "line": "42"}, True),
        ({"path": "src/net.rs", "line": "42", "code": "E0308"}, True),
        ({"file": "src/net.rs", "message": "mismatched types"}, False),  # no line: a file
        ({"file": "src/net.rs", "line": ""}, False),
        ({"test": ""}, False),
        ({"test": "<unknown>"}, False),
        ({"test": "tests"}, False),
        ({"test": "42"}, False),
        ({"module": "__main__"}, False),
        ({"host": "pypi.org"}, False),
        ({"message": "Process completed with exit code 1"}, False),
    ],
)
def test_only_a_capture_naming_a_test_a_module_or_a_file_line_is_specific(
    captures: dict[str, str], is_specific: bool
) -> None:
    key = signature_key("sig", json.dumps(list(captures.values())))
    outcome = job("failure", hours_ago=1, commit="c1", key=key, captures=captures)
    assert specific(outcome) is is_specific
    history = rerun_history(key=key, captures=captures)
    assert judge(key, history, now=NOW).likely_flaky is is_specific


def test_a_sibling_shard_passing_at_the_same_commit_proves_nothing() -> None:
    # pytorch/test-infra 5540: the "proof" was another job (a split build) on the same commit.
    history = [
        job("failure", hours_ago=5, commit="c1", job_full_name="test (3.12, 1, 2)"),
        job("success", hours_ago=4, commit="c1", job_full_name="test (3.12, 2, 2)"),
        job("success", hours_ago=4, commit="c1", workflow_id=12, workflow="Nightly"),
    ]
    assert not judge(KEY, history, now=NOW).likely_flaky


def test_a_failure_of_the_pull_request_itself_that_never_passed_is_not_flaky() -> None:
    # pytorch/test-infra 5028: the pull request broke the test; every run of it fails.
    history = [
        job("failure", hours_ago=5, commit="c1"),
        job("failure", hours_ago=4, commit="c1", attempt=2),
        job("failure", hours_ago=2, commit="c2", run=2),
    ]
    verdict = judge(KEY, history, now=NOW, asking=("pr", "7"))
    assert not verdict.likely_flaky and verdict.proofs == ()


def test_passes_after_a_fix_or_a_revert_on_the_base_branch_prove_nothing() -> None:
    # pytorch/test-infra 5537: a change landed on the base, failed there, and was reverted.
    history = [
        job("failure", hours_ago=30, commit="b1", pr=None, run=10, branch="main"),
        job("success", hours_ago=29, commit="b2", pr=None, run=11, branch="main"),  # the revert
        job("failure", hours_ago=20, commit="b3", pr=None, run=12, branch="main"),
        job("success", hours_ago=19, commit="b4", pr=None, run=13, branch="main"),  # a fix
    ]
    assert not judge(KEY, history, now=NOW, asking=("pr", "9")).likely_flaky


def test_a_signature_said_never_flaky_is_not() -> None:
    verdict = judge(KEY, rerun_history(), now=NOW, never={"python-pytest-failed"})
    assert not verdict.likely_flaky and "never" in verdict.why


# ---- the "elsewhere" rule: other pull requests and base-branch commits, no code change ------


def repushed(pr: int | None, commit: str, hours_ago: float, run: int) -> list[JobOutcome]:
    """In pull request `pr` (None: on the base branch), the job failed at `commit` and passed
    at another commit with the same tree (an amended message, a re-push): no code change."""
    tree = f"tree-{commit}"
    return [
        job("failure", hours_ago=hours_ago, commit=commit, pr=pr, run=run),
        job("success", hours_ago=hours_ago - 1, commit=f"{commit}'", pr=pr, run=run + 1,
            tree_sha=tree),
    ]  # fmt: skip


def test_passing_again_without_a_code_change_in_two_other_places_is_likely_flaky() -> None:
    history = repushed(3, "a1", 40, 1) + repushed(None, "b1", 30, 10)
    verdict = judge(KEY, history, now=NOW, asking=("pr", "9"))
    assert verdict.likely_flaky
    assert {context_of(p.failed) for p in verdict.proofs} == {("pr", "3"), ("commit", "b1")}
    assert {p.rule for p in verdict.proofs} == {"elsewhere"}


def test_one_other_place_is_not_enough_nor_is_the_asking_pull_request() -> None:
    one = repushed(3, "a1", 40, 1)
    assert not judge(KEY, one, now=NOW, asking=("pr", "9")).likely_flaky
    with_own = one + repushed(9, "p1", 10, 20)  # the asking pull request's own re-push
    assert not judge(KEY, with_own, now=NOW, asking=("pr", "9")).likely_flaky


def test_a_pass_on_changed_code_in_other_places_proves_nothing() -> None:
    history = []
    for pr, run in ((3, 1), (4, 10), (5, 20)):
        history += [
            job("failure", hours_ago=40 - run, commit=f"p{pr}", pr=pr, run=run),
            job("success", hours_ago=39 - run, commit=f"p{pr}-fixed", pr=pr, run=run + 1),
        ]
    assert not judge(KEY, history, now=NOW, asking=("pr", "9")).likely_flaky


# ---- through the store ----------------------------------------------------------------------


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    store = Store(db_url)
    yield store
    store.close()


def test_judged_from_the_recorded_history_on_each_database(store: Store) -> None:
    generic = signature_key("make-error", json.dumps([]))
    store.outcomes.record(
        rerun_history()
        + rerun_history(key=generic, captures={}, signature="make-error", run=5, commit="c5")
        + [job("failure", hours_ago=2, commit="c9", pr=9, run=9)]  # the asking pull request
    )
    verdicts = judge_keys(store.outcomes, "o/r", [KEY, generic], now=NOW, asking=("pr", "9"))
    assert verdicts[KEY].likely_flaky and not verdicts[generic].likely_flaky
    [proof] = verdicts[KEY].proofs
    assert (proof.failed.commit_sha, proof.passed.run_attempt) == ("c1", 2)
