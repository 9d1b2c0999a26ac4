"""End to end: `/triage` comments as GitHub's own signed `issue_comment` webhooks, sent over
HTTP to `triage-bot serve` (embedded, and scaled out with `worker` processes; see
test_e2e.py), answered on the fake GitHub."""

from __future__ import annotations

from typing import Any

from commands.test_commands import comment_webhook
from fakegithub.models import PullRequest
from test_e2e import REPO, Stack, stack

from triage_bot.core.render import COMMENT_MARKER

__all__ = ["stack"]  # fixtures


def comment(stack: Stack, pull: PullRequest, author: str, body: str, **kw: Any) -> dict[str, Any]:
    """GitHub's example comment webhook, for a comment `author` just wrote on `pull`."""
    payload = comment_webhook(None, author, body, **kw)
    payload["repository"].update(id=stack.repo.id, full_name=REPO)
    payload["installation"]["id"] = stack.installation.id
    payload["issue"]["number"] = pull.number
    payload["comment"]["id"] = stack.fake.state.add_comment(
        stack.repo, pull.number, author, body
    ).id
    return payload


def bot_comments(stack: Stack, pull: PullRequest) -> list[str]:
    comments = stack.fake.state.comments_on(stack.repo, pull.number)
    return [c.body for c in comments if c.author.type == "Bot"]


def test_commands_are_answered_and_quotes_edits_and_bots_ignored(stack: Stack) -> None:
    stack.up()
    stack.fake.state.grant(stack.repo, "maya", "write")
    pull, _ = stack.pull_with_failed_run("fix-imports")

    ignored = [
        comment(stack, pull, "maya", "> /triage\n\nWhy did this fail?"),
        comment(stack, pull, "maya", "Try:\n\n```\n/triage retry\n```"),
        comment(stack, pull, "maya", "/triage", action="edited"),
        comment(stack, pull, "triage-bot[bot]", "/triage retry"),
    ]
    for payload in ignored:
        answer = stack.send(payload, event="issue_comment")
        assert answer.status_code == 202 and answer.json()["outcome"] == "ignored", answer.text

    seen = len(bot_comments(stack, pull))  # the bot's own /triage retry, which stays unanswered

    def answers() -> list[str]:
        return bot_comments(stack, pull)[seen:]

    refused = stack.send(comment(stack, pull, "bob", "/triage"), event="issue_comment")
    assert refused.status_code == 202 and refused.json()["outcome"] == "job", refused.text
    stack.wait(lambda: bool(answers()), "the refusal")
    [reply] = answers()
    assert reply.startswith("> `/triage`") and "Not done" in reply and "@" not in reply

    accepted = stack.send(comment(stack, pull, "maya", "/triage"), event="issue_comment")
    assert accepted.status_code == 202 and accepted.json()["outcome"] == "job", accepted.text
    stack.wait(lambda: len(answers()) == 2, "the triage comment")
    reply, sticky = answers()
    assert sticky.startswith(COMMENT_MARKER) and "· 3 failed jobs" in sticky
    assert "`/triage retry`" in sticky  # the footer lists the commands
    # Two jobs in all: the ignored comments queued nothing.
    stack.wait(lambda: stack.store.jobs.counts().get("done") == 2, "both jobs done")
    assert sum(stack.store.jobs.counts().values()) == 2


def reacted(stack: Stack, comment_id: int) -> list[tuple[str, str]]:
    return [(r.user.login, r.content) for r in stack.fake.state.comments[comment_id].reactions]


def test_every_command_is_acknowledged_and_a_triage_that_changes_nothing_says_so(
    stack: Stack,
) -> None:
    stack.up()
    stack.fake.state.grant(stack.repo, "maya", "write")
    pull, run = stack.pull_with_failed_run("flaky-or-not")
    assert stack.send(stack.webhook(run, pull)).status_code == 202
    stack.wait(lambda: stack.triaged(run) and bool(bot_comments(stack, pull)), "the comment")
    [before] = bot_comments(stack, pull)

    # Refused: the reply, as before, and no reaction and no triage.
    refused = comment(stack, pull, "bob", "/triage")
    assert stack.send(refused, event="issue_comment").status_code == 202
    stack.wait(lambda: len(bot_comments(stack, pull)) == 2, "the refusal")
    assert "Not done" in bot_comments(stack, pull)[1]
    assert reacted(stack, refused["comment"]["id"]) == []

    # A writer's /triage that changes nothing: the eyes, then the footer's line.
    logs_before = len(stack.fake.requests(r"/logs$"))
    accepted = comment(stack, pull, "maya", "Is this still failing?\n/triage")
    assert stack.send(accepted, event="issue_comment").status_code == 202
    stack.wait(lambda: "nothing changed" in bot_comments(stack, pull)[0], "the footer line")
    noted = bot_comments(stack, pull)[0]
    assert reacted(stack, accepted["comment"]["id"]) == [("triage-bot[bot]", "eyes")]
    assert len(stack.fake.requests(r"/logs$")) > logs_before  # it did triage again
    [line] = [line for line in noted.splitlines() if "nothing changed" in line]
    assert noted.replace(f"{line}\n\n", "") == before
    assert len(bot_comments(stack, pull)) == 2  # no reply: the comment is the answer

    # GitHub fails the reaction: the command is carried out all the same.
    stack.fake.faults.fail(r"/reactions$", status=500, times=None, method="POST")
    logs_before = len(stack.fake.requests(r"/logs$"))
    failing = comment(stack, pull, "maya", "/triage")
    assert stack.send(failing, event="issue_comment").status_code == 202
    stack.wait(lambda: stack.store.jobs.counts().get("done") == 4, "the fourth job")
    assert [r.status for r in stack.fake.requests(r"/reactions$", method="POST")][-1] == 500
    assert reacted(stack, failing["comment"]["id"]) == []
    assert len(stack.fake.requests(r"/logs$")) > logs_before
    assert "nothing changed" in bot_comments(stack, pull)[0]
