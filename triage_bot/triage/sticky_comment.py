"""The pull request's one comment: whether a run may write it, and writing it.

`put_section` stores a run's section and makes the comment show the sections of the head
commit's failing workflows (triage_bot.store.comment_sections), under the store's comment lock;
`passed_job` says in it that a workflow passed on a later run; `outdated_job` flags it when
new commits arrive. The comment is found by its hidden marker and edited only when its body
changes, so each of these can simply run again after a worker died half-way through.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, replace
from typing import Any

from triage_bot.config import Settings
from triage_bot.core.render import COMMENT_MARKER, compose_comment, render_passed_section
from triage_bot.github_api.github import ClientOptions, GitHubClient, client_for_job
from triage_bot.store.comment_sections import Section
from triage_bot.store.store import Store

log = logging.getLogger(__name__)

OUTDATED_NOTE = "> **Outdated**: new commits were pushed"


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
        body = compose_comment([s.body for s in stored], section.problems)
        result = client.upsert_comment(repo, number, body)
        digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
        store.record_comment(repo, number, result.id, digest, section.head_sha)
    log.info("%s#%d: comment %d %s", repo, number, result.id, result.action)
    return {"pr": number, "action": result.action, "id": result.id}


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
