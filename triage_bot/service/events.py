"""Which webhook deliveries become work: pure functions from (event name, payload) to a Decision
(acted on by server.py): a job to queue, an installation change to record, or why not.

`decide` never raises: a payload with a missing or oddly typed field is refused with a reason
that names the field, because the payload is input from the network and the server must answer
every request with a 2xx or 4xx that says why. The field readers at the end of this module
return a field's value when it has the expected type and fits any database column (64-bit
integers; text with no NUL character and no unpaired surrogate, which PostgreSQL refuses), and
otherwise raise Refused, which `decide` turns into a "refused" decision.

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

The App's installation events (`installation`, `installation_repositories`) say which accounts
and repositories the App is installed on: they become InstallationChanges for the store.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from triage_bot.commands.commands import find_command
from triage_bot.store.store import InstallationChange
from triage_bot.triage.run import FAILING_RUN_CONCLUSIONS

# startup_failure is not in the octokit schema's enum but GitHub sends it when a workflow file
# is invalid; it is a failure the contributor needs to hear about.

FAILING_JOB_CONCLUSIONS = frozenset({"failure"})
MAX_COMMENT_BODY = 65_536  # GitHub's own cap on a comment's body

# Bounds that keep every value storable: database integers are 64-bit and PostgreSQL refuses
# NUL characters and unpaired surrogates in text, so such values are refused here, not there.
MAX_INT = 2**63 - 1
MAX_TEXT = 1000

# GitHub's own rules: owner up to 39 characters, name up to 100, of letters, digits, - _ .
REPO_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")

Outcome = Literal["job", "record", "pong", "ignored", "refused"]


@dataclass(frozen=True)
class Decision:
    """What one delivery comes to, with the job or installation change it carries."""

    outcome: Outcome
    reason: str
    job: dict[str, Any] | None = None
    # Jobs with one key that are still waiting in the queue are merged: when twenty matrix
    # jobs of one run fail, one early triage that has not started yet covers them all.
    coalesce_key: str | None = None
    installation: InstallationChange | None = None


class Refused(Exception):
    """A field is missing or unfit; the message names it."""


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


# -- workflow runs, workflow jobs and pull requests


def _workflow_run(payload: Mapping[str, Any]) -> Decision:
    action = _read_str(payload, "action")
    if action != "completed":
        return Decision("ignored", f"workflow_run action {action!r} is not 'completed'")
    run = _read_obj(payload, "workflow_run")
    conclusion = _read_str(run, "conclusion", "workflow_run.conclusion")
    if conclusion == "success":
        return _passed(payload, run)
    if conclusion not in FAILING_RUN_CONCLUSIONS:
        return Decision("ignored", f"workflow_run conclusion {conclusion!r} needs no triage")
    repo = _read_repo(payload)
    prs = _pull_request_numbers(run, payload)
    job = _triage_job(payload, run, "workflow_run", repo, conclusion)
    job.update(
        head_repo=_head_repo(run),
        pull_requests=prs,
        find_pr=not prs,
        workflow=_read_opt_str(run, "name", "workflow_run.name"),
    )
    return _triage_decision(job, f"run {job['run_id']} of {repo} ended in {conclusion}")


def _workflow_job(payload: Mapping[str, Any]) -> Decision:
    action = _read_str(payload, "action")
    if action != "completed":
        return Decision("ignored", f"workflow_job action {action!r} is not 'completed'")
    wjob = _read_obj(payload, "workflow_job")
    conclusion = _read_opt_str(wjob, "conclusion", "workflow_job.conclusion")
    if conclusion not in FAILING_JOB_CONCLUSIONS:
        return Decision("ignored", f"workflow_job conclusion {conclusion!r} needs no triage")
    repo = _read_repo(payload)
    job = _triage_job(payload, wjob, "workflow_job", repo, "failure")
    job.update(
        head_repo=None,
        pull_requests=[],  # the event carries none: the worker finds them by branch and SHA
        find_pr=True,
        workflow=_read_opt_str(wjob, "workflow_name", "workflow_job.workflow_name"),
        workflow_job_id=_read_int(wjob, "id", "workflow_job.id"),
        workflow_job_name=_read_opt_str(wjob, "name", "workflow_job.name"),
    )
    return _triage_decision(job, f"job {job['workflow_job_id']} of run {job['run_id']} failed")


def _triage_job(
    payload: Mapping[str, Any], source: Mapping[str, Any], trigger: str, repo: str, conclusion: str
) -> dict[str, Any]:
    run_id_field = "id" if trigger == "workflow_run" else "run_id"
    attempt = _attempt(source, trigger)
    return {
        "kind": "triage",
        "trigger": trigger,
        "repo": repo,
        "installation_id": _read_installation_id(payload),
        "run_id": _read_int(source, run_id_field, f"{trigger}.{run_id_field}"),
        "run_attempt": attempt,
        "head_sha": _read_str(source, "head_sha", f"{trigger}.head_sha"),
        "head_branch": _read_opt_str(source, "head_branch", f"{trigger}.head_branch"),
        "conclusion": conclusion,
        "workflow_job_id": None,
        "workflow_job_name": None,
    }


def _passed(payload: Mapping[str, Any], run: Mapping[str, Any]) -> Decision:
    """A passing run may clear its workflow's failing section of a comment (a re-run that
    passed); the worker looks in the database first, so most of these cost no GitHub call."""
    repo = _read_repo(payload)
    job = {
        "kind": "passed",
        "repo": repo,
        "installation_id": _read_installation_id(payload),
        "run_id": _read_int(run, "id", "workflow_run.id"),
        "run_attempt": _attempt(run, "workflow_run"),
        "head_sha": _read_str(run, "head_sha", "workflow_run.head_sha"),
        "workflow_id": _read_int(run, "workflow_id", "workflow_run.workflow_id"),
        "url": _read_opt_str(run, "html_url", "workflow_run.html_url"),
    }
    return Decision("job", f"run {job['run_id']} of {repo} passed", job=job)


def _attempt(source: Mapping[str, Any], prefix: str) -> int:
    attempt = source.get("run_attempt", 1)  # absent on older GitHub Enterprise Servers
    if not _is_int(attempt) or not 1 <= attempt <= MAX_INT:
        raise Refused(f"{prefix}.run_attempt must be a positive integer, got {attempt!r}")
    return attempt


def _triage_decision(job: dict[str, Any], reason: str) -> Decision:
    key = f"triage:{job['repo']}:{job['run_id']}:{job['run_attempt']}:{job['trigger']}"
    return Decision("job", reason, job=job, coalesce_key=key)


def _pull_request(payload: Mapping[str, Any]) -> Decision:
    action = _read_str(payload, "action")
    if action != "synchronize":
        return Decision("ignored", f"pull_request action {action!r} changes no comment")
    repo = _read_repo(payload)
    number = _read_int(payload, "number")
    job = {
        "kind": "outdated",
        "repo": repo,
        "installation_id": _read_installation_id(payload),
        "pr_number": number,
        "before": _read_str(payload, "before"),
        "after": _read_str(payload, "after"),
    }
    return Decision("job", f"{repo}#{number} has a new head commit", job=job)


def _head_repo(run: Mapping[str, Any]) -> str | None:
    head = run.get("head_repository")
    name = head.get("full_name") if isinstance(head, Mapping) else None
    return name if isinstance(name, str) and REPO_NAME.fullmatch(name) else None


def _pull_request_numbers(run: Mapping[str, Any], payload: Mapping[str, Any]) -> list[int]:
    prs = run.get("pull_requests", [])
    if not isinstance(prs, list):
        raise Refused(f"workflow_run.pull_requests must be a list, got {_describe(prs)}")
    repo_id = _read_obj(payload, "repository").get("id")
    numbers: list[int] = []
    for index, pr in enumerate(prs):
        if not isinstance(pr, Mapping):
            raise Refused(f"workflow_run.pull_requests[{index}] must be an object")
        number = _read_int(pr, "number", f"workflow_run.pull_requests[{index}].number")
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


# -- `/triage` comments: a new comment on a pull request that holds a `/triage` command
# becomes a "command" job (which lines are commands: commands.py).


def _issue_comment(payload: Mapping[str, Any]) -> Decision:
    action = _read_str(payload, "action")
    if action != "created":
        # An edited comment is not run again: editing one's own comment must not re-run jobs.
        return Decision("ignored", f"issue_comment action {action!r}: only new comments count")
    issue = _read_obj(payload, "issue")
    if issue.get("pull_request") is None:
        return Decision("ignored", "the comment is on an issue, not a pull request")
    comment = _read_obj(payload, "comment")
    author = _read_obj(comment, "user", "comment.user")
    login = _read_str(author, "login", "comment.user.login")
    if _is_bot(author) or _is_bot(payload.get("sender")):
        return Decision("ignored", f"comments by bots are ignored ({login})")
    body = comment.get("body")
    if not isinstance(body, str) or not is_storable_text(body, MAX_COMMENT_BODY):
        raise Refused(f"comment.body must be text of at most {MAX_COMMENT_BODY} characters")
    command = find_command(body)
    if command is None:
        return Decision("ignored", "the comment holds no /triage command")
    repo, number = _read_repo(payload), _read_int(issue, "number", "issue.number")
    job = {
        "kind": "command",
        "repo": repo,
        "installation_id": _read_installation_id(payload),
        "pr_number": number,
        "comment_id": _read_int(comment, "id", "comment.id"),
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


# -- the App's installations


def _installation(payload: Mapping[str, Any]) -> Decision:
    action = _read_str(payload, "action")
    inst = _read_obj(payload, "installation")
    inst_id = _read_int(inst, "id", "installation.id")
    if action == "deleted":
        change = InstallationChange("delete", inst_id)
        return Decision("record", f"installation {inst_id} deleted", installation=change)
    if action not in ("created", "new_permissions_accepted", "suspend", "unsuspend"):
        return Decision("ignored", f"installation action {action!r} changes nothing we keep")
    repos = payload.get("repositories")
    change = InstallationChange(
        "upsert",
        inst_id,
        account=_account(inst),
        # suspend/unsuspend carry no repository list: keep the one we have
        repos=_repo_names(repos, "repositories") if repos is not None else (),
        repository_selection=_read_opt_str(
            inst, "repository_selection", "installation.repository_selection"
        ),
        suspended=_suspended(action, inst),
    )
    return Decision("record", f"installation {inst_id} {action}", installation=change)


def _installation_repositories(payload: Mapping[str, Any]) -> Decision:
    action = _read_str(payload, "action")
    if action not in ("added", "removed"):
        return Decision("ignored", f"installation_repositories action {action!r} is unknown")
    inst = _read_obj(payload, "installation")
    field = f"repositories_{action}"
    change = InstallationChange(
        "add_repos" if action == "added" else "remove_repos",
        _read_int(inst, "id", "installation.id"),
        account=_account(inst),
        repos=_repo_names(payload.get(field), field),
        repository_selection=_read_opt_str(payload, "repository_selection"),
    )
    reason = f"installation {change.installation_id}: {len(change.repos)} repositories {action}"
    return Decision("record", reason, installation=change)


def _suspended(action: str, inst: Mapping[str, Any]) -> bool:
    if action in ("suspend", "unsuspend"):
        return action == "suspend"
    return inst.get("suspended_at") is not None


def _account(inst: Mapping[str, Any]) -> str | None:
    account = inst.get("account")
    if isinstance(account, Mapping):
        login = account.get("login") or account.get("slug")  # enterprises have a slug
        return login if isinstance(login, str) and is_storable_text(login, 255) else None
    return None


def _repo_names(value: object, field: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise Refused(f"{field} must be a list, got {_describe(value)}")
    names = []
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise Refused(f"{field}[{index}] must be an object, got {_describe(item)}")
        names.append(_read_full_name(item, f"{field}[{index}].full_name"))
    return tuple(names)


# -- reading fields: typed, bounded, or refused with the field's name


def _read_repo(payload: Mapping[str, Any]) -> str:
    return _read_full_name(_read_obj(payload, "repository"), "repository.full_name")


def _read_full_name(obj: Mapping[str, Any], field: str) -> str:
    name = obj.get("full_name")
    if not isinstance(name, str) or not REPO_NAME.fullmatch(name):
        raise Refused(f"{field} must be 'owner/name', got {_describe(name)}")
    return name


def _read_installation_id(payload: Mapping[str, Any]) -> int | None:
    inst = payload.get("installation")
    if inst is None:
        return None  # webhooks of a repository hook carry none; the worker looks it up
    if not isinstance(inst, Mapping):
        raise Refused(f"installation must be an object, got {_describe(inst)}")
    return _read_int(inst, "id", "installation.id")


def _read_obj(parent: Mapping[str, Any], key: str, field: str | None = None) -> Mapping[str, Any]:
    value = parent.get(key)
    if not isinstance(value, Mapping):
        raise Refused(f"{field or key} must be an object, got {_describe(value)}")
    return value


def _read_str(parent: Mapping[str, Any], key: str, field: str | None = None) -> str:
    value = parent.get(key)
    if not isinstance(value, str) or not value:
        raise Refused(f"{field or key} must be a non-empty string, got {_describe(value)}")
    return _checked_text(value, field or key)


def _read_opt_str(parent: Mapping[str, Any], key: str, field: str | None = None) -> str | None:
    value = parent.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise Refused(f"{field or key} must be a string or null, got {_describe(value)}")
    return _checked_text(value, field or key)


def _checked_text(value: str, field: str) -> str:
    if not is_storable_text(value):
        raise Refused(f"{field} must be printable text of at most {MAX_TEXT} characters")
    return value


def is_storable_text(value: str, limit: int = MAX_TEXT) -> bool:
    """True when `value` can go into any text column: bounded, no NUL, valid UTF-8."""
    if len(value) > limit or "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # an unpaired surrogate from a JSON "\\ud800" escape
        return False
    return True


def _read_int(parent: Mapping[str, Any], key: str, field: str | None = None) -> int:
    value = parent.get(key)
    if not _is_int(value) or not 0 <= value <= MAX_INT:
        raise Refused(f"{field or key} must be a non-negative integer, got {_describe(value)}")
    return value


def _is_int(value: object) -> TypeGuard[int]:
    # JSON true/false decode to bool, a subclass of int: never an id.
    return isinstance(value, int) and not isinstance(value, bool)


def _describe(value: object) -> str:
    """A short, safe description of a bad value for a refusal's reason."""
    if value is None:
        return "nothing"
    if isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, str):
        return repr(value[:40])
    return type(value).__name__


_HANDLERS = {
    "ping": _ping,
    "workflow_run": _workflow_run,
    "workflow_job": _workflow_job,
    "pull_request": _pull_request,
    "issue_comment": _issue_comment,
    "installation": _installation,
    "installation_repositories": _installation_repositories,
}
HANDLED_EVENTS = frozenset(_HANDLERS)
