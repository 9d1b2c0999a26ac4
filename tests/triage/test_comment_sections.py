"""One comment for every failing workflow of the head commit: each run's section, stored by
workflow, put together under the comment lock (the cap on the whole: tests/core/test_render.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakegithub import FakeGitHub
from fakegithub.models import WorkflowRun
from services import db_url  # noqa: F401  (a fixture: SQLite and PostgreSQL)

from triage.test_pipeline import FAST, THREE, World, failed_run, new_world, triage
from triage_bot.store.comment_sections import Section
from triage_bot.store.store import Store
from triage_bot.triage.sticky_comment import passed_job

REPO = "octo-org/widgets"


@pytest.fixture
def world(fake_github: FakeGitHub, tmp_path: Path) -> Iterator[World]:
    built = new_world(fake_github, tmp_path, f"sqlite:///{tmp_path / 'triage.db'}")
    yield built
    built.store.close()


def test_two_failing_workflows_share_the_one_comment(world: World) -> None:
    tests = failed_run(world, names=(THREE[0],))
    lint = failed_run(world, names=(THREE[2],), name="Lint", path=".github/workflows/lint.yml")
    triage(world, tests)
    triage(world, lint)
    [body] = world.comments()
    # The workflow named "CI" is not named twice ("CI triage: CI").
    assert "## CI triage\n" in body and "## CI triage: Lint" in body
    assert "block_regions" in body and "Too many open files" in body
    assert body.index("## CI triage\n") < body.index("## CI triage: Lint")  # by name
    # The CI workflow fails again, differently: its section changes, Lint's stays.
    rerun = failed_run(world, names=(THREE[1],))
    triage(world, rerun)
    [body] = world.comments()
    assert "block_regions" not in body and "aiter.ops.triton" in body
    assert "Too many open files" in body
    assert body.count("<!-- triage-bot:sticky-comment -->") == 1


def test_a_new_head_commit_leaves_the_old_sections_out(world: World) -> None:
    triage(world, failed_run(world, names=(THREE[2],), name="Lint", path=".github/workflows/l.yml"))
    world.pull.head_sha = world.fake.state.new_sha()  # a push
    triage(world, failed_run(world, names=(THREE[0],)))
    [body] = world.comments()
    assert "block_regions" in body
    assert "Too many open files" not in body and "## CI triage: Lint" not in body


def test_an_older_attempt_never_replaces_a_newer_one(db_url: str) -> None:  # noqa: F811
    store = Store(db_url)
    try:

        def section(run_id: int, attempt: int, body: str, head: str = "a" * 40) -> Section:
            return Section(REPO, 7, "101", "CI", run_id, attempt, head, body)

        assert store.sections.save(section(1, 2, "attempt 2"))
        assert not store.sections.save(section(1, 1, "attempt 1, late"))
        assert not store.sections.save(section(0, 3, "an older run"))
        assert store.sections.save(section(1, 2, "attempt 2 again"))  # a job run twice
        assert store.sections.save(section(2, 1, "a newer run"))
        [kept] = store.sections.of_head(REPO, 7, "a" * 40)
        assert kept.body == "a newer run"
        assert store.sections.save(section(1, 1, "new head", head="b" * 40))
        assert store.sections.of_head(REPO, 7, "a" * 40) == []
    finally:
        store.close()


def passed(world: World, run: WorkflowRun, attempt: int) -> dict[str, Any]:
    job = {
        "kind": "passed",
        "repo": REPO,
        "installation_id": world.installation.id,
        "run_id": run.id,
        "run_attempt": attempt,
        "head_sha": run.head_sha,
        "workflow_id": run.workflow_id,
        "url": f"https://github.com/{REPO}/actions/runs/{run.id}/attempts/{attempt}",
    }
    return passed_job(job, world.settings, world.store, options=FAST)


def test_a_workflow_that_passes_on_a_rerun_is_said_to_pass(world: World) -> None:
    tests = failed_run(world, names=(THREE[0],))
    lint = failed_run(world, names=(THREE[2],), name="Lint", path=".github/workflows/l.yml")
    triage(world, tests)
    triage(world, lint)
    result = passed(world, tests, attempt=2)
    assert [c["action"] for c in result["comments"]] == ["updated"]
    [body] = world.comments()
    assert "block_regions" not in body and "**Passed** on attempt 2" in body
    assert "Too many open files" in body  # the other workflow still fails
    # A late triage of the failed attempt does not bring the failure back.
    triage(world, tests)
    assert world.comments() == [body]


def test_a_passing_run_no_comment_shows_costs_no_github_call(world: World) -> None:
    run = failed_run(world, names=(THREE[0],))
    before = len(world.fake.state.requests_matching(host=None))
    assert passed(world, run, attempt=1)["action"] == "none"
    assert len(world.fake.state.requests_matching(host=None)) == before


def test_problems_with_the_repositorys_files_are_said_once(world: World) -> None:
    world.fake.state.add_file(world.repo, ".github/triage-bot.yml", "disable: [no-such-id]\n")
    triage(world, failed_run(world, names=(THREE[0],)))
    triage(world, failed_run(world, names=(THREE[2],), name="Lint", path=".github/workflows/l.yml"))
    [body] = world.comments()
    assert "## CI triage: Lint" in body and "## CI triage\n" in body
    assert body.count("Problems with this repository's triage-bot files") == 1
    assert "`.github/triage-bot.yml:1`: disable: no signature has the id 'no-such-id'" in body
