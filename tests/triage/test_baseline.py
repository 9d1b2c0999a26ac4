"""The base-branch comparison against the fake GitHub over real HTTP, with the store on SQLite
and PostgreSQL: the seed story (the `block_regions` failure also fails on `main`, the
ModuleNotFoundError does not), the base run triaged once only, a passing base, another
workflow's run and a fork's `main`, and a base that cannot be read."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fakegithub import FakeGitHub, NewJob
from fakegithub.models import WorkflowRun
from helpers import run_log
from services import db_url

from triage.test_pipeline import (
    FAST,
    REPO,
    THREE,
    World,
    example_log,
    failed_run,
    new_world,
    payload,
)
from triage_bot.core.render import render_comment, render_text
from triage_bot.core.report import BaseRun, build_report
from triage_bot.github_api.github import client_for_job
from triage_bot.repo.repo_catalog import builtin_catalog
from triage_bot.triage import baseline
from triage_bot.triage.pipeline import triage_job
from triage_bot.triage.run import triage_run

__all__ = ["db_url"]  # fixture

KWARG = "unit-tests-mi350x"  # the `unexpected keyword argument 'block_regions'` job
BADGE = "**Also failing on `main`**: likely unrelated to this pull request"


@pytest.fixture
def world(fake_github: FakeGitHub, tmp_path: Path, db_url: str) -> Iterator[World]:
    built = new_world(fake_github, tmp_path, db_url)
    yield built
    built.store.close()


def base_run(world: World, *names: str, **kw: Any) -> WorkflowRun:
    """A push run of the CI workflow on `main` whose jobs `names` fail with the example logs."""
    jobs = [NewJob("lint", conclusion="success")]
    jobs += [NewJob(name, log=example_log(name)) for name in names]
    kw.setdefault("conclusion", "failure" if names else "success")
    return world.fake.state.add_run(world.repo, head_branch="main", jobs=jobs, **kw)


def triage(world: World, run: WorkflowRun) -> dict[str, Any]:
    return triage_job(payload(world, run), world.settings, world.store, options=FAST)


def log_downloads(world: World, run: WorkflowRun) -> int:
    ids = {job.id for job in world.fake.state.jobs_of(run)}
    found = world.fake.requests(r"/actions/jobs/\d+/logs$")
    return sum(1 for r in found if int(r.path.split("/")[-2]) in ids)


def headings(body: str) -> list[str]:
    return re.findall(r"^<details[^>]*><summary>\d+\. ([^:]+):", body, re.MULTILINE)


def test_a_failure_also_on_main_is_marked_with_the_link_and_new_ones_come_first(
    world: World,
) -> None:
    base = base_run(world, KWARG)
    result = triage(world, failed_run(world))
    [body] = world.comments()
    base_url = result["base"]["run_url"]
    assert base_url.endswith(f"/actions/runs/{base.id}")
    assert result["base"] == {"branch": "main", "run_url": base_url, "conclusion": "failure"}
    # New failures first; the one failing on main last, with the badge and the link.
    assert headings(body) == [
        "Too many open files (os error 24)",
        "Python module not found",
        "Unexpected keyword argument",
    ]
    assert body.count(BADGE) == 1
    assert body.index(BADGE) > body.index("<summary>3. Unexpected keyword argument")
    assert f"([the run on `main`]({base_url}))" in body
    assert "❌ **2 new failures** · 1 also failing on `main` · 3 failed jobs" in body
    assert f"ompared with [the base run on `main`]({base_url})" in body
    assert "| also on `main` | **3. Unexpected keyword argument**" in body
    marked = {g["signature"]: g["base"] for g in result["groups"]}
    assert marked == {
        "python-module-not-found": None,
        "rust-too-many-open-files": None,
        "python-unexpected-keyword-argument": result["base"],
    }
    # The base run was triaged for the comparison and recorded as such.
    triaged = world.store.failures.run(REPO, base.id)
    assert triaged is not None and triaged.complete and triaged.partial_logs == 0
    [failure] = world.store.failures.of_run(REPO, base.id)
    assert failure.signature == "python-unexpected-keyword-argument"


def test_the_base_run_is_triaged_once_only(world: World) -> None:
    base = base_run(world, KWARG)
    triage(world, failed_run(world))
    assert log_downloads(world, base) == 1
    other = world.fake.state.add_pull_request(world.repo, author="bob", head_ref="other")
    result = triage(world, failed_run(world, pull=other))
    assert log_downloads(world, base) == 1  # the store had it: no second download
    assert BADGE in world.comments(other)[0]
    assert [g["base"] is not None for g in result["groups"]] == [False, False, True]


def test_a_base_run_the_bot_triaged_from_its_own_webhook_is_not_downloaded_again(
    world: World,
) -> None:
    base = base_run(world, KWARG)
    pushed = payload(world, base, pull_requests=[], find_pr=False)
    triage_job(pushed, world.settings, world.store, options=FAST)  # main's own failure
    assert log_downloads(world, base) == 1 and world.comments() == []
    triage(world, failed_run(world))
    assert log_downloads(world, base) == 1 and BADGE in world.comments()[0]


def test_a_passing_base_run_marks_nothing(world: World) -> None:
    fixed = base_run(world, KWARG)  # an older failure on main, fixed since
    passed = base_run(world)
    cancelled = base_run(world, KWARG, conclusion="cancelled")  # says nothing: looked past
    result = triage(world, failed_run(world))
    [body] = world.comments()
    assert BADGE not in body and all(g["base"] is None for g in result["groups"])
    assert result["base"]["conclusion"] == "success"
    assert result["base"]["run_url"].endswith(f"/actions/runs/{passed.id}")
    assert "❌ **3 new failures** · 3 failed jobs" in body
    assert "ompared with [the base run on `main`](" in body
    assert [log_downloads(world, run) for run in (fixed, passed, cancelled)] == [0, 0, 0]


def test_runs_of_another_workflow_or_of_a_forks_main_do_not_count(world: World) -> None:
    state = world.fake.state
    nightly = dict(name="Nightly", path=".github/workflows/nightly.yml")
    base_run(world, KWARG, **nightly)
    fork = state.add_repo("alice/widgets", fork=True)
    fork_pull = state.add_pull_request(world.repo, author="alice", head_ref="main", head_repo=fork)
    forks_main = failed_run(world, names=(KWARG,), pull=fork_pull)
    assert forks_main.head_branch == "main" and forks_main.event == "pull_request"
    result = triage(world, failed_run(world))
    [body] = world.comments()
    assert BADGE not in body and result["base"] is None
    assert "❌ **3 failures** · 3 failed jobs" in body  # none called new: nothing compared
    assert "not compared with the base branch" in body


def test_a_base_that_cannot_be_triaged_leaves_the_comment_whole_with_a_note(
    world: World,
) -> None:
    base = base_run(world, KWARG)
    world.fake.faults.fail(rf"/actions/runs/{base.id}/attempts/1/jobs$", status=500, times=None)
    result = triage(world, failed_run(world))
    [body] = world.comments()
    assert sorted(headings(body)) == [
        "Python module not found",
        "Too many open files (os error 24)",
        "Unexpected keyword argument",
    ]
    assert BADGE not in body and result["base"] is None
    assert "the comparison with main could not be made" in body and "500" in body
    assert world.store.failures.run(REPO, base.id) is None  # tried again next time
    world.fake.faults.clear()
    triage(world, failed_run(world))
    assert BADGE in world.comments()[0]


def test_an_expired_base_log_is_said_and_nothing_is_claimed_from_it(world: World) -> None:
    base = base_run(world, KWARG)
    [job] = [j for j in world.fake.state.jobs_of(base) if j.name == KWARG]
    world.fake.state.expire_log(job)
    result = triage(world, failed_run(world))
    [body] = world.comments()
    assert BADGE not in body and result["base"]["conclusion"] == "failure"
    assert "1 failed job log(s) of the run on main could not be read whole" in body
    triage(world, failed_run(world))  # recorded as triaged: not asked for again
    assert log_downloads(world, base) == 1


def test_the_terminal_view_shows_the_comparison(world: World) -> None:
    base_run(world, KWARG)
    run = failed_run(world, names=THREE[:2])
    result = triage(world, run)
    assert [g["base"] is not None for g in result["groups"]] == [False, True]
    with client_for_job(world.settings, payload(world, run), FAST) as client:
        github_run = client.get_run(REPO, run.id)
        report, _ = triage_run(client, REPO, run.id, 1, builtin_catalog(), run=github_run)
        compared = baseline.compare(
            client, world.store, github_run, report, ["main"], builtin_catalog(), world.settings
        )
    text = render_text(compared.report)
    assert "2 known failures (1 new, 1 also failing on main)" in text.splitlines()[0]
    assert "   also failing on main: likely unrelated to this pull request (http" in text
    assert text.index("Python module not found") < text.index("Unexpected keyword argument")


def test_two_pull_requests_at_once_download_the_base_run_once(world: World) -> None:
    base = base_run(world, KWARG)
    [job] = [j for j in world.fake.state.jobs_of(base) if j.name == KWARG]
    # The base log is slow, so the second triage reaches the base while the first reads it.
    world.fake.faults.delay(rf"/actions/jobs/{job.id}/logs$", 0.5)
    other = world.fake.state.add_pull_request(world.repo, author="bob", head_ref="other")
    runs = [failed_run(world), failed_run(world, pull=other)]
    barrier = threading.Barrier(len(runs))

    def go(run: WorkflowRun) -> dict[str, Any]:
        barrier.wait()
        return triage(world, run)

    with ThreadPoolExecutor(len(runs)) as pool:
        results = list(pool.map(go, runs))
    assert log_downloads(world, base) == 1
    for result in results:
        assert [g["base"] is not None for g in result["groups"]] == [False, False, True]


def test_a_branch_name_is_shown_as_code_whatever_it_holds() -> None:
    report = build_report([run_log(example_log(KWARG))])
    odd = BaseRun("rel`ease @team", "https://github.com/o/r/actions/runs/1", "failure")
    body = render_comment(baseline.mark(report, odd, {baseline.group_key(report.groups[0])}))
    assert "**Also failing on ``rel`ease @team``**: likely unrelated" in body
    assert "([the run on ``rel`ease @team``](https://github.com/o/r/actions/runs/1))" in body
