"""The pull request's one comment: whether a run may write it, and writing it.

`put_section` stores a run's section and makes the comment show the sections of the head
commit's failing workflows (triage_bot.store.comment_sections), under the store's comment lock;
`passed_job` says in it that a workflow passed on a later run; `outdated_job` flags it when
new commits arrive. The comment is found by its hidden marker and edited only when its body
changes, so each of these can simply run again after a worker died half-way through.

A `/triage` that leaves the comment as it was says so in the footer, "triaged again at 14:02
UTC: nothing changed" (`note_unchanged`), so the one who asked sees it was done. The line
alone is no change: an automatic triage that finds the same failures leaves it there, and
the next one that changes the comment drops it (compose_comment leaves it out).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from triage_bot.config import Settings
from triage_bot.core.render import COMMENT_MARKER, compose_comment, render_passed_section
from triage_bot.github_api.github import ClientOptions, GitHubClient, client_for_job, same_text
from triage_bot.store.comment_sections import Section
from triage_bot.store.store import Store

log = logging.getLogger(__name__)

OUTDATED_NOTE = "> **Outdated**: new commits were pushed"
# The footer's line of templates/comment.md.j2 for a `/triage` that changed nothing: only its
# time is read back, and the whole body is compared with the template's own rendering.
_UNCHANGED_AT = re.compile(r"^<sub>triaged again at (\d\d:\d\d) UTC: nothing changed</sub>$", re.M)


@dataclass(frozen=True)
class Target:
    """A pull request to comment on, or why not."""

    number: int
    skip: str | None = None  # "stale", "closed": reason not to post
    base_ref: str = ""  # the branch it merges into, for the base-branch comparison


def target_for(client: GitHubClient, repo: str, head_sha: str, number: int) -> Target:
    pull = client.get_pull(repo, number)
    if pull.state != "open":
        return Target(number, "closed")
    if pull.head.sha != head_sha:
        # The pull request has moved on: this run's comment would describe old code, and the
        # run of the new head will (or did) write the comment.
        return Target(number, "stale")
    return Target(number, base_ref=pull.base.ref)


def put_section(client: GitHubClient, store: Store, section: Section) -> dict[str, Any]:
    """Store `section` and make the pull request's comment show it with the head commit's
    other sections, under the comment lock; nothing when the pull request has moved on."""
    repo, number = section.repo, section.pr_number
    with store.comment_lock(repo, number):
        # Looked at again under the lock: a push may have landed while the logs downloaded.
        fresh = target_for(client, repo, section.head_sha, number)
        if fresh.skip:
            return {"pr": number, "action": fresh.skip}
        if not store.sections.save(section):
            return {"pr": number, "action": "superseded"}  # a later run of the workflow
        stored = store.sections.of_head(repo, number, section.head_sha)
        bodies, problems = [s.body for s in stored], section.problems
        body = compose_comment(bodies, problems)
        result = client.upsert_comment(
            repo, number, body, says=lambda shown: says(shown, bodies, problems)
        )
        store.record_comment(repo, number, result.id, _digest(body), section.head_sha)
    log.info("%s#%d: comment %d %s", repo, number, result.id, result.action)
    return {"pr": number, "action": result.action, "id": result.id}


def says(shown: str, sections: Sequence[str], problems: Sequence[str]) -> bool:
    """True when a comment's body `shown` is compose_comment's of `sections` and `problems`,
    with or without the footer's line of a `/triage` that changed nothing."""
    if same_text(shown, compose_comment(sections, problems)):
        return True
    noted = _UNCHANGED_AT.findall(shown.replace("\r\n", "\n"))
    return bool(noted) and same_text(
        shown, compose_comment(sections, problems, retriaged_at=noted[-1])
    )


def note_unchanged(
    client: GitHubClient, store: Store, repo: str, number: int, head_sha: str, at: datetime
) -> dict[str, Any]:
    """Say in the footer of the pull request's comment that a `/triage` at `at` changed
    nothing; nothing when the comment is not (or no longer) the stored sections of `head_sha`
    (a triage or a push got in between, or someone edited it)."""
    with store.comment_lock(repo, number):
        comment = client.find_sticky_comment(repo, number)
        stored = store.sections.of_head(repo, number, head_sha)
        bodies = [s.body for s in stored]
        shown = (comment.body or "") if comment is not None else ""
        problems = _problems_shown(shown, bodies, [s.problems for s in stored])
        if comment is None or problems is None:
            return {"pr": number, "action": "none", "reason": "the comment is not this head's"}
        body = compose_comment(bodies, problems, retriaged_at=f"{at.astimezone(UTC):%H:%M}")
        if not same_text(shown, body):  # a second /triage within the minute: nothing to edit
            client.edit_comment(repo, comment.id, body)
        store.record_comment(repo, number, comment.id, _digest(body), head_sha)
    log.info("%s#%d: comment %d: triaged again, nothing changed", repo, number, comment.id)
    return {"pr": number, "action": "noted", "id": comment.id}


def _problems_shown(
    shown: str, sections: Sequence[str], candidates: Sequence[tuple[str, ...]]
) -> tuple[str, ...] | None:
    """Which of the sections' problem lists the comment `shown` is composed with (the one of
    the section put last: each section keeps its own), or None when it is none of them."""
    if not sections:
        return None
    return next((p for p in dict.fromkeys(candidates) if says(shown, sections, p)), None)


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


# ---- a workflow that passed -----------------------------------------------------------------


def passed_job(
    payload: dict[str, Any],
    settings: Settings,
    store: Store,
    *,
    dry_run: bool = False,
    options: ClientOptions | None = None,
) -> dict[str, Any]:
    """A "passed" job: a run that succeeded replaces its workflow's failing section in the
    comments of its head commit (a re-run that passed); nothing when no comment shows it."""
    repo, head_sha = str(payload["repo"]), str(payload["head_sha"])
    shown = store.sections.of_workflow(repo, head_sha, str(payload["workflow_id"]))
    if not shown:
        return {"action": "none", "reason": "no comment shows this workflow failing"}
    if dry_run:
        return {"action": "dry_run", "prs": [s.pr_number for s in shown]}
    attempt, url = int(payload["run_attempt"]), payload.get("url")
    with client_for_job(settings, payload, options) as client:
        comments = [
            put_section(
                client,
                store,
                replace(
                    section,
                    run_id=int(payload["run_id"]),
                    run_attempt=attempt,
                    body=render_passed_section(section.title, attempt, url),
                ),
            )
            for section in shown
        ]
    return {"action": "passed", "comments": comments}


# ---- outdated comments ----------------------------------------------------------------------


def outdated_job(
    payload: dict[str, Any],
    settings: Settings,
    store: Store,
    *,
    dry_run: bool = False,
    options: ClientOptions | None = None,
) -> dict[str, Any]:
    """A "outdated" job: the pull request got new commits; flag the old head's comment."""
    repo, number = str(payload["repo"]), int(payload["pr_number"])
    before, after = str(payload["before"]), str(payload["after"])
    if not store.mark_comment_outdated(repo, number, before):
        return {"pr": number, "action": "none", "reason": "no comment for the old head"}
    if dry_run:
        return {"pr": number, "action": "dry_run"}
    with client_for_job(settings, payload, options) as client, store.comment_lock(repo, number):
        comment = client.find_sticky_comment(repo, number)
        if comment is None or OUTDATED_NOTE in comment.body:
            return {"pr": number, "action": "unchanged"}
        client.edit_comment(repo, comment.id, with_outdated_note(comment.body, after))
    return {"pr": number, "action": "updated", "id": comment.id}


def with_outdated_note(body: str, after: str) -> str:
    """The body with a note under its marker (the marker must stay first: it finds the comment)."""
    note = f"{OUTDATED_NOTE} (now at `{after[:10]}`); this triage is of an earlier commit.\n\n"
    head, marker, rest = body.partition(COMMENT_MARKER)
    if not marker:
        return note + body
    return f"{head}{marker}\n{note}{rest.lstrip(chr(10))}"
