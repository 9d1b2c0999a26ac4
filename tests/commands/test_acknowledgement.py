"""Commands are always acknowledged (issue #12, item 4), against the fake GitHub over real
HTTP: an accepted command's eyes reaction comes before its work, a refused one gets its reply
and nothing else, a reaction GitHub refuses or fails stops nothing, and a `/triage` that
changes nothing says so in the comment's footer (and only then)."""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from typing import Any

import pytest
from fakegithub import NewJob
from triage.test_pipeline import FAST, THREE, World, example_log, failed_run, triage, world

from commands.test_commands import bot_comments, comment_webhook, replies, roles
from triage_bot.core.render import COMMENT_MARKER, compose_comment
from triage_bot.github_api.github import client_for_job
from triage_bot.service.events import decide
from triage_bot.service.handler import JobContext, handle_job
from triage_bot.triage.sticky_comment import note_unchanged, says

__all__ = ["roles", "world"]  # fixtures

WRITER, READER = "maya", "bob"  # roles: maya writes; alice (the author) and bob only read
NOTHING_CHANGED = "UTC: nothing changed</sub>"


def command(world: World, author: str, body: str) -> tuple[dict[str, Any], int]:
    """A comment by `author` through the webhook's decision and the queue's handler: the
    job's result and the comment's id."""
    decision = decide("issue_comment", comment_webhook(world, author, body))
    assert decision.job is not None, decision.reason
    context = JobContext(uuid.uuid4().hex, 1, world.store, world.settings, False, threading.Event())
    result = handle_job(decision.job, context, options=FAST)
    assert result is not None
    return result, int(decision.job["comment_id"])


def reactions(world: World, comment_id: int) -> list[tuple[str, str]]:
    return [(r.user.login, r.content) for r in world.fake.state.comments[comment_id].reactions]


def sticky(world: World) -> str:
    [body] = [b for b in bot_comments(world) if b.startswith(COMMENT_MARKER)]
    return body


def edits(world: World) -> int:
    return len(world.fake.requests(r"/issues/comments/\d+$", method="PATCH"))


def minutes_between(start: dt.datetime, end: dt.datetime) -> set[str]:
    """Every "HH:MM" a clock read between `start` and `end` may show."""
    shown, at = set(), start.replace(second=0, microsecond=0)
    while at <= end:
        shown.add(f"{at:%H:%M}")
        at += dt.timedelta(minutes=1)
    return shown


def test_a_writers_triage_that_changes_nothing_gets_eyes_and_the_footer_line(
    roles: World,
) -> None:
    world = roles
    run = failed_run(world)
    triage(world, run)
    before, edits_before = sticky(world), edits(world)
    assert NOTHING_CHANGED not in before

    started = dt.datetime.now(dt.UTC)
    result, comment_id = command(world, WRITER, "Flaky? Let's see.\n/triage")
    ended = dt.datetime.now(dt.UTC)

    assert result["acknowledged"] is True and result["noted"]["action"] == "noted"
    assert reactions(world, comment_id) == [("triage-bot[bot]", "eyes")]
    after = sticky(world)
    assert edits(world) == edits_before + 1  # one edit: the footer line
    assert replies(world) == []  # the comment is the answer
    [line] = [line for line in after.splitlines() if NOTHING_CHANGED in line]
    assert line.startswith("<sub>triaged again at ")
    assert line.split(" at ")[1][:5] in minutes_between(started, ended)
    # Just above the commands, and the rest of the comment as it was.
    lines = after.splitlines()
    assert lines[lines.index(line) + 2].startswith("<sub>Commands")
    assert after.replace(f"{line}\n\n", "") == before


def test_the_reaction_comes_before_the_triage_and_once_per_command(roles: World) -> None:
    world = roles
    failed_run(world)
    _, comment_id = command(world, WRITER, "/triage")
    asked = [(r.method, r.path) for r in world.fake.state.requests if r.host == "api"]
    react = asked.index(
        ("POST", f"/repos/{world.repo.full_name}/issues/comments/{comment_id}/reactions")
    )
    first_log = next(i for i, (_, path) in enumerate(asked) if path.endswith("/logs"))
    assert react < first_log
    # The job run again (a worker died after the reaction): GitHub keeps one reaction.
    decision = decide("issue_comment", comment_webhook(world, WRITER, "/triage"))
    assert decision.job is not None
    job = {**decision.job, "comment_id": comment_id}
    context = JobContext("again", 2, world.store, world.settings, False, threading.Event())
    handle_job(job, context, options=FAST)
    assert reactions(world, comment_id) == [("triage-bot[bot]", "eyes")]


def test_an_automatic_triage_keeps_the_line_and_a_changing_one_drops_it(roles: World) -> None:
    world = roles
    run = failed_run(world)
    triage(world, run)
    command(world, WRITER, "/triage")
    noted, edits_noted = sticky(world), edits(world)
    assert NOTHING_CHANGED in noted

    again = triage(world, run)  # the webhook redelivered: the same failures
    assert [c["action"] for c in again["comments"]] == ["unchanged"]
    assert edits(world) == edits_noted and sticky(world) == noted

    world.fake.state.add_attempt(run, jobs=[NewJob(THREE[0], log=example_log(THREE[0]))])
    changed = triage(world, world.fake.state.runs[run.id])
    assert [c["action"] for c in changed["comments"]] == ["updated"]
    assert NOTHING_CHANGED not in sticky(world) and "· 1 failed job" in sticky(world)


def test_a_triage_command_that_changes_the_comment_has_no_line(roles: World) -> None:
    world = roles
    run = failed_run(world)
    triage(world, run)
    world.fake.state.add_attempt(run, jobs=[NewJob(THREE[0], log=example_log(THREE[0]))])
    result, comment_id = command(world, WRITER, "/triage")
    assert [c["action"] for c in result["comments"]] == ["updated"] and "noted" not in result
    assert NOTHING_CHANGED not in sticky(world)
    assert reactions(world, comment_id) == [("triage-bot[bot]", "eyes")]


def test_a_refused_command_gets_its_reply_and_no_reaction_and_no_triage(roles: World) -> None:
    world = roles
    failed_run(world)
    result, comment_id = command(world, READER, "/triage")
    assert result["action"] == "replied" and "acknowledged" not in result
    [reply] = bot_comments(world)  # no triage comment
    assert "Not done" in reply
    assert reactions(world, comment_id) == []
    assert world.fake.requests(r"/logs$") == []


@pytest.mark.parametrize(("status", "fault"), [(500, "fail"), (403, "forbid")])
def test_a_reaction_github_refuses_or_fails_still_runs_the_triage(
    roles: World, status: int, fault: str
) -> None:
    world = roles
    failed_run(world)
    path = r"/issues/comments/\d+/reactions$"
    if fault == "fail":
        world.fake.faults.fail(path, status=status, times=None, method="POST")
    else:
        world.fake.faults.forbid(path, times=None, method="POST")
    result, comment_id = command(world, WRITER, "/triage")
    assert result["acknowledged"] is False and result["action"] == "triaged"
    assert world.fake.requests(path, method="POST")[0].status == status
    assert reactions(world, comment_id) == []
    assert "· 3 failed jobs" in sticky(world)


def test_help_is_acknowledged_and_an_unknown_command_only_answered(roles: World) -> None:
    world = roles
    helped, help_id = command(world, READER, "/triage help")
    unknown, unknown_id = command(world, READER, "/triage make-it-green")
    assert helped["acknowledged"] is True and unknown["acknowledged"] is False
    assert reactions(world, help_id) == [("triage-bot[bot]", "eyes")]
    assert reactions(world, unknown_id) == []
    assert len(replies(world)) == 2


# ---- what counts as "the same comment" --------------------------------------------------------


SECTIONS = ["## CI\n\n**2 failed jobs**\n", "## Lint\n\n**1 failed job**\n"]


def test_the_line_alone_is_no_change_but_anything_else_is() -> None:
    plain = compose_comment(SECTIONS)
    noted = compose_comment(SECTIONS, retriaged_at="09:41")
    assert says(plain, SECTIONS, ()) and says(noted, SECTIONS, ())
    assert says(noted.replace("\n", "\r\n"), SECTIONS, ())  # a browser edit's line ends
    assert not says(noted.replace("**2 failed", "**3 failed"), SECTIONS, ())
    assert not says(noted, SECTIONS[:1], ())
    assert not says(plain, SECTIONS, ("x.yml:1: bad",))
    # The line only counts where the template puts it, in the form it gives.
    moved = noted.replace("<sub>triaged again at 09:41 UTC: nothing changed</sub>\n\n", "")
    assert says(moved, SECTIONS, ())  # that is simply the plain comment
    elsewhere = plain.replace(
        "## Lint", "<sub>triaged again at 09:41 UTC: nothing changed</sub>\n\n## Lint"
    )
    assert not says(elsewhere, SECTIONS, ())
    assert not says(noted.replace("09:41", "9:41"), SECTIONS, ())


def _note(world: World, at: dt.datetime) -> dict[str, Any]:
    job = {"repo": world.repo.full_name, "installation_id": world.installation.id}
    with client_for_job(world.settings, job, FAST) as client:
        return note_unchanged(
            client, world.store, world.repo.full_name, world.pull.number, world.pull.head_sha, at
        )


def test_the_line_says_the_time_in_utc(roles: World) -> None:
    world = roles
    triage(world, failed_run(world))
    paris_winter = dt.timezone(dt.timedelta(hours=1))
    assert _note(world, dt.datetime(2026, 12, 4, 15, 2, tzinfo=paris_winter))["action"] == "noted"
    assert "<sub>triaged again at 14:02 UTC: nothing changed</sub>" in sticky(world)


def test_a_comment_changed_meanwhile_gets_no_line(roles: World) -> None:
    world = roles
    triage(world, failed_run(world))
    [made] = [
        c
        for c in world.fake.state.comments_on(world.repo, world.pull.number)
        if c.author.type == "Bot"
    ]
    made.body += "\nEdited by hand."
    edits_before = edits(world)
    result = _note(world, dt.datetime.now(dt.UTC))
    assert result["action"] == "none" and edits(world) == edits_before
    assert sticky(world).endswith("Edited by hand.")
