"""Triage one run: its failed jobs, each log streamed straight into a classifier (no log is
ever held whole), the lines linked to GitHub's log viewer (`#step:S:L`), the report and its
comment, with what it says beside the failures (why a log could not be read whole, cancelled
jobs), each job compared with its passing reference when asked (reference.py: looked up and
downloaded in the background, never holding the triage past its timeout). It posts nothing.
`triage_run` is the one pipeline (DESIGN.md: webhook, CLI and `/triage` share it);
pipeline.py, baseline.py, command_job.py and the CLI's rerun call it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from triage_bot.config import DEFAULT_MAX_LOG_BYTES
from triage_bot.core import logs
from triage_bot.core.classify import CompiledCatalog, JobClassifier
from triage_bot.core.classify_results import JobResult
from triage_bot.core.log_tail import tail_note
from triage_bot.core.render import render_comment
from triage_bot.core.report import Job, Report, build_report
from triage_bot.github_api.github import (
    GitHubClient,
    LogOutcome,
    RunJobs,
    WorkflowRun,
    tls_context,
)
from triage_bot.github_api.github import WorkflowJob as GitHubJob
from triage_bot.github_api.outage import check_log
from triage_bot.repo.repo_catalog import builtin_catalog
from triage_bot.triage.reference import CompareWith, References

# The conclusions of a workflow run that make it worth a triage (events.py, command_job.py).
FAILING_RUN_CONCLUSIONS = frozenset({"failure", "timed_out", "startup_failure"})

# Logs downloaded at once per triage: enough to overlap one log's download with another's
# classification, few enough not to look like a burst to GitHub's secondary rate limits.
LOG_CONCURRENCY = 4
# The process's threads for downloading and classifying logs, shared by all triages; the
# executor starts them as work arrives.
_log_pool = ThreadPoolExecutor(LOG_CONCURRENCY, thread_name_prefix="triage-log")


def warm_up() -> None:
    """Do at a worker's start what its first triage would otherwise wait for: compile the
    built-in catalog, load the CA bundle."""
    builtin_catalog()
    tls_context()


# ---- the run -------------------------------------------------------------------------


def triage_run(
    client: GitHubClient,
    repo: str,
    run_id: int,
    attempt: int | None,
    catalog: CompiledCatalog,
    *,
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES,
    run: WorkflowRun | None = None,
    setup_problems: Sequence[str] = (),
    retry_logs: bool = False,
    compare: CompareWith | None = None,
    listed: RunJobs | None = None,
) -> tuple[Report, str]:
    """Triage one attempt of a run (None: the latest); the report and the comment's body.
    `setup_problems`: what is wrong with the repository's config, for the footer. `compare`:
    compare each failed job with its passing reference (reference.py), looked up and
    downloaded while the failing logs stream; None: compare with nothing. `listed`: the
    attempt's jobs when the caller has them already (it records the passing ones too)."""
    run = run or client.get_run(repo, run_id)
    listed = listed or client.list_jobs(repo, run_id, attempt)
    references = (
        References(client, run, listed.failed, compare, catalog)
        if compare and listed.failed
        else None
    )
    futures = [
        _log_pool.submit(
            _triage_job, client, repo, job, catalog, max_log_bytes, retry_logs, references
        )
        for job in listed.failed
    ]
    try:
        jobs = [future.result() for future in futures]
    finally:
        if references is not None:
            references.close()
    report = build_report(
        jobs,
        title=run.name,
        url=run.html_url,
        head_sha=run.head_sha,
        footer_notes=_run_notes(run, listed.cancelled) + (references.notes() if references else []),
        setup_problems=list(setup_problems),
    )
    return report, render_comment(report)


def _triage_job(
    client: GitHubClient, repo: str, job: GitHubJob, catalog: CompiledCatalog, max_bytes: int,
    retry_logs: bool, references: References | None,
) -> Job:  # fmt: skip
    # The byte cap keeps the log's tail: the whole log streams by, its head only counted.
    # The step the API says failed, when the job's listing has its steps: ranking uses it.
    failed = next((s for s in job.steps if s.conclusion == "failure"), None)
    failing_step = (
        None if failed is None else logs.Step(failed.number, failed.started_at, failed.completed_at)
    )
    # Waits (a bounded time) for the job's passing log, fetched since the triage began.
    passing, reference = references.for_job(job) if references else (None, None)
    classifier = JobClassifier(
        catalog, job.name, max_bytes=max_bytes, failing_step=failing_step, passing=passing
    )
    outcome = client.stream_job_log(repo, job.id, classifier.feed, None, classifier.expect_size)
    check_log(outcome, job.name, retry_logs)  # LogsUnavailable: the queue comes back later
    result = classifier.finish()
    if classifier.passing_error is not None and references is not None:
        references.unread(job, classifier.passing_error)
        reference = None
    steps = job.steps or client.get_job(repo, job.id).steps
    return Job(
        result,
        url=job.html_url or None,
        line_urls=_line_urls(job.html_url, result, steps),
        note=_log_note(outcome) or tail_note(classifier.tail),
        reference=reference,
    )


# ---- what the report says beside the failures ------------------------------------------


def _line_urls(job_url: str, result: JobResult, steps: Iterable[Any]) -> dict[int, str]:
    """GitHub's `#step:S:L` link for every line the comment shows."""
    if not job_url:
        return {}
    timed = [logs.Step(s.number, s.started_at, s.completed_at) for s in steps]
    wanted = {m.line for m in result.matches} | {f.line for f in result.fallback_lines}
    urls = {}
    for line in sorted(wanted):
        place = logs.locate_step(line, result.groups, timed)
        if place is not None:
            urls[line] = f"{job_url}#step:{place[0]}:{place[1]}"
    return urls


def _log_note(outcome: LogOutcome) -> str | None:
    if outcome.status == "ok":
        if outcome.capped:
            return f"only the first {outcome.bytes_read:,} bytes of the log were read"
        return None
    if outcome.status == "expired":
        return f"the log has expired, nothing could be read ({outcome.reason})"
    if outcome.status == "missing":
        return "GitHub has no log for this job"
    if outcome.partial:
        return f"the log download broke off after {outcome.bytes_read:,} bytes ({outcome.reason})"
    return f"the log could not be downloaded ({outcome.reason})"


def _run_notes(run: WorkflowRun, cancelled: Sequence[GitHubJob]) -> list[str]:
    notes = []
    if run.status != "completed":
        notes.append("the run is still going: this comment is updated as more jobs fail")
    if cancelled:
        names = ", ".join(job.name for job in cancelled[:5])
        more = f" and {len(cancelled) - 5} more" if len(cancelled) > 5 else ""
        notes.append(f"{len(cancelled)} cancelled job(s) not triaged: {names}{more}")
    return notes
