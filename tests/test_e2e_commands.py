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
