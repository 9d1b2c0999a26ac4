"""The triage pipeline against the fake GitHub over real HTTP: one comment per pull request,
edited in place, with links to the log lines; lost logs, stale runs, forks, faults, dry runs."""

from __future__ import annotations

import datetime as dt
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakegithub import FakeGitHub, NewJob
from fakegithub.models import Installation, Job, PullRequest, Repo, WorkflowRun
from helpers import EXAMPLES, app_settings, triage_payload
from prometheus_client import REGISTRY

from triage_bot.config import Settings
from triage_bot.core.render import COMMENT_MARKER
from triage_bot.github_api.github import ClientOptions, RetryPolicy
from triage_bot.service.handler import handle_job
from triage_bot.service.queue import JobQueue, QueueOptions
from triage_bot.service.queue_transport import sqlite_huey
from triage_bot.service.worker import EmbeddedWorker
from triage_bot.store.store import Store
from triage_bot.triage.pipeline import triage_job
from triage_bot.triage.same_job import base_job_name
from triage_bot.triage.sticky_comment import OUTDATED_NOTE, outdated_job, with_outdated_note

REPO = "octo-org/widgets"
# One of each of the three seed failures (DESIGN.md's acceptance examples).
THREE = (
    "unit-tests-mi350x",
    "kimi-k3-mxfp4-1p1d-tp8-dspark7-agentic-1m-c1",
    "kimi-k3-mxfp4-1p1d-tp8-dcp8-agentic-lmcache-1m-c48-mesh-build",
)
FAST = ClientOptions(
    retry=RetryPolicy(attempts=5, backoff=0.01, max_backoff=0.05, max_wait=5.0),
    timeout=5.0,
    seconds_between_writes=0.0,
)


@dataclass
class World:
    fake: FakeGitHub
    repo: Repo
    installation: Installation
    pull: PullRequest
    settings: Settings
    store: Store

    def comments(self, pull: PullRequest | None = None) -> list[str]:
        return [c.body for c in self.fake.state.comments_on(self.repo, (pull or self.pull).number)]

    def writes(self) -> tuple[int, int]:
        """(POSTs, PATCHes) of comments that GitHub carried out."""
        posts = self.fake.requests(r"/issues/\d+/comments$", method="POST")
        patches = self.fake.requests(r"/issues/comments/\d+$", method="PATCH")
        return _ok(posts), _ok(patches)


def _ok(requests: list[Any]) -> int:
    return sum(1 for r in requests if 200 <= r.status < 300)


@pytest.fixture
def world(fake_github: FakeGitHub, tmp_path: Path) -> Iterator[World]:
    built = new_world(fake_github, tmp_path, f"sqlite:///{tmp_path / 'triage.db'}")
    yield built
    built.store.close()


def new_world(fake: FakeGitHub, tmp_path: Path, database_url: str) -> World:
    """A repository with the App installed and one pull request; the store at `database_url`."""
    repo = fake.state.add_repo(REPO)
    installation = fake.install("octo-org")
    pull = fake.state.add_pull_request(repo, author="alice", head_ref="fix-imports")
    settings = app_settings(fake, tmp_path, database_url)
    return World(fake, repo, installation, pull, settings, Store(database_url))


def example_log(name: str) -> bytes:
    return (EXAMPLES / f"{name}.log").read_bytes()


def failed_run(world: World, names: tuple[str, ...] = THREE, **kw: Any) -> WorkflowRun:
    jobs = [NewJob("lint", conclusion="success")]
    jobs += [NewJob(name, log=example_log(name)) for name in names]
    return world.fake.state.add_run(world.repo, pull=kw.pop("pull", world.pull), jobs=jobs, **kw)


def payload(world: World, run: WorkflowRun, **changes: Any) -> dict[str, Any]:
    """The job events.py makes of this run's workflow_run webhook."""
    return triage_payload(REPO, world.installation.id, run, **changes)


def triage(world: World, run: WorkflowRun, **kw: Any) -> dict[str, Any]:
    return triage_job(payload(world, run), world.settings, world.store, options=FAST, **kw)


# ---- the comment --------------------------------------------------------------------------


def test_three_failed_jobs_make_one_comment_with_grouped_failures(world: World) -> None:
    run = failed_run(world)
    result = triage(world, run)
    [body] = world.comments()
    assert body.startswith(COMMENT_MARKER)
    assert "aiter.ops.triton.attention.mla_decode" in body
    assert "block_regions" in body and "Too many open files" in body
    assert "· 3 failed jobs" in body
    # Every evidence link points into GitHub's log viewer at a step and line.
    job_urls = {j.name: f"/actions/runs/{run.id}/job/{j.id}#step:" for j in _jobs(world, run)}
    assert all(url in body for name, url in job_urls.items() if name != "lint")
    assert result["comments"] == [
        {"pr": world.pull.number, "action": "created", "id": result["comments"][0]["id"]}
    ]
    stored = world.store.comment(REPO, world.pull.number)
    assert stored is not None and stored.head_sha == run.head_sha and not stored.outdated
    failures = world.store.failures.of_run(REPO, run.id)
    assert sorted(f.signature for f in failures) == [
        "python-module-not-found",
        "python-unexpected-keyword-argument",
        "rust-too-many-open-files",
    ]
    assert {f.run_id for f in failures} == {run.id} and {f.workflow for f in failures} == {"CI"}
    assert {g["signature"] for g in result["groups"]} == {f.signature for f in failures}


def test_links_name_the_step_and_the_line_within_it(world: World) -> None:
    run = world.fake.state.add_run(world.repo, pull=world.pull)
    job = world.fake.state.add_job(run, NewJob("test (3.11, ubuntu)", log=b""))
    job.log = _stepped_log(job)
    triage(world, run)
    [body] = world.comments()
    # The error is the 4th line of step 3's log ("Run tests" starts at its ##[group] line).
    assert f"/job/{job.id}#step:3:4)" in body
    [failure] = world.store.failures.of_run(REPO, run.id)
    assert failure.job_name == "test" and failure.signature == "python-module-not-found"


def _stepped_log(job: Job) -> bytes:
    lines = []
    for step in job.steps[:3]:
        assert step.started_at is not None
        stamp = step.started_at + dt.timedelta(milliseconds=100)
        at = stamp.strftime("%Y-%m-%dT%H:%M:%S.%f0Z")
        lines.append(f"{at} ##[group]{step.name}")
        lines.append(f"{at} working on {step.name}")
        lines.append(f"{at} ##[endgroup]")
    lines.append(f"{at} ModuleNotFoundError: No module named 'numpy'")
    lines.append(f"{at} ##[error]Process completed with exit code 1.")
    return ("\n".join(lines) + "\n").encode()


def test_a_second_run_edits_the_same_comment_and_an_unchanged_body_is_not_sent(
    world: World,
) -> None:
    run = failed_run(world)
    triage(world, run)
    world.fake.state.add_attempt(run, jobs=[NewJob(THREE[0], log=example_log(THREE[0]))])
    second = triage(world, run)
    [body] = world.comments()
    assert second["comments"][0]["action"] == "updated" and "· 1 failed job" in body
    assert world.writes() == (1, 1)
    third = triage(world, run)  # the same attempt again: the same body
    assert third["comments"][0]["action"] == "unchanged"
    assert world.writes() == (1, 1) and world.comments() == [body]


def test_an_expired_log_is_said_in_the_comment(world: World) -> None:
    run = failed_run(world)
    expired = next(j for j in _jobs(world, run) if j.name == THREE[2])
    world.fake.state.expire_log(expired)
    result = triage(world, run)
    [body] = world.comments()
    assert "the log has expired" in body and THREE[2] in body
    assert "Too many open files" not in body and "block_regions" in body
    note = next(j["note"] for j in result["jobs"] if j["name"] == THREE[2])
    assert note is not None and "expired" in note


def test_a_capped_log_is_said_in_the_comment(world: World) -> None:
    run = failed_run(world, names=(THREE[0],))
    capped = Settings(**{**world.settings.__dict__, "max_log_bytes": 2000})
    triage_job(payload(world, run), capped, world.store, options=FAST)
    [body] = world.comments()
    assert "only the last 2,000 bytes of the log were read" in body


def test_a_run_for_an_old_head_is_not_posted(world: World) -> None:
    run = failed_run(world)
    with world.fake.state.lock:
        world.pull.head_sha = world.fake.state.new_sha()  # a push landed since the run
    result = triage(world, run)
    assert result["skipped"] == f"#{world.pull.number}: stale" and result["comments"] == []
    assert world.comments() == []
    assert world.fake.requests(host="logs") == []  # nothing was downloaded for it


def test_a_fork_pull_request_is_found_by_branch_and_sha(world: World) -> None:
    state = world.fake.state
    fork = state.add_repo("alice/widgets", fork=True)
    pull = state.add_pull_request(world.repo, author="alice", head_ref="main", head_repo=fork)
    run = failed_run(world, pull=pull)
    assert run.pull_request_numbers == []  # GitHub gives none for a fork's run
    result = triage(world, run)
    assert result["comments"][0]["pr"] == pull.number
    assert len(world.comments(pull)) == 1 and world.comments() == []


def test_workflow_job_trigger_triages_the_jobs_failed_so_far(world: World) -> None:
    jobs = [
        NewJob(THREE[1], log=example_log(THREE[1])),
        NewJob("slow", status="in_progress", conclusion=None),
    ]
    run = world.fake.state.add_run(
        world.repo, pull=world.pull, status="in_progress", conclusion=None, jobs=jobs
    )
    job = payload(world, run, trigger="workflow_job", pull_requests=[], find_pr=True)
    triage_job(job, world.settings, world.store, options=FAST)
    [body] = world.comments()
    assert "· 1 failed job" in body and "updated as more jobs fail" in body


# ---- faults, the queue, dry runs ------------------------------------------------------------


def test_502s_and_rate_limits_still_give_exactly_one_comment(world: World, tmp_path: Path) -> None:
    faults = world.fake.faults
    faults.fail(r"/issues/\d+/comments$", status=502, times=3)  # the list, then the create
    faults.fail(r"/logs$", status=502, times=2)
    faults.fail("", status=502, times=2, host="logs")
    faults.secondary_rate_limit(r"/actions/runs/\d+$", retry_after=1, times=1)
    # A primary limit longer than the client sleeps: the job is deferred through the queue.
    faults.exhaust_rate_limit(reset_in=1.5)
    impatient = ClientOptions(
        retry=RetryPolicy(attempts=5, backoff=0.01, max_backoff=0.05, max_wait=0.5),
        timeout=5.0,
        seconds_between_writes=0.0,
    )
    options = QueueOptions(retry_delay=0.1, lease=5.0, sweep_interval=1.0, poll_interval=0.05)
    queue = JobQueue(
        sqlite_huey(tmp_path / "queue.db"),
        world.store,
        options,
        handler=functools.partial(handle_job, options=impatient),
        settings=world.settings,
    )
    run = failed_run(world)
    deferrals = _deferrals()
    job_id = queue.enqueue("triage", payload(world, run))
    worker = EmbeddedWorker(queue, workers=2).start()
    try:
        _wait(lambda: _status(world.store, job_id) == "done", 30)
    finally:
        worker.stop()
    [body] = world.comments()
    assert "block_regions" in body and "Too many open files" in body
    assert world.writes()[0] == 1
    triaged = world.store.triage(REPO, run.id, 1)
    assert triaged is not None and triaged.status == "done" and triaged.report is not None
    assert _deferrals() > deferrals  # the rate limit was waited out in the queue


def _deferrals() -> float:
    return REGISTRY.get_sample_value("triage_bot_jobs_deferred_total", {"kind": "triage"}) or 0.0


def test_dry_run_posts_nothing_and_logs_the_body(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    run = failed_run(world)
    with caplog.at_level(logging.INFO, logger="triage_bot.triage.pipeline"):
        result = triage(world, run, dry_run=True)
    assert result["comments"] == [{"pr": world.pull.number, "action": "dry_run"}]
    assert world.comments() == [] and world.writes() == (0, 0)
    assert world.store.comment(REPO, world.pull.number) is None
    assert COMMENT_MARKER in caplog.text and "block_regions" in caplog.text


# ---- outdated comments ----------------------------------------------------------------------


def test_a_new_head_marks_the_comment_outdated(world: World) -> None:
    run = failed_run(world)
    triage(world, run)
    job = {
        "kind": "outdated",
        "repo": REPO,
        "installation_id": world.installation.id,
        "pr_number": world.pull.number,
        "before": run.head_sha,
        "after": "f" * 40,
    }
    assert outdated_job(job, world.settings, world.store, options=FAST)["action"] == "updated"
    [body] = world.comments()
    assert body.startswith(COMMENT_MARKER + "\n" + OUTDATED_NOTE)
    stored = world.store.comment(REPO, world.pull.number)
    assert stored is not None and stored.outdated
    again = outdated_job(job, world.settings, world.store, options=FAST)
    assert again["action"] == "unchanged" and world.writes() == (1, 1)


def test_helpers() -> None:
    assert base_job_name("test (3.11, ubuntu)") == "test"
    assert base_job_name("build") == "build"
    assert base_job_name("(x)") == "(x)"
    noted = with_outdated_note(f"{COMMENT_MARKER}\n## CI triage\n", "a" * 40)
    assert noted.startswith(f"{COMMENT_MARKER}\n{OUTDATED_NOTE}") and noted.endswith("triage\n")


# ---- helpers --------------------------------------------------------------------------------


def _jobs(world: World, run: WorkflowRun) -> list[Job]:
    return world.fake.state.jobs_of(run)


def _status(store: Store, job_id: str) -> str | None:
    record = store.jobs.get(job_id)
    return None if record is None else record.status


def _wait(predicate: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s")
        time.sleep(0.05)


# ---- the command line ------------------------------------------------------------------------


def test_cli_triages_a_run_url_and_posts_only_when_asked(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from triage_bot.cli.cli import main

    run = failed_run(world)
    for name, value in {
        "APP_ID": str(world.fake.app_id),
        "PRIVATE_KEY": world.fake.private_key_pem,
        "GITHUB_API_URL": world.fake.base_url,
        "DATABASE_URL": world.settings.database_url,  # --post takes the comment lock there
    }.items():
        monkeypatch.setenv(name, value)
    url = f"https://ghe.example.com/{REPO}/actions/runs/{run.id}/attempts/1"
    assert main(["triage", url, "--format", "markdown"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(COMMENT_MARKER) and "block_regions" in printed
    assert world.comments() == []
    assert main(["triage", url, "--format", "json", "--post"]) == 0
    assert '"python-module-not-found"' in capsys.readouterr().out
    # Both look for passing runs to compare with, as the App does (there are none here, and
    # the footer says so): what was printed is what was posted.
    [posted] = world.comments()
    assert "not compared with a passing run: no passing run of the job was found" in posted
    assert posted == printed
    assert main(["triage", f"https://github.com/{REPO}/actions/{run.id}"]) == 2
    monkeypatch.delenv("APP_ID")
    assert main(["triage", url]) == 2
    assert "triage-bot: APP_ID: required with PRIVATE_KEY\n" in capsys.readouterr().err


def test_a_worker_whose_job_was_taken_over_posts_nothing(world: World) -> None:
    run = failed_run(world, names=(THREE[0],))
    taken_over = threading.Event()
    taken_over.set()
    result = triage_job(
        payload(world, run), world.settings, world.store, options=FAST, lease_lost=taken_over
    )
    assert result["skipped"] == "taken over by another worker"
    assert world.comments() == []
    triage(world, run)  # the worker that took it over
    assert len(world.comments()) == 1
