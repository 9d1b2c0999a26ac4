"""The triage pipeline: a run's failed jobs -> one report -> the sticky comment.

`triage_run` is the one pipeline (DESIGN.md: webhook, CLI and `/triage` share it): the run,
its failed jobs, each log streamed straight into a classifier (no log is ever held whole), the
lines linked to GitHub's log viewer, the report and its comment. It posts nothing.

`handle_job` is the queue's handler (triage_bot.queue): for a "triage" job it runs the
pipeline and puts the run's section in the pull request's one comment (sticky_comment.py);
"passed" and "outdated" jobs change that comment (sticky_comment.py), and a "command" job (a
`/triage` comment) goes to command_job.py. Every step is idempotent, which is what lets the
queue simply run a job again after a worker died half-way through it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from triage_bot import baseline, check_run, logs
from triage_bot.baseline import base_job_name as base_job_name  # where it used to live
from triage_bot.classify import CompiledCatalog, JobClassifier
from triage_bot.comment_sections import Section
from triage_bot.config import DEFAULT_MAX_LOG_BYTES, Settings, environment, load_settings
from triage_bot.github import (
    ClientOptions,
    GitHubClient,
    GitHubStatusError,
    RateLimited,
    WorkflowRun,
    client_for_job,
)
from triage_bot.github import Job as GitHubJob
from triage_bot.github_http import tls_context
from triage_bot.log_tail import tail_note
from triage_bot.outage import check_log
from triage_bot.queue import JobContext, PermanentJobError, RetryLater
from triage_bot.render import compose_comment, render_comment
from triage_bot.repo_catalog import builtin_catalog as builtin_catalog  # re-exported
from triage_bot.repo_config import RepoConfig, repo_setup, skip_reason
from triage_bot.report import Job, Report, build_report, report_json
from triage_bot.retry import auto_retry
from triage_bot.run_notes import line_urls, log_note, run_notes
from triage_bot.sticky_comment import Target, outdated_job, passed_job, put_section, target_for
from triage_bot.store import Store

log = logging.getLogger(__name__)

# Logs downloaded at once per triage: enough to overlap one log's download with another's
# classification, few enough not to look like a burst to GitHub's secondary rate limits.
LOG_CONCURRENCY = 4


_pool_lock = threading.Lock()
_pools: list[ThreadPoolExecutor] = []


def _log_pool() -> ThreadPoolExecutor:
    """The process's threads for downloading and classifying logs (shared by all triages)."""
    with _pool_lock:
        if not _pools:
            _pools.append(ThreadPoolExecutor(LOG_CONCURRENCY, thread_name_prefix="triage-log"))
        return _pools[0]


def warm_up() -> None:
    """Do at a worker's start what its first triage would otherwise wait for: compile the
    built-in catalog, start the log threads, load the CA bundle."""
    builtin_catalog()
    _log_pool()
    tls_context()


# ---- the pipeline -------------------------------------------------------------------------


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
) -> tuple[Report, str]:
    """Triage one attempt of a run (None: the latest); the report and the comment's body.
    `setup_problems`: what is wrong with the repository's config, for the footer."""
    run = run or client.get_run(repo, run_id)
    listed = client.list_jobs(repo, run_id, attempt)
    futures = [
        _log_pool().submit(_triage_job, client, repo, job, catalog, max_log_bytes, retry_logs)
        for job in listed.failed
    ]
    jobs = [future.result() for future in futures]
    report = build_report(
        jobs,
        title=run.name,
        url=run.html_url,
        head_sha=run.head_sha,
        footer_notes=run_notes(run, listed.cancelled),
        setup_problems=list(setup_problems),
    )
    return report, render_comment(report)


def _triage_job(
    client: GitHubClient, repo: str, job: GitHubJob, catalog: CompiledCatalog, max_bytes: int,
    retry_logs: bool,
) -> Job:  # fmt: skip
    # The byte cap keeps the log's tail: the whole log streams by, its head only counted.
    # The step the API says failed, when the job's listing has its steps: ranking uses it.
    failed = next((s for s in job.steps if s.conclusion == "failure"), None)
    failing_step = (
        None if failed is None else logs.Step(failed.number, failed.started_at, failed.completed_at)
    )
    classifier = JobClassifier(catalog, job.name, max_bytes=max_bytes, failing_step=failing_step)
    outcome = client.stream_job_log(repo, job.id, classifier.feed, None, classifier.expect_size)
    check_log(outcome, job.name, retry_logs)  # LogsUnavailable: the queue comes back later
    result = classifier.finish()
    steps = job.steps or client.get_job(repo, job.id).steps
    return Job(
        result,
        url=job.html_url or None,
        line_urls=line_urls(job.html_url, result, steps),
        note=log_note(outcome) or tail_note(classifier.tail),
    )


# ---- the queue's handler --------------------------------------------------------------------


def handle_job(
    payload: dict[str, Any], context: JobContext, *, options: ClientOptions | None = None
) -> dict[str, Any] | None:
    """The queue's handler; see the module docstring. `options`: the GitHub client's (tests
    bind faster retries with functools.partial); else the settings' (TRIAGE_GITHUB_BACKOFF)."""
    settings = context.settings or load_settings(environment())
    options = options or ClientOptions.from_settings(settings)
    store, dry_run = context.store, context.dry_run
    try:
        if payload.get("kind") == "triage":
            return triage_job(
                payload,
                settings,
                store,
                dry_run=dry_run,
                options=options,
                lease_lost=context.lease_lost,
                retry_logs=context.logs_may_wait,
            )
        if payload.get("kind") == "outdated":
            return outdated_job(payload, settings, store, dry_run=dry_run, options=options)
        if payload.get("kind") == "passed":
            return passed_job(payload, settings, store, dry_run=dry_run, options=options)
        if payload.get("kind") == "command":
            # Imported here: command_job runs triage_job, so it imports this module.
            from triage_bot.command_job import command_job

            return command_job(payload, settings, store, dry_run=dry_run, options=options)
    except RateLimited as limited:
        # Spend the wait in the queue's schedule, not in a worker thread.
        raise RetryLater(limited.retry_in, "GitHub rate limit") from limited
    except GitHubStatusError as error:
        if error.status in (401, 403, 404, 410, 422):  # gone, not installed, or refused
            raise PermanentJobError(str(error)) from error
        raise
    raise PermanentJobError(f"unknown job kind {payload.get('kind')!r}")


def triage_job(
    payload: dict[str, Any],
    settings: Settings,
    store: Store,
    *,
    dry_run: bool = False,
    options: ClientOptions | None = None,
    on_report: Callable[[Report], None] | None = None,
    config: RepoConfig | None = None,
    lease_lost: threading.Event | None = None,
    retry_logs: bool = False,
) -> dict[str, Any]:
    """A "triage" job: triage the run, post or edit the comment, record the failures, and
    re-run the jobs a re-run cures when the repository's config asks for it.

    `on_report` sees the report before anything is posted (the command line prints it);
    `config`, when given, stands for the repository's `.github/triage-bot.yml`; `lease_lost`
    set means another worker took the job over (this one stalled past its lease): it posts,
    this one does not. `retry_logs`: see outage.check_log (the queue's jobs: True)."""
    repo, run_id, attempt = str(payload["repo"]), int(payload["run_id"]), payload["run_attempt"]
    with client_for_job(settings, payload, options) as client:
        run = client.get_run(repo, run_id)
        attempt = run.attempt if attempt is None else attempt  # None: the latest (command line)
        targets = _targets(client, repo, run, payload)
        summary: dict[str, Any] = {"run": _run_json(run, attempt), "dry_run": dry_run}
        if targets and all(t.skip for t in targets):
            log.info("run %s of %s: not triaged: %s", run_id, repo, _skips(targets))
            return {**summary, "skipped": _skips(targets), "comments": []}
        setup = repo_setup(client, repo)  # .github/triage-bot.yml and the repo's signatures
        config = config or setup.config
        skip = skip_reason(config, run.name, run.path)
        if skip:
            log.info("run %s of %s: not triaged: %s", run_id, repo, skip)
            return {**summary, "skipped": skip, "comments": []}
        report, _ = triage_run(
            client,
            repo,
            run_id,
            int(attempt),
            setup.catalog,
            max_log_bytes=settings.max_log_bytes,
            run=run,
            setup_problems=setup.problems,
            retry_logs=retry_logs,
        )
        baseline.record_triage(store, repo, run, int(attempt), report)
        bases = (t.base_ref for t in targets if not t.skip)
        compared = baseline.compare(client, store, run, report, bases, setup.catalog, settings)
        if on_report is not None:
            on_report(compared.report)
        if lease_lost is not None and lease_lost.is_set():
            log.warning(
                "run %s of %s: the job was taken over; this worker posts nothing", run_id, repo
            )
            return {**summary, "skipped": "taken over by another worker", "comments": []}
        posts = targets if config.wants_comment else []
        problems = compared.report.setup_problems
        comments = [
            _post(
                client,
                store,
                repo,
                run,
                int(attempt),
                t,
                compared.section(t.base_ref),
                problems,
                dry_run,
            )
            for t in posts
        ]
        if config.wants_check_run:
            summary["check_run"] = check_run.publish(
                client, store, repo, run, compared.report, dry_run=dry_run
            )
        retried = auto_retry(
            client, store, repo, run, int(attempt), report, config, dry_run=dry_run
        )
    result = {**report_json(compared.report), **summary, "comments": comments}
    return result if retried is None else {**result, "auto_retry": retried}


def _targets(
    client: GitHubClient, repo: str, run: WorkflowRun, payload: dict[str, Any]
) -> list[Target]:
    numbers = [n for n in payload.get("pull_requests") or [] if isinstance(n, int)]
    if not numbers and payload.get("find_pr"):
        numbers = [ref.number for ref in client.pulls_for_run(repo, run)]
    return [target_for(client, repo, run.head_sha, number) for number in numbers]


def _skips(targets: Sequence[Target]) -> str:
    return "; ".join(f"#{t.number}: {t.skip}" for t in targets if t.skip)


def _post(
    client: GitHubClient,
    store: Store,
    repo: str,
    run: WorkflowRun,
    attempt: int,
    target: Target,
    section: str,
    problems: Sequence[str],
    dry_run: bool,
) -> dict[str, Any]:
    """Put the run's `section` in the pull request's comment, beside the sections of the
    head commit's other failing workflows."""
    if target.skip:
        return {"pr": target.number, "action": target.skip}
    if dry_run:
        body = compose_comment([section], problems)
        log.info("dry run: the comment for %s#%d would be:\n%s", repo, target.number, body)
        return {"pr": target.number, "action": "dry_run"}
    workflow = str(run.workflow_id) if run.workflow_id else f"name:{run.name}"
    stored = Section(
        repo, target.number, workflow[:255], (run.name or "")[:255], run.id, attempt,
        run.head_sha, section, tuple(problems),
    )  # fmt: skip
    return put_section(client, store, stored)


def _run_json(run: WorkflowRun, attempt: object) -> dict[str, Any]:
    return {
        "id": run.id,
        "attempt": attempt,
        "workflow": run.name,
        "head_sha": run.head_sha,
        "url": run.html_url,
    }
