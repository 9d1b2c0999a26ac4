"""`/triage explain` and `/triage retry` with the repository's own catalog, against the fake
GitHub over real HTTP: its signatures are explained and honoured, the ones its config
disables are neither."""

from __future__ import annotations

import pytest
from commands.test_commands import (
    BROKEN,
    FLAKY,
    WRITER,
    command,
    job_ids,
    replies,
    reruns,
    roles,
    window,
)
from fakegithub import NewJob
from repo_world import FROB_LOG, OWN_SIGNATURE, OWN_SIGNATURE_TEXT
from triage.test_pipeline import World, example_log, world

from triage_bot.repo import repo_config
from triage_bot.repo.repo_config import CONFIG_PATH

__all__ = ["roles", "world"]  # fixtures

# The repository's signature, marked as one a re-run cures.
FLAKY_FROB = OWN_SIGNATURE_TEXT.replace("priority: 70\n", "priority: 70\nretry: true\n")


@pytest.fixture
def repo_roles(roles: World) -> World:
    repo_config.clear_caches()  # the fake's blob SHAs repeat from test to test
    return roles


def add_file(world: World, path: str, text: str) -> None:
    world.fake.state.add_file(world.repo, path, text)


def test_explain_answers_with_the_repositorys_own_signature(repo_roles: World) -> None:
    world = repo_roles
    add_file(world, OWN_SIGNATURE, OWN_SIGNATURE_TEXT)
    command(world, "alice", "/triage explain widgets-frob-out-of-sync")
    [reply] = replies(world)
    assert "### Frobnicator out of sync (`widgets-frob-out-of-sync`)" in reply
    assert "frobnicator `<name>` is out of sync" in reply  # its summary, with a placeholder
    assert "Run `make frob-sync` and commit what it changes." in reply
    assert f"this repository's own: `{OWN_SIGNATURE}`" in reply


def test_explain_of_a_disabled_signature_says_it_is_disabled(repo_roles: World) -> None:
    world = repo_roles
    add_file(world, CONFIG_PATH, "disable: [python-module-not-found]\n")
    command(world, WRITER, "/triage explain python-module-not-found")
    command(world, WRITER, "/triage explain python-unexpected-keyword-argument")
    disabled, other = replies(world)
    assert "`python-module-not-found` is disabled in this repository" in disabled
    assert CONFIG_PATH in disabled and "Suggested fix" not in disabled
    assert "Suggested fix" in other  # the rest of the built-in catalog still answers


def test_retry_honours_the_repositorys_signatures_and_its_disabled_ones(
    repo_roles: World,
) -> None:
    world = repo_roles
    add_file(world, OWN_SIGNATURE, FLAKY_FROB)
    # A re-run cures network-econnreset, but this repository does not use that signature.
    add_file(world, CONFIG_PATH, "disable: [network-econnreset]\n")
    jobs = [
        NewJob("check", log=FROB_LOG),
        NewJob("npm-install", log=window(FLAKY["npm-install"])),
        NewJob(BROKEN, log=example_log(BROKEN)),
    ]
    run = world.fake.state.add_run(world.repo, pull=world.pull, jobs=jobs)
    result = command(world, WRITER, "/triage retry")
    [check] = job_ids(world, run, "check")
    assert reruns(world) == [("job", check)] and result["rerun"] == [check]
    [reply] = replies(world)
    done, _, left = reply.partition("Not re-run:")
    assert "Re-ran 1 job" in done and "`check`" in done and "`widgets-frob-out-of-sync`" in done
    assert "`npm-install`" in left and "network-econnreset" not in reply
