"""A failure the recorded history calls likely flaky, through the pipeline against the fake
GitHub over real HTTP (SQLite and PostgreSQL): the next pull request's comment counts it apart
from new failures, its row says so, its details link the failed job and the pass that proves
it; the JSON carries the verdict; a failure keyed on nothing specific never is; a signature
that says `flaky: never` never is."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from fakegithub import NewJob
from fakegithub.models import PullRequest, WorkflowRun
from helpers import triage_payload
from services import db_url

from triage.test_outcomes import (
    FAST,
    PYTEST_LOG,
    REPO,
    WEIRD_LOG,
    World,
    handle,
    passed_payload,
    world,
)
from triage_bot.commands.command_job import command_job
from triage_bot.core.report import Report
from triage_bot.triage.flaky_marks import judge_report
from triage_bot.triage.pipeline import triage_job

__all__ = ["db_url", "world"]  # fixtures


def fail_then_pass(world: World, log: str) -> WorkflowRun:
    """A run of the first pull request whose `test` job fails, then passes on "re-run failed
    jobs" of the same commit (a "passed" job records it, no triage)."""
    first = world.fake.state.add_run(
        world.repo, pull=world.pull,
        jobs=[NewJob("lint", conclusion="success"), NewJob("test", log=log)],
    )  # fmt: skip
    world.triage(first)
    world.fake.state.add_attempt(
        first, conclusion="success", jobs=[NewJob("test", conclusion="success")]
    )
    handle(world, passed_payload(world, first))
    return first


def next_pull_fails(world: World, log: str) -> tuple[PullRequest, WorkflowRun, dict[str, Any], str]:
    """Another pull request whose `test` fails the same way: the triage's JSON and comment."""
    other = world.fake.state.add_pull_request(world.repo, author="bob", head_ref="feature")
    run = world.fake.state.add_run(world.repo, pull=other, jobs=[NewJob("test", log=log)])
    result = triage_job(
        triage_payload(REPO, world.installation.id, run), world.settings, world.store, options=FAST
    )
    [comment] = world.fake.state.comments_on(world.repo, other.number)
    return other, run, result, comment.body


def above_footer(body: str) -> str:
    """The comment without its footer (whose command list names likely flaky jobs)."""
    return body.split("<sub>Commands")[0]


def job_urls(world: World, run: WorkflowRun) -> dict[int, str]:
    """The `test` job's page of each attempt of `run`, as GitHub (the fake) gave it."""
    urls = {o.run_attempt: o.url for o in world.store.outcomes.of_run(REPO, run.id)}
    assert all(url and url.startswith("http") for url in urls.values())
    return {attempt: str(url) for attempt, url in urls.items() if url}


def test_a_failure_that_passed_on_re_run_is_likely_flaky_in_the_next_comment(
    world: World,
) -> None:
    first = fail_then_pass(world, PYTEST_LOG)
    _pull, _run, result, body = next_pull_fails(world, PYTEST_LOG)
    urls = job_urls(world, first)  # the test job of attempt 1 (failed) and 2 (passed)
    # The headline counts it as likely flaky, not as a failure of this pull request.
    headline = next(line for line in body.splitlines() if line.startswith(("❌", "⚠️", "✅")))
    assert "1 likely flaky" in headline
    assert "failure" not in headline.split("**")[1]
    row = next(line for line in body.splitlines() if "python-pytest" in line or "pytest" in line)
    assert row.startswith("| likely flaky |"), row
    # The details link the failure and the pass that proves it, with where it happened.
    assert f"[failed]({urls[1]}), then [passed]({urls[2]}) on attempt 2" in body
    assert f"- #{world.pull.number}, commit `{first.head_sha[:10]}`: [failed]" in body
    # The JSON says the same.
    [group] = result["groups"]
    flaky = group["flaky"]
    assert flaky["likely_flaky"] is True
    assert "re-run of the same commit" in flaky["why"]
    [proof] = flaky["proofs"]
    assert (proof["rule"], proof["failed"]["url"], proof["passed"]["url"]) == (
        "re-run",
        urls[1],
        urls[2],
    )
    assert (proof["failed"]["attempt"], proof["passed"]["attempt"]) == (1, 2)
    assert proof["failed"]["pr"] == world.pull.number


def test_a_failure_with_no_history_is_new_and_judged_not_flaky(world: World) -> None:
    _pull, _run, result, body = next_pull_fails(world, PYTEST_LOG)
    assert "likely flaky" not in above_footer(body)
    assert "❌ **1 failure** ·" in body
    [group] = result["groups"]
    assert group["flaky"]["likely_flaky"] is False
    assert group["flaky"]["proofs"] == []


def test_a_generic_failure_is_never_likely_flaky(world: World) -> None:
    # Nothing explains the deploy's line: its key is the best line, which proves nothing.
    fail_then_pass(world, WEIRD_LOG)
    _pull, _run, result, body = next_pull_fails(world, WEIRD_LOG)
    assert "likely flaky" not in above_footer(body)
    assert result["groups"] == []
    assert re.search(r"\*\*unexplained\*\*", body)


def test_a_signature_that_says_flaky_never_is_never_likely_flaky(world: World) -> None:
    fail_then_pass(world, PYTEST_LOG)
    other = world.fake.state.add_pull_request(world.repo, author="bob", head_ref="feature")
    run = world.fake.state.add_run(world.repo, pull=other, jobs=[NewJob("test", log=PYTEST_LOG)])
    seen: list[Report] = []
    payload = triage_payload(REPO, world.installation.id, run)
    triage_job(payload, world.settings, world.store, options=FAST, on_report=seen.append)
    [report] = seen
    assert [g.likely_flaky for g in report.groups] == [True]  # the history, as it is
    never = replace(
        report,
        groups=[
            replace(g, signature=replace(g.signature, never_flaky=True), flaky=None)
            for g in report.groups
        ],
    )
    [group] = judge_report(world.store, REPO, never, pr_number=other.number).groups
    assert group.flaky is not None and not group.flaky.likely_flaky
    assert "never flaky" in group.flaky.why


def retry(world: World, pull: PullRequest) -> dict[str, Any]:
    """A maintainer's `/triage retry` on `pull`, as the queue's handler runs it."""
    world.fake.state.grant(world.repo, "mona", "maintain")
    asked = world.fake.state.add_comment(world.repo, pull.number, "mona", "/triage retry")
    payload = {
        "repo": REPO, "installation_id": world.installation.id, "pr_number": pull.number,
        "author": "mona", "body": asked.body, "comment_id": asked.id,
    }  # fmt: skip
    return command_job(payload, world.settings, world.store, options=FAST)


def test_retry_re_runs_a_likely_flaky_job_and_not_one_with_no_history(world: World) -> None:
    # pytest's failure is not one a re-run cures (no `retry: true`): only its history makes
    # it worth a re-run.
    fail_then_pass(world, PYTEST_LOG)
    flaky_pull, run, _result, _body = next_pull_fails(world, PYTEST_LOG)
    [job] = world.fake.state.jobs_of(run)
    result = retry(world, flaky_pull)
    assert result["rerun"] == [job.id]
    assert [(r.kind, r.job_id) for r in world.fake.state.reruns] == [("failed_jobs", None)]
    reply = world.fake.state.comments_on(world.repo, flaky_pull.number)[-1].body
    assert "Re-ran 1 job whose failure a re-run usually cures or is likely flaky" in reply


def test_retry_leaves_a_failure_with_no_history(world: World) -> None:
    pull, _run, _result, _body = next_pull_fails(world, PYTEST_LOG)
    result = retry(world, pull)
    assert result.get("rerun", []) == [] and world.fake.state.reruns == []
    reply = world.fake.state.comments_on(world.repo, pull.number)[-1].body
    assert "Nothing was re-run" in reply and "is not one a re-run cures" in reply
