"""What a triage records of each job of the run (store/job_outcomes.py): the failed jobs with
their failure key from the report, the others (passing, cancelled, skipped) from the run's
job list already fetched, with no log downloaded. A re-run that passed is not triaged, but
its jobs are what proves a failure flaky: `record_passed_rerun` records them from the job
list alone, for runs that were triaged before (a passing run of its own costs no call)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from triage_bot.config import Settings
from triage_bot.core import ranking
from triage_bot.core.classify_results import FallbackLine, JobResult
from triage_bot.core.compare import normalise
from triage_bot.core.report import Job, Report, explained
from triage_bot.github_api.github import ClientOptions, WorkflowJob, WorkflowRun, client_for_job
from triage_bot.store import schema
from triage_bot.store.job_outcomes import JobOutcome, line_key, signature_key
from triage_bot.store.store import Store
from triage_bot.triage.same_job import job_family

_CAPTURES_KEY_CHARS = 400


def captures_key(captures: Sequence[str]) -> str:
    """The `group_by` captures as the store names them (a JSON list), as baseline.py does."""
    return json.dumps(list(captures), ensure_ascii=False)[:_CAPTURES_KEY_CHARS]


def run_outcomes(
    run: WorkflowRun,
    attempt: int,
    jobs: Sequence[WorkflowJob],
    report: Report | None,
    pr_number: int | None,
) -> list[JobOutcome]:
    """One outcome per finished job of `jobs` (the attempt's listing); a failed job's key
    comes from its triage in `report` (None: a passing run, nothing was triaged)."""
    triaged = _triaged_jobs(report)
    tree = _tree_sha(run)
    outcomes = []
    for job in jobs:
        if not job.conclusion:
            continue  # still running: a later triage records it
        found = triaged.get(job.html_url or "") if job.html_url else None
        outcomes.append(
            JobOutcome(
                repo=run.repository.full_name,
                run_id=run.id,
                run_attempt=attempt,
                job_id=job.id,
                workflow=(run.name or None) and run.name[:255],
                workflow_id=run.workflow_id,
                job_name=job_family(job.name)[:400],
                job_full_name=job.name[:400],
                conclusion=job.conclusion[:32],
                commit_sha=run.head_sha,
                finished_at=_finished(job),
                tree_sha=tree,
                branch=(run.head_branch or None) and run.head_branch[:255],
                pr_number=pr_number,
                url=(job.html_url or None) and job.html_url[:500],
                **(failure_of(found.result) if found is not None else {}),
            )
        )
    return outcomes


def record_passed_rerun(
    payload: dict[str, Any],
    settings: Settings,
    store: Store,
    options: ClientOptions | None = None,
) -> int:
    """A "passed" job (a run that succeeded): when an earlier attempt of the run was triaged,
    record this attempt's jobs (two calls: the run, its job list); how many were recorded."""
    repo, run_id, attempt = (
        str(payload["repo"]),
        int(payload["run_id"]),
        int(payload["run_attempt"]),
    )
    if store.failures.run(repo, run_id) is None:
        return 0  # never triaged: nothing of it is in the history to prove or disprove
    earlier = store.outcomes.of_run(repo, run_id)
    pr_number = next((o.pr_number for o in earlier if o.pr_number is not None), None)
    with client_for_job(settings, payload, options) as client:
        run = client.get_run(repo, run_id)
        listed = client.list_jobs(repo, run_id, attempt)
    return store.outcomes.record(run_outcomes(run, attempt, listed.jobs, None, pr_number))


def failure_of(result: JobResult) -> dict[str, Any]:
    """A failed job's signature, `group_by` captures and failure key; an unexplained job's
    (no root cause, a catch-all one, or a line the passing run printed too) key is its
    normalised best line; a job with neither has no key."""
    root = result.root_cause
    if root is not None and explained(root):
        names = root.signature.group_by
        values = [root.captures.get(name, "") for name in names]
        return {
            "signature": root.signature.id,
            "captures": dict(zip(names, values, strict=True)),
            "failure_key": signature_key(root.signature.id, captures_key(values)),
        }
    best = best_line(result.fallback_lines)
    if best is None or not normalise(best.text).strip():
        return {}
    return {"failure_key": line_key(normalise(best.text))}


def best_line(lines: Sequence[FallbackLine]) -> FallbackLine | None:
    """The best-guess line the comment shows for a job nothing explains."""
    index = ranking.best_guess_index([line.text for line in lines])
    return None if index is None else lines[index]


def _triaged_jobs(report: Report | None) -> dict[str, Job]:
    """The report's jobs by their URL on GitHub, which the job listing has too."""
    if report is None:
        return {}
    return {job.url: job for job in report.jobs if job.url}


def _finished(job: WorkflowJob) -> datetime:
    finished = job.completed_at
    if finished is None:
        return schema.now()
    return finished.replace(tzinfo=UTC) if finished.tzinfo is None else finished


def _tree_sha(run: WorkflowRun) -> str | None:
    head = run.raw_data.get("head_commit")
    tree = head.get("tree_id") if isinstance(head, dict) else None
    return tree[:64] if isinstance(tree, str) and tree else None
