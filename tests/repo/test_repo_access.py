"""A repository whose files the App may not read, against the fake GitHub over real HTTP: the
triage goes on with the defaults and the comment's footer says what could not be read and
why; GitHub's 5xx still fail the job, for the queue to try again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakegithub import FakeGitHub
from repo_world import (
    FROB_LOG,
    MODULE_NOT_FOUND,
    OWN_SIGNATURE,
    OWN_SIGNATURE_TEXT,
    WIDGETS,
    World,
    example_log,
    make_world,
)

from triage_bot.github_api.github import GitHubStatusError, GitHubUnavailable
from triage_bot.repo.repo_config import CONFIG_PATH
from triage_bot.repo.repo_files import Unreadable

FOOTER = "Problems with this repository's triage-bot files"


@pytest.fixture
def world(fake_github: FakeGitHub, tmp_path: Path) -> Iterator[World]:
    built = make_world(fake_github, f"sqlite:///{tmp_path / 'triage.db'}", tmp_path)
    # A repository that asks for a check run only, disables a built-in signature and adds
    # its own: none of it counts when the App cannot read it.
    built.add_file(WIDGETS, CONFIG_PATH, "report: check-run\ndisable: [python-module-not-found]\n")
    built.add_file(WIDGETS, OWN_SIGNATURE, OWN_SIGNATURE_TEXT)
    yield built
    built.store.close()


def _run_and_triage(world: World) -> dict[str, object]:
    logs = {"check": FROB_LOG, MODULE_NOT_FOUND: example_log(MODULE_NOT_FOUND)}
    return world.triage(WIDGETS, world.failed_run(WIDGETS, logs))


def test_without_the_contents_permission_the_defaults_are_used_and_said(world: World) -> None:
    with world.fake.state.lock:  # an installation that has not accepted `contents: read`
        del world.installation.permissions["contents"]
    result = _run_and_triage(world)
    [body] = world.comments(WIDGETS)  # the default report: a comment
    assert "check_run" not in result
    assert "`python-module-not-found`" in body  # not disabled: the built-in catalog
    assert "widgets-frob-out-of-sync" not in body
    footer = body.split(FOOTER, 1)[1]
    assert (
        "the App cannot read .github/triage-bot.yml (403: grant the Contents: read "
        "permission); the defaults are used"
    ) in footer
    [refused] = world.fake.requests(r"/contents/")  # asked once, then the defaults
    assert refused.status == 403


def test_a_file_refused_after_the_listing_gives_the_defaults_with_githubs_reason(
    world: World,
) -> None:
    world.fake.faults.fail(r"/contents/\.github/triage-bot/patterns/.+\.yml$", status=403)
    _run_and_triage(world)
    [body] = world.comments(WIDGETS)
    assert "`python-module-not-found`" in body and "`widgets-frob-out-of-sync`" not in body
    assert f"the App cannot read {OWN_SIGNATURE} (403: Server Error)" in body


def test_5xx_on_the_contents_still_fail_the_job(world: World) -> None:
    world.fake.faults.fail(r"/contents/", status=502, times=None)
    with pytest.raises(GitHubUnavailable):
        _run_and_triage(world)
    assert world.comments(WIDGETS) == []


def test_the_problem_line_names_the_permission_only_when_github_does() -> None:
    missing = GitHubStatusError("contents", 403, "Resource not accessible by integration")
    saml = GitHubStatusError("contents", 403, "Resource protected by organization SAML")
    assert Unreadable(CONFIG_PATH, missing).problem == (
        f"the App cannot read {CONFIG_PATH} (403: grant the Contents: read permission)"
    )
    assert Unreadable("x.yml", saml).problem == (
        "the App cannot read x.yml (403: Resource protected by organization SAML)"
    )
