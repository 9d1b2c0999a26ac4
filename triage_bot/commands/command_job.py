"""The "command" job: a `/triage` comment, checked against who wrote it, carried out, answered.

Who may do what; the permission is looked up through the API, never read from the payload's
`author_association`:
- `/triage` and `/triage explain ID`: write, maintain or admin access, or the pull request's
  author;
- `/triage retry`: write, maintain or admin access only (it spends the repository's CI time);
- `/triage help`, and an unknown command (answered with the help): anyone.

`/triage` answers by updating the sticky comment, through the same `triage_job` as the
webhook, and replies only when there is nothing to triage. Every other answer is a reply
comment, posted at most once per command: the command is claimed in the store before its
first write (a re-run or the reply), so a job run again after a crash never answers twice.

`explain` and `retry` use the repository's catalog (repo_config.py): its own signatures too,
less the ones its config disables, as its triage does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from triage_bot.commands import command_replies as replies
from triage_bot.commands.commands import Command, find_command
from triage_bot.config import Settings
from triage_bot.core.classify import CompiledCatalog
from triage_bot.github_api.github import (
    ClientOptions,
    GitHubClient,
    PullRequest,
    RunJobs,
    WorkflowRun,
    client_for_job,
)
from triage_bot.repo.repo_config import repo_setup
from triage_bot.store.store import Store
from triage_bot.triage import pipeline
from triage_bot.triage.retry import Verdict, plan, rerun, still_running
from triage_bot.triage.run import FAILING_RUN_CONCLUSIONS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Call:
    """One command being carried out, and everything its steps need."""

    command: Command
    payload: dict[str, Any]
    pull: PullRequest
    client: GitHubClient
    settings: Settings
    store: Store
    dry_run: bool
    options: ClientOptions | None

    @property
    def repo(self) -> str:
        return str(self.payload["repo"])


def command_job(
    payload: dict[str, Any],
    settings: Settings,
    store: Store,
    *,
    dry_run: bool = False,
    options: ClientOptions | None = None,
) -> dict[str, Any]:
    repo, number, author = str(payload["repo"]), int(payload["pr_number"]), str(payload["author"])
    command = find_command(str(payload.get("body") or ""))
    summary: dict[str, Any] = {"pr": number, "author": author, "dry_run": dry_run}
    if command is None:  # events.py lets none through; a job written by hand might
        return {**summary, "action": "none", "reason": "the comment holds no command"}
    summary["command"] = command.name
    with client_for_job(settings, payload, options) as client:
        pull = client.get_pull(repo, number)
        call = _Call(command, payload, pull, client, settings, store, dry_run, options)
        if not _allowed(call, author):
            log.info("%s#%d: %r by %s refused", repo, number, command.line, author)
            is_author = _same_login(author, pull.user.login)
            return {**summary, **_answer(call, replies.refused(command, is_author=is_author))}
        return {**summary, **_carry_out(call)}


def _carry_out(call: _Call) -> dict[str, Any]:
    command = call.command
    if command.name == "triage":
        return _retriage(call)
    if command.name == "retry":
        return _retry(call)
    if command.name == "explain":
        return _answer(call, _explain(call))
    if command.name == "help":
        return _answer(call, replies.help_text())
    return _answer(call, replies.unknown(command))


def _explain(call: _Call) -> str:
    setup = repo_setup(call.client, call.repo)
    wanted = call.command.argument
    if wanted in setup.config.disabled_signatures:
        return replies.disabled(wanted)
    return replies.explain(setup.catalog.catalog, wanted)


def _allowed(call: _Call, author: str) -> bool:
    name = call.command.name
    if name in ("help", "unknown"):
        return True
    if name != "retry" and _same_login(author, call.pull.user.login):
        return True
    permission = call.client.permission(call.repo, author)
    return permission is not None and permission.can_write  # admin, maintain or write


def _same_login(one: str, other: str) -> bool:
    return one.casefold() == other.casefold()  # GitHub logins are case-insensitive


# ---- /triage -----------------------------------------------------------------------------


def _retriage(call: _Call) -> dict[str, Any]:
    if call.pull.state != "open":
        return _answer(call, replies.closed())
    runs = [r for r in latest_runs(call) if r.conclusion in FAILING_RUN_CONCLUSIONS]
    if not runs:
        return _answer(call, replies.no_failed_runs(call.pull.head.sha))
    results = [
        pipeline.triage_job(
            _triage_payload(call, run),
            call.settings,
            call.store,
            dry_run=call.dry_run,
            options=call.options,
        )
        for run in runs
    ]
    return {
        "action": "triaged",
        "runs": [result["run"] for result in results],
        "comments": [comment for result in results for comment in result["comments"]],
    }


def latest_runs(call: _Call) -> list[WorkflowRun]:
    """The latest run of each workflow on the pull request's head commit, oldest first."""
    latest: dict[int, WorkflowRun] = {}
    for run in call.client.runs_for_commit(call.repo, call.pull.head.sha):
        known = latest.get(run.workflow_id)
        if known is None or run.id > known.id:
            latest[run.workflow_id] = run
    return sorted(latest.values(), key=lambda run: run.id)


def _triage_payload(call: _Call, run: WorkflowRun) -> dict[str, Any]:
    """The job events.py would make of this run's webhook, for this pull request."""
    return {
        "kind": "triage",
        "trigger": "command",
        "repo": call.repo,
        "installation_id": call.payload.get("installation_id"),
        "run_id": run.id,
        "run_attempt": run.run_attempt,
        "head_sha": run.head_sha,
        "head_branch": run.head_branch,
        "head_repo": run.head_repository.full_name if run.head_repository else None,
        "pull_requests": [call.pull.number],
        "find_pr": False,
        "workflow": run.name,
        "conclusion": run.conclusion,
        "workflow_job_id": None,
        "workflow_job_name": None,
    }


# ---- /triage retry -------------------------------------------------------------------------


def _retry(call: _Call) -> dict[str, Any]:
    if call.pull.state != "open":
        return _answer(call, replies.closed())
    catalog = repo_setup(call.client, call.repo).catalog
    planned = [found for run in latest_runs(call) if (found := _plan_run(call, run, catalog))]
    if not planned:
        return _answer(call, replies.no_failed_jobs(call.pull.head.sha))
    if call.dry_run:
        results = [(run, verdicts) for run, verdicts, _ in planned]
        return _dry_reply(call, replies.retry_summary(results))
    if not _claim(call):
        return {"action": "none", "reason": "this command was answered before"}
    results = [
        (run, rerun(call.client, call.repo, run.id, verdicts, jobs))
        for run, verdicts, jobs in planned
    ]
    answer = _post_reply(call, replies.retry_summary(results))
    rerun_ids = [v.job_id for _, verdicts in results for v in verdicts if v.rerun]
    return {**answer, "rerun": rerun_ids}


def _plan_run(
    call: _Call, run: WorkflowRun, catalog: CompiledCatalog
) -> tuple[WorkflowRun, list[Verdict], RunJobs] | None:
    """What to re-run of one run, or None when it has no failed job."""
    client, repo = call.client, call.repo
    if run.status != "completed":
        jobs = client.list_jobs(repo, run.id)
        return (run, still_running(jobs), jobs) if jobs.failed else None
    if run.conclusion not in FAILING_RUN_CONCLUSIONS:
        return None
    # The logs say which failures a re-run cures: triage this attempt again (nothing posted).
    report, _ = pipeline.triage_run(
        client,
        repo,
        run.id,
        run.run_attempt,
        catalog,
        max_log_bytes=call.settings.max_log_bytes,
        run=run,
    )
    jobs = client.list_jobs(repo, run.id, run.run_attempt)
    return (run, plan(report, jobs), jobs) if jobs.failed else None


# ---- replies -------------------------------------------------------------------------------


def _answer(call: _Call, text: str) -> dict[str, Any]:
    if call.dry_run:
        return _dry_reply(call, text)
    if not _claim(call):
        return {"action": "none", "reason": "this command was answered before"}
    return _post_reply(call, text)


def _claim(call: _Call) -> bool:
    return call.store.claim_once(f"command:{call.repo}:{call.payload['comment_id']}")


def _post_reply(call: _Call, text: str) -> dict[str, Any]:
    made = call.client.create_comment(
        call.repo, call.pull.number, replies.reply(call.command, text)
    )
    log.info(
        "%s#%d: replied to %r (comment %d)", call.repo, call.pull.number, call.command.line, made.id
    )
    return {"action": "replied", "reply": made.id}


def _dry_reply(call: _Call, text: str) -> dict[str, Any]:
    body = replies.reply(call.command, text)
    log.info("dry run: the reply on %s#%d would be:\n%s", call.repo, call.pull.number, body)
    return {"action": "dry_run", "reply": body}
