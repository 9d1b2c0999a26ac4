"""The queue's handler (job_handler.DEFAULT_HANDLER): a job's payload goes by its kind to the
triage pipeline ("triage", "passed", "outdated": triage/pipeline.py) or to a `/triage` command
(commands/command_job.py). A GitHub rate limit becomes a RetryLater, spent in the queue's
schedule rather than in a worker thread; a refusal no retry cures becomes a PermanentJobError.
"""

from __future__ import annotations

from typing import Any

from triage_bot.commands.command_job import command_job
from triage_bot.config import environment, load_settings
from triage_bot.github_api.github import ClientOptions, GitHubStatusError, RateLimited
from triage_bot.service.job_handler import JobContext, PermanentJobError, RetryLater
from triage_bot.triage.pipeline import triage_job
from triage_bot.triage.sticky_comment import outdated_job, passed_job


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
            return command_job(payload, settings, store, dry_run=dry_run, options=options)
    except RateLimited as limited:
        # Spend the wait in the queue's schedule, not in a worker thread.
        raise RetryLater(limited.retry_in, "GitHub rate limit") from limited
    except GitHubStatusError as error:
        if error.status in (401, 403, 404, 410, 422):  # gone, not installed, or refused
            raise PermanentJobError(str(error)) from error
        raise
    raise PermanentJobError(f"unknown job kind {payload.get('kind')!r}")
