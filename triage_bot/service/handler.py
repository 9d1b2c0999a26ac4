"""What a job handler is, and the one the queue runs: the contract between the queue
(queue.py) and the code that does a job's work.

A handler is called as `handler(payload, context)` and returns the report (a JSON-ready dict)
for triage jobs, or None. It raises PermanentJobError for a failure no retry cures, and
RetryLater (or any error with a numeric `retry_in`) to be run again later without using an
attempt.

`handle_job`, the queue's handler unless another is given (tests give their own), sends a
job's payload by its kind to the triage pipeline ("triage", "passed", "outdated":
triage/pipeline.py) or to a `/triage` command (commands/command_job.py). A GitHub rate limit
becomes a RetryLater, spent in the queue's schedule rather than in a worker thread; a refusal
no retry cures becomes a PermanentJobError.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from triage_bot.commands.command_job import command_job
from triage_bot.config import Settings, environment, load_settings
from triage_bot.github_api.github import ClientOptions, GitHubStatusError, RateLimited
from triage_bot.store.store import Store
from triage_bot.triage.outcomes import record_passed_rerun
from triage_bot.triage.pipeline import triage_job
from triage_bot.triage.sticky_comment import outdated_job, passed_job


class PermanentJobError(Exception):
    """Raised by a handler for a failure that retrying cannot cure (e.g. the repo is gone)."""


class RetryLater(Exception):
    """Raised by a handler to run the job again in `retry_in` seconds, not as a failure.

    Any exception with a numeric `retry_in` attribute is treated the same way, which is how
    the GitHub client's RateLimited reaches the queue without it knowing about it: a long
    rate-limit wait is spent in the queue's schedule, not holding a worker thread.
    """

    def __init__(self, retry_in: float, reason: str = "deferred") -> None:
        super().__init__(f"{reason}: run again in {retry_in:.0f}s")
        self.retry_in = retry_in


@dataclass(frozen=True)
class JobContext:
    """What a handler gets beside the payload."""

    job_id: str
    attempt: int  # 1 for the first run
    store: Store
    settings: Settings | None
    dry_run: bool  # render and log the comment, post nothing
    lease_lost: threading.Event  # set when another worker took the job over (rare)
    # False on the try at the end of the outage budget (queue.py): a log its host still will
    # not serve is then noted in the comment, instead of LogsUnavailable putting the job off.
    logs_may_wait: bool = True


# handler(payload, context) -> the report (a JSON-ready dict) for triage jobs, or None.
Handler = Callable[[dict[str, Any], JobContext], "dict[str, Any] | None"]


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
            record_passed_rerun(payload, settings, store, options)  # the flaky rules' proof
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
