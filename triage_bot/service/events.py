"""Which webhook events become work: pure functions from (event name, payload) to a Decision.

`decide` never raises: a payload with a missing or oddly typed field is refused with a reason
that names the field, because the payload is input from the network and the server must answer
every request with a 2xx or 4xx that says why.

Jobs are JSON-ready dicts (they are stored in the database and carried by the queue):

    {"kind": "triage", "trigger": "workflow_run" | "workflow_job", "repo": "owner/name",
     "installation_id": int | None, "run_id": int, "run_attempt": int, "head_sha": str,
     "head_branch": str | None, "head_repo": "owner/name" | None, "pull_requests": [int, ...],
     "find_pr": bool, "workflow": str | None, "conclusion": str,
     "workflow_job_id": int | None, "workflow_job_name": str | None}

    {"kind": "outdated", "repo": ..., "installation_id": ..., "pr_number": int,
     "before": str, "after": str}

    {"kind": "command", "repo": ..., "installation_id": ..., "pr_number": int,
     "comment_id": int, "author": str, "body": str}   (a `/triage` comment; commands.py)

    {"kind": "passed", "repo": ..., "installation_id": ..., "run_id": int, "run_attempt": int,
     "head_sha": str, "workflow_id": int, "url": str | None}   (a run that succeeded)

`find_pr` is true when GitHub gave no pull request for the run (runs from forks, and every
`workflow_job`): the worker then looks the pull request up by head branch and head SHA.

This module decides the workflow and pull request events; the `/triage` comments are
comment_events.py's, the App's installations installation_events.py's, and the field readers
that refuse a bad payload payload_fields.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from triage_bot.service.comment_events import on_issue_comment
from triage_bot.service.event_decision import Decision
from triage_bot.service.installation_events import on_installation, on_installation_repositories
from triage_bot.service.payload_fields import (
    MAX_INT,
    REPO_NAME,
    Refused,
    describe,
    is_int,
    read_installation_id,
    read_int,
    read_obj,
    read_opt_str,
    read_repo,
    read_str,
)
from triage_bot.triage.run import FAILING_RUN_CONCLUSIONS

# startup_failure is not in the octokit schema's enum but GitHub sends it when a workflow file
# is invalid; it is a failure the contributor needs to hear about.

FAILING_JOB_CONCLUSIONS = frozenset({"failure"})


def decide(event: str, payload: object) -> Decision:
    """What to do with one delivery; never raises."""
    if not isinstance(payload, Mapping):
        return Decision("refused", "the payload is not a JSON object")
    handler = _HANDLERS.get(event)
    if handler is None:
        return Decision("ignored", f"event {event!r} is not one triage-bot acts on")
    try:
        return handler(payload)
    except Refused as refusal:
        return Decision("refused", f"{event}: {refusal}")


def _ping(payload: Mapping[str, Any]) -> Decision:
    zen = payload.get("zen")
    return Decision("pong", zen if isinstance(zen, str) and zen else "pong")


def _workflow_run(payload: Mapping[str, Any]) -> Decision:
    action = read_str(payload, "action")
    if action != "completed":
        return Decision("ignored", f"workflow_run action {action!r} is not 'completed'")
    run = read_obj(payload, "workflow_run")
    conclusion = read_str(run, "conclusion", "workflow_run.conclusion")
    if conclusion == "success":
        return _passed(payload, run)
    if conclusion not in FAILING_RUN_CONCLUSIONS:
        return Decision("ignored", f"workflow_run conclusion {conclusion!r} needs no triage")
    repo = read_repo(payload)
    prs = _pull_request_numbers(run, payload)
    job = _triage_job(payload, run, "workflow_run", repo, conclusion)
    job.update(
        head_repo=_head_repo(run),
        pull_requests=prs,
        find_pr=not prs,
        workflow=read_opt_str(run, "name", "workflow_run.name"),
    )
    return _triage_decision(job, f"run {job['run_id']} of {repo} ended in {conclusion}")


def _workflow_job(payload: Mapping[str, Any]) -> Decision:
    action = read_str(payload, "action")
    if action != "completed":
        return Decision("ignored", f"workflow_job action {action!r} is not 'completed'")
    wjob = read_obj(payload, "workflow_job")
    conclusion = read_opt_str(wjob, "conclusion", "workflow_job.conclusion")
    if conclusion not in FAILING_JOB_CONCLUSIONS:
        return Decision("ignored", f"workflow_job conclusion {conclusion!r} needs no triage")
    repo = read_repo(payload)
    job = _triage_job(payload, wjob, "workflow_job", repo, "failure")
    job.update(
        head_repo=None,
        pull_requests=[],  # the event carries none: the worker finds them by branch and SHA
        find_pr=True,
        workflow=read_opt_str(wjob, "workflow_name", "workflow_job.workflow_name"),
        workflow_job_id=read_int(wjob, "id", "workflow_job.id"),
        workflow_job_name=read_opt_str(wjob, "name", "workflow_job.name"),
    )
    return _triage_decision(job, f"job {job['workflow_job_id']} of run {job['run_id']} failed")


def _triage_job(
    payload: Mapping[str, Any], source: Mapping[str, Any], trigger: str, repo: str, conclusion: str
) -> dict[str, Any]:
    prefix = trigger
    run_id_field = "id" if trigger == "workflow_run" else "run_id"
    attempt = _attempt(source, prefix)
    return {
        "kind": "triage",
        "trigger": trigger,
        "repo": repo,
        "installation_id": read_installation_id(payload),
        "run_id": read_int(source, run_id_field, f"{prefix}.{run_id_field}"),
        "run_attempt": attempt,
        "head_sha": read_str(source, "head_sha", f"{prefix}.head_sha"),
        "head_branch": read_opt_str(source, "head_branch", f"{prefix}.head_branch"),
        "conclusion": conclusion,
        "workflow_job_id": None,
        "workflow_job_name": None,
    }


def _passed(payload: Mapping[str, Any], run: Mapping[str, Any]) -> Decision:
    """A passing run may clear its workflow's failing section of a comment (a re-run that
    passed); the worker looks in the database first, so most of these cost no GitHub call."""
    repo = read_repo(payload)
    job = {
        "kind": "passed",
        "repo": repo,
        "installation_id": read_installation_id(payload),
        "run_id": read_int(run, "id", "workflow_run.id"),
        "run_attempt": _attempt(run, "workflow_run"),
        "head_sha": read_str(run, "head_sha", "workflow_run.head_sha"),
        "workflow_id": read_int(run, "workflow_id", "workflow_run.workflow_id"),
        "url": read_opt_str(run, "html_url", "workflow_run.html_url"),
    }
    return Decision("job", f"run {job['run_id']} of {repo} passed", job=job)


def _attempt(source: Mapping[str, Any], prefix: str) -> int:
    attempt = source.get("run_attempt", 1)  # absent on older GitHub Enterprise Servers
    if not is_int(attempt) or not 1 <= attempt <= MAX_INT:
        raise Refused(f"{prefix}.run_attempt must be a positive integer, got {attempt!r}")
    return attempt


def _triage_decision(job: dict[str, Any], reason: str) -> Decision:
    key = f"triage:{job['repo']}:{job['run_id']}:{job['run_attempt']}:{job['trigger']}"
    return Decision("job", reason, job=job, coalesce_key=key)


def _pull_request(payload: Mapping[str, Any]) -> Decision:
    action = read_str(payload, "action")
    if action != "synchronize":
        return Decision("ignored", f"pull_request action {action!r} changes no comment")
    repo = read_repo(payload)
    number = read_int(payload, "number")
    job = {
        "kind": "outdated",
        "repo": repo,
        "installation_id": read_installation_id(payload),
        "pr_number": number,
        "before": read_str(payload, "before"),
        "after": read_str(payload, "after"),
    }
    return Decision("job", f"{repo}#{number} has a new head commit", job=job)


def _head_repo(run: Mapping[str, Any]) -> str | None:
    head = run.get("head_repository")
    name = head.get("full_name") if isinstance(head, Mapping) else None
    return name if isinstance(name, str) and REPO_NAME.fullmatch(name) else None


def _pull_request_numbers(run: Mapping[str, Any], payload: Mapping[str, Any]) -> list[int]:
    prs = run.get("pull_requests", [])
    if not isinstance(prs, list):
        raise Refused(f"workflow_run.pull_requests must be a list, got {describe(prs)}")
    repo_id = read_obj(payload, "repository").get("id")
    numbers: list[int] = []
    for index, pr in enumerate(prs):
        if not isinstance(pr, Mapping):
            raise Refused(f"workflow_run.pull_requests[{index}] must be an object")
        number = read_int(pr, "number", f"workflow_run.pull_requests[{index}].number")
        # GitHub also lists pull requests of *other* repositories whose head matches (a fork's
        # run lists the upstream's PRs). Commenting with that number here would land on an
        # unrelated PR of this repository, so keep only PRs whose base is this repository.
        if _base_repo_id(pr) in (None, repo_id) and number not in numbers:
            numbers.append(number)
    return numbers


def _base_repo_id(pr: Mapping[str, Any]) -> object:
    base = pr.get("base")
    repo = base.get("repo") if isinstance(base, Mapping) else None
    return repo.get("id") if isinstance(repo, Mapping) else None


_HANDLERS = {
    "ping": _ping,
    "workflow_run": _workflow_run,
    "workflow_job": _workflow_job,
    "pull_request": _pull_request,
    "issue_comment": on_issue_comment,
    "installation": on_installation,
    "installation_repositories": on_installation_repositories,
}
HANDLED_EVENTS = frozenset(_HANDLERS)
