"""What a triage records of every job of the run (triage/outcomes.py, store/job_outcomes.py),
through the pipeline against the fake GitHub over real HTTP, on SQLite and PostgreSQL: the
passing jobs from the job list (no log of theirs downloaded), the failed ones with their
failure key (signature and captures, or the normalised best line), job names without matrix
values or shard numbers, the commit, branch, pull request, attempt and time; a re-run's
attempt as rows of its own."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fakegithub import FakeGitHub, NewJob
from fakegithub.models import Installation, PullRequest, Repo, WorkflowRun
from helpers import app_settings, triage_payload
from services import db_url

from triage_bot.config import Settings
from triage_bot.github_api.github import ClientOptions, RetryPolicy
from triage_bot.service.handler import JobContext, handle_job
from triage_bot.store.flaky import judge_keys
from triage_bot.store.job_outcomes import JobOutcome, line_key, signature_key
from triage_bot.store.store import Store
from triage_bot.triage.pipeline import triage_job

__all__ = ["db_url"]  # a fixture

REPO = "octo-org/widgets"
FAST = ClientOptions(
    retry=RetryPolicy(attempts=3, backoff=0.01, max_backoff=0.05, max_wait=5.0),
    timeout=5.0,
    seconds_between_writes=0.0,
)
STAMP = "2026-11-30T10:00:0{}.0000000Z "
PYTEST_LOG = "".join(
    STAMP.format(i) + line + "\n"
    for i, line in enumerate(
        [
            "##[group]Run pytest",
            "FAILED tests/test_io.py::test_read - AssertionError: assert 1 == 2",
            "===== 1 failed, 3 passed in 0.52s =====",
            "##[error]Process completed with exit code 1.",
        ]
    )
)
WEIRD_LOG = "".join(
    STAMP.format(i) + line + "\n"
    for i, line in enumerate(
        [
            "##[group]Run ./deploy.sh",
            "deploy: gizmo 4711 refused the widget at 0x7ffe12ab after 35 ms",
            "##[error]Process completed with exit code 3.",
        ]
    )
)


@dataclass
class World:
    fake: FakeGitHub
    repo: Repo
    installation: Installation
    pull: PullRequest
    settings: Settings
    store: Store

    def triage(self, run: WorkflowRun) -> None:
        payload = triage_payload(REPO, self.installation.id, run)
        triage_job(payload, self.settings, self.store, options=FAST)

    def outcomes(self, run: WorkflowRun) -> dict[tuple[int, str], JobOutcome]:
        found = self.store.outcomes.of_run(REPO, run.id)
        return {(o.run_attempt, o.url.rsplit("/", 1)[1] if o.url else ""): o for o in found}


@pytest.fixture
def world(fake_github: FakeGitHub, tmp_path: Path, db_url: str) -> Iterator[World]:
    repo = fake_github.state.add_repo(REPO)
    installation = fake_github.install("octo-org")
    pull = fake_github.state.add_pull_request(repo, author="alice", head_ref="fix-io")
    settings = app_settings(fake_github, tmp_path, db_url)
    built = World(fake_github, repo, installation, pull, settings, Store(db_url))
    yield built
    built.store.close()


def test_every_job_of_the_run_is_recorded_with_its_failure_key(world: World) -> None:
    run = world.fake.state.add_run(
        world.repo,
        pull=world.pull,
        jobs=[
            NewJob("lint", conclusion="success", log="never downloaded"),
            NewJob("test shard 2/4 (3.11, ubuntu)", log=PYTEST_LOG),
            NewJob("deploy", log=WEIRD_LOG),
            NewJob("docs", conclusion="cancelled"),
        ],
    )
    world.triage(run)
    jobs = {job.name: job for job in world.fake.state.jobs_of(run)}
    found = {o.job_id: o for o in world.store.outcomes.of_run(REPO, run.id)}
    assert set(found) == {job.id for job in jobs.values()}
    lint = found[jobs["lint"].id]
    test = found[jobs["test shard 2/4 (3.11, ubuntu)"].id]
    deploy = found[jobs["deploy"].id]
    docs = found[jobs["docs"].id]
    assert (lint.conclusion, lint.failure_key, lint.signature) == ("success", None, None)
    assert (test.job_name, test.signature) == ("test", "python-pytest-failed")
    assert test.job_full_name == "test shard 2/4 (3.11, ubuntu)"
    assert test.captures == {"test": "tests/test_io.py::test_read"}
    assert test.failure_key == signature_key(
        "python-pytest-failed", json.dumps(["tests/test_io.py::test_read"])
    )
    # A catch-all exit code explains nothing: the key is the best line, its noise blanked.
    assert deploy.signature is None
    assert deploy.failure_key == line_key(
        "deploy: gizmo 4711 refused the widget at <hex> after <dur>"
    )
    assert (docs.conclusion, docs.failure_key) == ("cancelled", None)
    for o in found.values():
        assert (o.repo, o.run_id, o.run_attempt, o.commit_sha) == (REPO, run.id, 1, run.head_sha)
        assert (o.workflow, o.branch, o.pr_number) == ("CI", "fix-io", world.pull.number)
        assert o.tree_sha == run.head_sha[::-1]  # the fake's tree id of the head commit
        assert o.url is not None and o.url.endswith(f"/job/{o.job_id}")
        assert o.finished_at.tzinfo is not None
    # The passing and cancelled jobs' logs were never asked for.
    log_requests = world.fake.requests(r"/actions/jobs/\d+/logs$")
    asked = {int(r.path.split("/")[-2]) for r in log_requests}
    assert asked == {jobs["test shard 2/4 (3.11, ubuntu)"].id, jobs["deploy"].id}


def test_a_re_run_is_recorded_as_its_own_attempt(world: World) -> None:
    run = world.fake.state.add_run(
        world.repo,
        pull=world.pull,
        jobs=[NewJob("test", log=PYTEST_LOG), NewJob("deploy", log=WEIRD_LOG)],
    )
    world.triage(run)
    # The re-run: the test passes this time, deploy fails again (so the run is triaged).
    world.fake.state.add_attempt(
        run, jobs=[NewJob("test", conclusion="success"), NewJob("deploy", log=WEIRD_LOG)]
    )
    world.triage(run)
    found = world.store.outcomes.of_run(REPO, run.id)
    assert [(o.run_attempt, o.job_name, o.conclusion) for o in found] == [
        (1, "test", "failure"),
        (1, "deploy", "failure"),
        (2, "test", "success"),
        (2, "deploy", "failure"),
    ]
    assert found[0].commit_sha == found[2].commit_sha == run.head_sha


def passed_payload(world: World, run: WorkflowRun) -> dict[str, Any]:
    """The "passed" job events.py makes of a run's successful workflow_run webhook."""
    return {
        "kind": "passed", "repo": REPO, "installation_id": world.installation.id,
        "run_id": run.id, "run_attempt": run.run_attempt, "head_sha": run.head_sha,
        "workflow_id": run.workflow_id, "url": None,
    }  # fmt: skip


def handle(world: World, payload: dict[str, Any]) -> dict[str, Any] | None:
    context = JobContext("job-1", 1, world.store, world.settings, False, threading.Event())
    return handle_job(payload, context, options=FAST)


def test_a_failure_that_passed_on_a_re_run_is_likely_flaky_in_the_next_pull_request(
    world: World,
) -> None:
    first = world.fake.state.add_run(
        world.repo, pull=world.pull, jobs=[NewJob("lint", conclusion="success"),
                                           NewJob("test", log=PYTEST_LOG)],
    )  # fmt: skip
    world.triage(first)
    # "Re-run failed jobs": the whole run passes, so it is a "passed" job, not a triage.
    world.fake.state.add_attempt(
        first, conclusion="success", jobs=[NewJob("test", conclusion="success")]
    )
    handle(world, passed_payload(world, first))
    # The next pull request fails with the same test.
    other = world.fake.state.add_pull_request(world.repo, author="bob", head_ref="feature")
    second = world.fake.state.add_run(world.repo, pull=other, jobs=[NewJob("test", log=PYTEST_LOG)])
    world.triage(second)
    [failed] = [o for o in world.store.outcomes.of_run(REPO, second.id) if o.failed]
    assert failed.failure_key is not None
    now = datetime.now(UTC) + timedelta(minutes=1)
    verdicts = judge_keys(
        world.store.outcomes, REPO, [failed.failure_key], now=now, asking=("pr", str(other.number))
    )
    verdict = verdicts[failed.failure_key]
    assert verdict.likely_flaky
    [proof] = verdict.proofs
    jobs = world.fake.state.jobs_of(first, attempt=0)
    ids = {(job.run_attempt, job.name): job.id for job in jobs}
    assert (proof.failed.job_id, proof.passed.job_id) == (ids[(1, "test")], ids[(2, "test")])
    # The links the comment will show: each job on GitHub.
    for shown, attempt in ((proof.failed, 1), (proof.passed, 2)):
        assert shown.url is not None
        assert shown.url.endswith(f"/{REPO}/actions/runs/{first.id}/job/{ids[(attempt, 'test')]}")
    assert (proof.failed.pr_number, proof.passed.pr_number) == (world.pull.number,) * 2


def test_a_passing_run_never_triaged_is_not_recorded(world: World) -> None:
    run = world.fake.state.add_run(
        world.repo, pull=world.pull, conclusion="success",
        jobs=[NewJob("test", conclusion="success")],
    )  # fmt: skip
    handle(world, passed_payload(world, run))
    assert world.store.outcomes.of_run(REPO, run.id) == []
    assert world.fake.requests(rf"/actions/runs/{run.id}/") == []  # no call was made
