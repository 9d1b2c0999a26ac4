"""The `issue_comment` event: a new comment on a pull request that holds a `/triage` command
becomes a "command" job (which lines are commands: commands.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from triage_bot.commands.commands import find_command
from triage_bot.service.event_decision import Decision
from triage_bot.service.payload_fields import (
    Refused,
    is_storable_text,
    read_installation_id,
    read_int,
    read_obj,
    read_repo,
    read_str,
)

MAX_COMMENT_BODY = 65_536  # GitHub's own cap on a comment's body


def on_issue_comment(payload: Mapping[str, Any]) -> Decision:
    action = read_str(payload, "action")
    if action != "created":
        # An edited comment is not run again: editing one's own comment must not re-run jobs.
        return Decision("ignored", f"issue_comment action {action!r}: only new comments count")
    issue = read_obj(payload, "issue")
    if issue.get("pull_request") is None:
        return Decision("ignored", "the comment is on an issue, not a pull request")
    comment = read_obj(payload, "comment")
    author = read_obj(comment, "user", "comment.user")
    login = read_str(author, "login", "comment.user.login")
    if _is_bot(author) or _is_bot(payload.get("sender")):
        return Decision("ignored", f"comments by bots are ignored ({login})")
    body = comment.get("body")
    if not isinstance(body, str) or not is_storable_text(body, MAX_COMMENT_BODY):
        raise Refused(f"comment.body must be text of at most {MAX_COMMENT_BODY} characters")
    command = find_command(body)
    if command is None:
        return Decision("ignored", "the comment holds no /triage command")
    repo, number = read_repo(payload), read_int(issue, "number", "issue.number")
    job = {
        "kind": "command",
        "repo": repo,
        "installation_id": read_installation_id(payload),
        "pr_number": number,
        "comment_id": read_int(comment, "id", "comment.id"),
        "author": login,
        "body": body,
    }
    return Decision("job", f"{repo}#{number}: {command.line!r} by {login}", job=job)


def _is_bot(user: object) -> bool:
    """A GitHub App or other bot account (our own replies included)."""
    if not isinstance(user, Mapping):
        return False
    login = user.get("login")
    return user.get("type") == "Bot" or (isinstance(login, str) and login.endswith("[bot]"))
