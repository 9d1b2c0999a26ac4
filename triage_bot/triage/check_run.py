"""The `triage-bot` check run: the triage on the run's head commit, with annotations.

One check run per workflow run (its id is the check run's external_id), created on the first
triage and updated on every later one, under a lock in the store so that two triages of the
same run cannot both create it. Its conclusion is `neutral`: the workflow's own checks already
fail; this one explains. Its output is the comment's content; its annotations sit at the
files and lines the evidence names (tracebacks, compiler and linter errors), mapped from the
runner's absolute paths to repository paths and kept only when the file exists at the head
commit. GitHub appends the annotations of every update, so an update sends only the new ones.
Permission needed: checks write.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from triage_bot.core.cache import Lru
from triage_bot.core.render import COMMENT_MARKER, render_comment
from triage_bot.core.report import Report
from triage_bot.core.source_refs import candidates, source_refs
from triage_bot.github_api.github import CheckRun, GitHubClient, WorkflowRun
from triage_bot.store.store import Store

log = logging.getLogger(__name__)

CHECK_NAME = "triage-bot"
MAX_OUTPUT_CHARS = 65_535
ANNOTATIONS_PER_REQUEST = 50  # GitHub's limit
MAX_ANNOTATIONS = 200  # per triage: four requests at most
MAX_LOOKUPS = 40  # files looked up at the head commit per triage
_MESSAGE_CHARS = 2_000
_TITLE_CHARS = 255

# (repo, commit, path) -> whether the file exists there; a commit never changes.
_exists: Lru[tuple[str, str, str], bool] = Lru(4096)


def publish(
    client: GitHubClient,
    store: Store,
    repo: str,
    run: WorkflowRun,
    report: Report,
    *,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Create or update the run's check run; what was done, for the job's summary."""
    repo_name = repo.rsplit("/", 1)[-1]
    annotations = annotations_for(report, repo_name, _lookup(client, repo, run.head_sha))
    capped = max(0, len(annotations) - MAX_ANNOTATIONS)
    output = {"title": _title(report), "summary": _summary(report, capped)}
    if dry_run:
        log.info("dry run: the check run for %s@%s would be:\n%s", repo, run.head_sha, output)
        return {"action": "dry_run", "annotations": len(annotations[:MAX_ANNOTATIONS])}
    with store.lock(f"check-run:{repo}:{run.id}"):
        found = client.find_check_run(repo, run.head_sha, CHECK_NAME, str(run.id))
        sent = _already_sent(found)
        fresh = [a for a in annotations[:MAX_ANNOTATIONS] if _key(a) not in sent]
        step = ANNOTATIONS_PER_REQUEST
        batches = [fresh[start : start + step] for start in range(0, len(fresh), step)] or [[]]
        fields = {"status": "completed", "conclusion": "neutral", "details_url": run.html_url}
        first = {**fields, "output": {**output, "annotations": batches[0]}}
        if found is None:
            body = {"name": CHECK_NAME, "head_sha": run.head_sha, "external_id": str(run.id)}
            check = client.create_check_run(repo, {**body, **first})
        else:
            check = client.update_check_run(found, first)
        for batch in batches[1:]:
            client.update_check_run(check, {"output": {**output, "annotations": batch}})
    action = "created" if found is None else "updated"
    log.info("%s: check run %d %s, %d new annotations", repo, check.id, action, len(fresh))
    return {"id": check.id, "action": action, "annotations": len(fresh)}


def _already_sent(check: CheckRun | None) -> set[tuple[Any, ...]]:
    if check is None or check.output.annotations_count == 0:
        return set()
    return {_key(a.raw_data) for a in check.get_annotations()}


def _key(annotation: dict[str, Any]) -> tuple[Any, ...]:
    return (annotation.get("path"), annotation.get("start_line"), annotation.get("message"))


def _title(report: Report) -> str:
    jobs, known, unknown = len(report.jobs), len(report.groups), len(report.unmatched)
    title = f"{jobs} failed job{'s' if jobs != 1 else ''}: {known} known failure"
    title += "s" if known != 1 else ""
    if unknown:
        title += f", {unknown} job{'s' if unknown != 1 else ''} no signature explains"
    return title


def _summary(report: Report, capped: int) -> str:
    note = (
        f"\n\n_{capped} more annotations not sent: at most {MAX_ANNOTATIONS} per triage._"
        if capped
        else ""
    )
    body = render_comment(report, limit=MAX_OUTPUT_CHARS - len(note) - 1)
    return body.replace(COMMENT_MARKER, "", 1).lstrip("\n") + note


# ---- annotations ----------------------------------------------------------------------------

Exists = Callable[[str], bool]


def _lookup(client: GitHubClient, repo: str, sha: str) -> Exists:
    """Whether a repository path exists at `sha`: cached, and at most MAX_LOOKUPS asked."""
    asked = 0

    def exists(path: str) -> bool:
        nonlocal asked
        known = _exists.get((repo, sha, path))
        if known is not None:
            return known
        if asked >= MAX_LOOKUPS:
            return False
        asked += 1
        found = client.file_exists(repo, path, ref=sha)
        _exists.put((repo, sha, path), found)
        return found

    return exists


def annotations_for(report: Report, repo_name: str, exists: Exists) -> list[dict[str, Any]]:
    """One `failure` annotation per file and line the evidence names, where the file exists
    (`repo_name` helps map absolute paths); the failures in the report's order, each's lines
    in the log's order."""
    annotations: dict[tuple[str, int], dict[str, Any]] = {}
    for text, title, message in _evidence(report):
        for ref in source_refs(text):
            path = next((c for c in candidates(ref.path, repo_name) if exists(c)), None)
            if path is not None and (path, ref.line) not in annotations:
                annotations[(path, ref.line)] = {
                    "path": path,
                    "start_line": ref.line,
                    "end_line": ref.line,
                    "annotation_level": "failure",
                    "title": title[:_TITLE_CHARS],
                    "message": message[:_MESSAGE_CHARS],
                }
    return list(annotations.values())


def _evidence(report: Report) -> Iterator[tuple[str, str, str]]:
    """The log lines to look for file references in, each with what an annotation there
    says: its title and its message."""
    for group in report.groups:
        match, job = group.example, group.jobs[0]
        # The lines the comment shows (a pytest summary line's: its test's `E` lines).
        window = match.evidence
        message = f"{window.text}\n(job {job.name}, line {window.line} of its log)"
        for text in [*window.before, window.text, *window.after]:
            yield text, group.signature.title, message
    for job in report.unmatched:
        for line in job.result.fallback_lines:
            message = f"{line.text}\n(job {job.name}, line {line.line} of its log)"
            yield line.text, "Error line no signature explains", message


def clear_cache() -> None:
    """Forget which files exist where (tests; a process that starts afresh)."""
    _exists.clear()
