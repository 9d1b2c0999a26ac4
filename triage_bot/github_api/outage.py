"""Outages: which job errors mean "GitHub or its log host is down for now", and how long the
queue (triage_bot.service.queue) keeps trying such a job.

Inside one attempt every request is already retried a few times (retry.py,
seconds). An outage lasts longer than that: the attempt then fails with GitHubUnavailable (5xx,
timeouts, refused connections) or LogsUnavailable (a log the log host would not serve), and
the queue runs the job again later, instead of a worker thread sleeping through it. The waits
grow: the first is `backoff`, then about as long as the job has waited so far (so the waits
double, like any exponential backoff), at most `max_backoff`, with jitter so jobs that failed
together do not all come back together. `budget` seconds after the job was queued, the queue
gives up and records the job failed with the reason; a later webhook for the same run queues
it afresh.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

import httpx

from triage_bot.config import (
    DEFAULT_OUTAGE_BACKOFF,
    DEFAULT_OUTAGE_BACKOFF_MAX,
    DEFAULT_OUTAGE_RETRY_HOURS,
    Settings,
)
from triage_bot.github_api.logs import LogOutcome
from triage_bot.github_api.retry import GitHubUnavailable

OutageReason = Literal["github_5xx", "github_unreachable", "log_host"]
OUTAGE_REASONS: tuple[OutageReason, ...] = ("github_5xx", "github_unreachable", "log_host")


class LogsUnavailable(Exception):
    """A failed job's log could not be read for now (its host answered 5xx, timed out or
    dropped the connection, past the in-attempt retries): the whole triage is tried again
    later rather than posted with a note that the log is missing."""

    def __init__(self, job_name: str, reason: str) -> None:
        super().__init__(f"the log of {job_name!r} is temporarily unavailable: {reason}")


def check_log(outcome: LogOutcome, job_name: str, retry_logs: bool) -> None:
    """Raise LogsUnavailable for a log unreadable for now, when `retry_logs` (a queued job
    that may come back later); else the comment notes the log could not be downloaded."""
    if retry_logs and outcome.status == "unavailable" and outcome.temporary:
        raise LogsUnavailable(job_name, outcome.reason)


def outage_reason(error: BaseException) -> OutageReason | None:
    """The kind of outage `error` (or what caused it) comes from; None for any other error."""
    seen: BaseException | None = error
    for _ in range(5):  # the cause chain, in case a caller wrapped the error
        if seen is None:
            return None
        if isinstance(seen, LogsUnavailable):
            return "log_host"
        if isinstance(seen, GitHubUnavailable):
            return "github_5xx" if seen.status is not None else "github_unreachable"
        if isinstance(seen, httpx.TransportError):
            return "github_unreachable"
        seen = seen.__cause__
    return None


@dataclass(frozen=True)
class OutagePolicy:
    budget: float = DEFAULT_OUTAGE_RETRY_HOURS * 3600  # seconds after the job was queued
    backoff: float = DEFAULT_OUTAGE_BACKOFF
    max_backoff: float = DEFAULT_OUTAGE_BACKOFF_MAX

    @classmethod
    def from_settings(cls, settings: Settings) -> OutagePolicy:
        return cls(
            settings.outage_retry_hours * 3600,
            settings.outage_backoff,
            settings.outage_backoff_max,
        )

    def delay(self, waited: float) -> float | None:
        """The wait before the next try of a job queued `waited` seconds ago; None: give up.

        The last try is placed at the end of the budget, so a job is always tried then.
        """
        left = self.budget - waited
        if left <= 0:
            return None
        step = min(self.max_backoff, max(self.backoff, waited))
        return min(left, step / 2 + random.uniform(0, step / 2))

    def spent(self, waited: float) -> bool:
        """True when a job queued `waited` seconds ago gets no further outage retry."""
        return waited >= self.budget
