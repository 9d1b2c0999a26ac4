"""`/triage` commands: the parsing, the webhook's decision on GitHub's own example payloads,
and the command jobs against the fake GitHub over real HTTP: who may do what, the replies,
the re-runs (the fake records every re-run request), and the automatic retry."""

from __future__ import annotations

import copy
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from fakegithub import NewJob
from fakegithub.models import WorkflowRun
from helpers import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st
from service.test_events import assert_valid, example
from triage.test_pipeline import FAST, THREE, World, example_log, failed_run, triage, world

from triage_bot.commands.commands import Command, find_command, parse_line
from triage_bot.core.render import COMMENT_MARKER
from triage_bot.repo.repo_config import RepoConfig
from triage_bot.service.events import decide
from triage_bot.service.handler import JobContext, handle_job
from triage_bot.triage.pipeline import triage_job

__all__ = ["world"]  # fixtures

WRITER, READER = "maya", "bob"  # the pull request's author is "alice", who can only read
# Two failures a re-run cures (`retry: true`), one it does not, and one no signature knows.
FLAKY = {"npm-install": "network/network-econnreset", "pull-image": "docker/docker-pull-rate-limit"}
BROKEN = "unit-tests-mi350x"
UNKNOWN = "odd-job"


# ---- parsing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("/triage", Command("triage", line="/triage")),
        ("Thanks!\n/triage retry", Command("retry", line="/triage retry")),
        ("/triage explain python-module-not-found", Command("explain", "python-module-not-found")),
        ("  /TRIAGE Help  ", Command("help", line="/TRIAGE Help")),
        ("/triage please", Command("unknown", "please")),
        ("/triage explain", Command("unknown", "explain")),
        ("/triage retry now", Command("unknown", "retry now")),
        ("first\n\n/triage\r\n", Command("triage", line="/triage")),
    ],
)
def test_command_lines(body: str, expected: Command) -> None:
    found = find_command(body)
    assert found is not None
    assert (found.name, found.argument) == (expected.name, expected.argument)
    if expected.line:
        assert found.line == expected.line


@pytest.mark.parametrize(
    "body",
    [
        "> /triage",
        "> I ran\n/triage",  # a lazy continuation line: still inside the quote
        "```\n/triage retry\n```",
        "~~~sh\n/triage retry\n~~~",
        "````\n```\n/triage\n````",
        "    /triage",
        "\t/triage",
        "- /triage",
        "<details>\n/triage\n</details>",
        "/triage\n---",  # a heading, not a paragraph
        "/triaged it",
        "run /triage later",
        "`/triage`",
        "",
    ],
)
def test_quoted_or_code_or_embedded_commands_are_not_commands(body: str) -> None:
    assert find_command(body) is None


_prose = st.text(st.characters(categories=["L", "N", "Zs"]), max_size=40)


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(_prose, max_size=6), verb=st.sampled_from(["", " retry", " help"]))
def test_a_command_after_prose_is_found_and_never_when_quoted_or_fenced(
    lines: list[str], verb: str
) -> None:
    body = "\n".join([*lines, f"/triage{verb}"])
    found = find_command(body)
    assert found is not None and found.line == f"/triage{verb}"
    assert find_command("\n".join(f"> {line}" for line in body.splitlines())) is None
    assert find_command(f"```\n{body}\n```") is None
    assert find_command("\n".join(f"    {line}" for line in body.splitlines())) is None


@settings(max_examples=300, deadline=None)
@given(body=st.text(max_size=300))
def test_any_text_parses_without_error(body: str) -> None:
    found = find_command(body)
    if found is not None:
        assert parse_line(found.line) is not None and len(found.line) <= 208


# ---- the webhook's decision -----------------------------------------------------------------


def comment_webhook(
    world: World | None, author: str, body: str, *, action: str = "created", on_pr: bool = True
) -> dict[str, Any]:
    """GitHub's example `issue_comment` payload, made a comment by `author` on the pull
    request of `world` (or left on its example repository)."""
    name = "edited.payload.json" if action == "edited" else "created.with-installation.payload.json"
    payload = copy.deepcopy(example("issue_comment", name))
    payload["action"] = action  # "deleted" has no example: the created one, renamed
    payload["installation"] = {"id": 1, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
    issue, comment = payload["issue"], payload["comment"]
    if on_pr:
        web = issue["html_url"].replace("/issues/", "/pull/")
        issue["pull_request"] = {
            "url": issue["url"].replace("/issues/", "/pulls/"),
            "html_url": web,
            "diff_url": f"{web}.diff",
            "patch_url": f"{web}.patch",
        }
    comment["body"] = body
    for user in (comment["user"], payload["sender"]):
        user["login"] = author
        user["type"] = "Bot" if author.endswith("[bot]") else "User"
    if world is not None:
        payload["repository"].update(full_name=world.repo.full_name, id=world.repo.id)
        payload["installation"]["id"] = world.installation.id
        issue["number"] = world.pull.number
        made = world.fake.state.add_comment(world.repo, world.pull.number, author, body)
        comment["id"] = made.id
    if action != "deleted":
        assert_valid("issue_comment", payload)
    return payload


def test_a_command_on_a_pull_request_becomes_a_job() -> None:
    decision = decide("issue_comment", comment_webhook(None, "Codertocat", "LGTM\n/triage retry"))
    assert decision.outcome == "job" and decision.job is not None
    assert decision.job == {
        "kind": "command",
        "repo": "Codertocat/Hello-World",
        "installation_id": 1,
        "pr_number": 1,
        "comment_id": 492700400,
        "author": "Codertocat",
        "body": "LGTM\n/triage retry",
    }


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"action": "edited"}, "only new comments count"),
        ({"action": "deleted"}, "only new comments count"),
        ({"on_pr": False}, "not a pull request"),
        ({"author": "triage-bot[bot]"}, "bots are ignored"),
        ({"body": "> /triage"}, "no /triage command"),
        ({"body": "Looks good to me"}, "no /triage command"),
    ],
)
def test_edits_issues_bots_and_plain_comments_are_ignored(
    change: dict[str, Any], reason: str
) -> None:
    options = {"author": "Codertocat", "body": "/triage", **change}
    author, body = options.pop("author"), options.pop("body")
    decision = decide("issue_comment", comment_webhook(None, author, body, **options))
    assert decision.outcome == "ignored" and reason in decision.reason


def test_our_own_reply_is_ignored_even_as_a_user_typed_login() -> None:
    payload = comment_webhook(None, "Codertocat", "/triage")
    payload["sender"]["login"] = payload["comment"]["user"]["login"] = "triage-bot[bot]"
    assert decide("issue_comment", payload).outcome == "ignored"


def test_an_odd_body_is_refused() -> None:
    for body in (None, 7, "a\x00/triage", "x" * 70_000):
        payload = comment_webhook(None, "Codertocat", "/triage")
        payload["comment"]["body"] = body
        decision = decide("issue_comment", payload)
        assert decision.outcome == "refused" and "comment.body" in decision.reason


# ---- command jobs against the fake GitHub ---------------------------------------------------


@pytest.fixture
def roles(world: World) -> World:
    world.fake.state.grant(world.repo, WRITER, "write")
    world.fake.state.grant(world.repo, "mona", "maintain")
    return world


def command(world: World, author: str, body: str, **context: Any) -> dict[str, Any]:
    """A comment by `author` through the webhook's decision and the queue's handler."""
    decision = decide("issue_comment", comment_webhook(world, author, body))
    assert decision.job is not None, decision.reason
    job_context = JobContext(
        job_id=uuid.uuid4().hex,
        attempt=1,
        store=world.store,
        settings=world.settings,
        dry_run=context.pop("dry_run", False),
        lease_lost=threading.Event(),
    )
    result = handle_job(decision.job, job_context, options=FAST)
    assert result is not None
    return result


def bot_comments(world: World) -> list[str]:
    comments = world.fake.state.comments_on(world.repo, world.pull.number)
    return [c.body for c in comments if c.author.type == "Bot"]


def replies(world: World) -> list[str]:
    return [body for body in bot_comments(world) if not body.startswith(COMMENT_MARKER)]


def window(signature: str) -> bytes:
    """A signature's real log window, without its in-band expectations."""
    text = (ROOT / "patterns" / f"{signature}.log").read_text()
    return "\n".join(line for line in text.splitlines() if not line.startswith("#!")).encode()


def mixed_run(world: World, **kw: Any) -> WorkflowRun:
    jobs = [NewJob("lint", conclusion="success")]
    jobs += [NewJob(name, log=window(path)) for name, path in FLAKY.items()]
    jobs += [NewJob(BROKEN, log=example_log(BROKEN)), NewJob(UNKNOWN, log=b"all good here\n")]
    return world.fake.state.add_run(world.repo, pull=world.pull, jobs=jobs, **kw)


def job_ids(world: World, run: WorkflowRun, *names: str) -> set[int]:
    return {job.id for job in world.fake.state.jobs_of(run) if job.name in names}


def reruns(world: World) -> list[tuple[str, int | None]]:
    return [(r.kind, r.job_id) for r in world.fake.state.reruns]


def test_a_writer_re_triages_and_the_comment_is_updated(roles: World) -> None:
    world = roles
    run = failed_run(world)
    triage(world, run)
    [before] = bot_comments(world)
    assert "· 3 failed jobs" in before
    world.fake.state.add_attempt(run, jobs=[NewJob(THREE[0], log=example_log(THREE[0]))])
    result = command(world, WRITER, "Rebased on main.\n/triage")
    assert result["action"] == "triaged" and result["runs"][0]["attempt"] == 2
    [after] = bot_comments(world)  # the same comment, edited; no reply
    assert "· 1 failed job" in after and "block_regions" in after
    assert [c["action"] for c in result["comments"]] == ["updated"]


def test_a_reader_who_is_not_the_author_is_refused_with_a_reply(roles: World) -> None:
    world = roles
    failed_run(world)
    result = command(world, READER, "/triage")
    assert result["action"] == "replied"
    [reply] = bot_comments(world)  # no triage comment: only the refusal
    assert "Not done" in reply and "write access" in reply and "author" in reply
    assert "@" not in reply
    permission = world.fake.requests(rf"/collaborators/{READER}/permission$")
    assert len(permission) == 1  # asked of the API, not read from author_association


def test_the_author_who_can_only_read_may_re_triage(roles: World) -> None:
    world = roles
    failed_run(world)
    result = command(world, "Alice", "/triage")  # logins are case-insensitive
    assert result["action"] == "triaged"
    [body] = bot_comments(world)
    assert body.startswith(COMMENT_MARKER) and "· 3 failed jobs" in body
    assert world.fake.requests(r"/permission$") == []  # the author needs no look-up


def test_nothing_to_triage_is_said(roles: World) -> None:
    world = roles
    world.fake.state.add_run(world.repo, pull=world.pull, conclusion="success")
    command(world, "mona", "/triage")
    [reply] = replies(world)
    assert "nothing to triage" in reply and world.pull.head_sha[:10] in reply


def test_retry_re_runs_only_the_jobs_a_re_run_cures_and_says_why_not_the_others(
    roles: World,
) -> None:
    world = roles
    run = mixed_run(world)
    result = command(world, WRITER, "/triage retry")
    flaky = job_ids(world, run, *FLAKY)
    assert sorted(reruns(world)) == sorted(("job", i) for i in flaky)
    posted = world.fake.requests(r"/actions/jobs/\d+/rerun$", method="POST")
    assert {int(r.path.split("/")[-2]) for r in posted} == flaky
    assert sorted(result["rerun"]) == sorted(flaky)
    [reply] = replies(world)
    done, _, left = reply.partition("Not re-run:")
    assert "Re-ran 2 jobs" in done and "`npm-install`" in done and "`pull-image`" in done
    assert "`network-econnreset`" in done and "`docker-pull-rate-limit`" in done
    assert f"`{BROKEN}`" in left and "`python-unexpected-keyword-argument` is not one" in left
    assert f"`{UNKNOWN}`" in left and "no signature matched" in left


@pytest.mark.parametrize("passing_run_printed_it", [False, True])
def test_retry_leaves_a_cure_line_the_passing_run_also_printed(
    roles: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, passing_run_printed_it: bool
) -> None:
    # A connection reset (a re-run cures it) that the base branch's passing run of the same
    # job also printed is not why this run failed: the error after it is new, so no re-run.
    world = roles
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    reset = window(FLAKY["npm-install"])
    failing = reset + b"\nError: the migration 0042_add_index left the schema at version 41\n"
    if passing_run_printed_it:
        world.fake.state.add_run(
            world.repo, head_sha=world.pull.base_sha, head_branch="main", event="push",
            conclusion="success", pull_requests=[],
            jobs=[NewJob("npm-install", conclusion="success", log=reset)],
        )  # fmt: skip
    jobs = [NewJob("npm-install", log=failing)]
    run = world.fake.state.add_run(world.repo, pull=world.pull, jobs=jobs)
    command(world, WRITER, "/triage retry")
    rerun = reruns(world) != []
    assert rerun is not passing_run_printed_it, reruns(world)
    if rerun:
        assert world.fake.requests(rf"/runs/{run.id}/rerun-failed-jobs$", method="POST")


def test_retry_of_a_run_whose_every_failure_is_flaky_is_one_request(roles: World) -> None:
    world = roles
    jobs = [NewJob(name, log=window(path)) for name, path in FLAKY.items()]
    run = world.fake.state.add_run(world.repo, pull=world.pull, jobs=jobs)
    command(world, "mona", "/triage retry")
    # GitHub refuses a second job's re-run once the first started the run again.
    assert reruns(world) == [("failed_jobs", None)]
    assert world.fake.requests(rf"/runs/{run.id}/rerun-failed-jobs$", method="POST")


def test_retry_by_the_author_who_can_only_read_is_refused(roles: World) -> None:
    world = roles
    mixed_run(world)
    result = command(world, "alice", "/triage retry")
    assert result["action"] == "replied" and reruns(world) == []
    [reply] = replies(world)
    assert "`/triage retry` is refused" in reply and "ask a maintainer" in reply
    assert "@" not in reply


def test_retry_waits_for_a_run_in_progress(roles: World) -> None:
    world = roles
    jobs = [NewJob("npm-install", log=window(FLAKY["npm-install"]))]
    jobs.append(NewJob("slow", status="in_progress", conclusion=None))
    world.fake.state.add_run(
        world.repo, pull=world.pull, status="in_progress", conclusion=None, jobs=jobs
    )
    command(world, WRITER, "/triage retry")
    assert reruns(world) == []
    [reply] = replies(world)
    assert "Nothing was re-run" in reply and "`npm-install`" in reply
    assert "the run is still in progress" in reply


def test_a_command_job_run_twice_answers_once(roles: World) -> None:
    world = roles
    mixed_run(world)
    decision = decide("issue_comment", comment_webhook(world, WRITER, "/triage retry"))
    assert decision.job is not None
    context = JobContext("j", 1, world.store, world.settings, False, threading.Event())
    first = handle_job(decision.job, context, options=FAST)
    again = handle_job(decision.job, context, options=FAST)
    assert first is not None and first["action"] == "replied"
    assert again is not None and again["action"] == "none"
    assert len(replies(world)) == 1 and len(reruns(world)) == 2


def test_explain_replies_with_meaning_fix_and_references(roles: World) -> None:
    world = roles
    command(world, "alice", "/triage explain python-module-not-found")
    [reply] = replies(world)
    assert reply.startswith("> `/triage explain python-module-not-found`")
    assert "### Python module not found (`python-module-not-found`)" in reply
    assert "Category: dependency" in reply and "**Suggested fix**" in reply
    assert "<module>" in reply  # the capture's placeholder where a failure has its value
    assert "https://docs.python.org/3/library/exceptions.html#ModuleNotFoundError" in reply


def test_explain_of_an_unknown_id_names_close_ones(roles: World) -> None:
    world = roles
    command(world, WRITER, "/triage explain python-module-not-fuond")
    command(world, WRITER, "/triage explain @octo-org/everyone")
    close, far = replies(world)
    assert "No signature has the id `python-module-not-fuond`" in close
    assert "Did you mean `python-module-not-found`" in close
    assert "No signature has the id" in far and "Did you mean" not in far
    assert "@octo-org" not in far  # never a mention, even quoting the comment


def test_help_and_unknown_commands_reply_with_the_commands(roles: World) -> None:
    world = roles
    command(world, READER, "/triage help")
    command(world, READER, "/triage make-it-green")
    helped, unknown = replies(world)
    for reply in (helped, unknown):
        assert "`/triage retry`" in reply and "`/triage explain <signature-id>`" in reply
    assert "no command `/triage make-it-green`" in unknown


def test_a_dry_run_posts_nothing(roles: World) -> None:
    world = roles
    mixed_run(world)
    result = command(world, WRITER, "/triage retry", dry_run=True)
    assert result["action"] == "dry_run" and "Re-ran 2 jobs" in result["reply"]
    assert replies(world) == [] and reruns(world) == []


# ---- the automatic retry --------------------------------------------------------------------


def test_auto_retry_happens_once_per_run_even_when_the_triage_runs_twice(roles: World) -> None:
    world = roles
    run = mixed_run(world)
    config = RepoConfig(auto_retry=True)
    job = _triage_payload(world, run)
    first = triage_job(job, world.settings, world.store, options=FAST, config=config)
    second = triage_job(job, world.settings, world.store, options=FAST, config=config)
    flaky = job_ids(world, run, *FLAKY)
    assert sorted(reruns(world)) == sorted(("job", i) for i in flaky)
    assert first["auto_retry"]["action"] == "rerun"
    assert {j["id"] for j in first["auto_retry"]["jobs"] if j["rerun"]} == flaky
    assert second["auto_retry"] == {
        "action": "none",
        "reason": "the run was already re-run automatically once",
    }
    # The next attempt of the same run fails again: still no second automatic re-run.
    world.fake.state.add_attempt(
        run, jobs=[NewJob("npm-install", log=window(FLAKY["npm-install"]))]
    )
    third = triage_job(
        _triage_payload(world, run), world.settings, world.store, options=FAST, config=config
    )
    assert third["auto_retry"]["action"] == "none" and len(reruns(world)) == 2


def test_auto_retry_is_off_by_default_and_never_touches_other_failures(roles: World) -> None:
    world = roles
    run = mixed_run(world)
    assert "auto_retry" not in triage(world, run)
    broken = failed_run(world, (BROKEN,))
    result = triage_job(
        _triage_payload(world, broken),
        world.settings,
        world.store,
        options=FAST,
        config=RepoConfig(auto_retry=True),
    )
    assert result["auto_retry"]["action"] == "none" and reruns(world) == []


def _triage_payload(world: World, run: WorkflowRun) -> dict[str, Any]:
    return {
        "kind": "triage",
        "trigger": "workflow_run",
        "repo": world.repo.full_name,
        "installation_id": world.installation.id,
        "run_id": run.id,
        "run_attempt": run.run_attempt,
        "head_sha": run.head_sha,
        "pull_requests": [world.pull.number],
        "find_pr": False,
    }
