"""How the bot retries GitHub: one policy for every request, and the errors callers see.

Every request to GitHub (API calls, each page of a listing, the token exchange, the log
download from the blob host) is judged by this one `RetryPolicy`, so 5xx, timeouts and rate
limits are handled alike everywhere and counted in the same metrics (`triage_bot.metrics`:
calls by endpoint template and status, retries by reason, seconds spent waiting for limits).

The policy:
- 500/502/503/504, timeouts and dropped connections: exponential backoff with jitter, a bounded
  number of attempts. A request that may have had an effect (POST, or a timeout after the
  request was sent) is retried only when GitHub certainly did not act on it: connect errors
  and rate-limit refusals. Callers that can check (the sticky comment) retry those themselves.
- 403/429 with `retry-after` (secondary rate limit, abuse detection): wait that long.
- 403/429 with `x-ratelimit-remaining: 0` (primary limit): wait until `x-ratelimit-reset`.
- A wait longer than `max_wait` is not slept in-process: `RateLimited` says when to come back,
  so the queue can reschedule the job instead of holding a worker.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import httpx

from triage_bot import metrics
from triage_bot.config import Settings

RetryReason = Literal["5xx", "timeout", "connection", "rate_limit", "retry_after", "auth"]
RETRYABLE_STATUSES = frozenset({500, 502, 503, 504})


# ---- errors ---------------------------------------------------------------------------------


class GitHubError(Exception):
    """Anything the GitHub client raises."""


class GitHubStatusError(GitHubError):
    """GitHub answered with an error that retrying does not change (a 4xx, mostly)."""

    def __init__(self, endpoint: str, status: int, message: str) -> None:
        super().__init__(f"{endpoint}: {status} {message}".rstrip())
        self.endpoint, self.status, self.message = endpoint, status, message


class GitHubUnavailable(GitHubError):
    """No usable answer after the allowed attempts (5xx, timeouts, connection errors).

    `ambiguous` is True when the last attempt was a write that GitHub may have carried out
    (a 5xx or a read timeout after sending), so the caller must check before resending.
    """

    def __init__(
        self, endpoint: str, reason: str, *, status: int | None = None, ambiguous: bool = False
    ) -> None:
        super().__init__(f"{endpoint}: {reason}")
        self.endpoint, self.reason = endpoint, reason
        self.status, self.ambiguous = status, ambiguous


class RateLimited(GitHubError):
    """GitHub asked us to wait longer than we wait in-process; come back at `resume_at`."""

    def __init__(self, endpoint: str, resume_at: float, reason: RetryReason) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(resume_at))
        super().__init__(f"{endpoint}: rate limited ({reason}) until {stamp}")
        self.endpoint, self.resume_at, self.reason = endpoint, resume_at, reason

    @property
    def retry_in(self) -> float:
        """Seconds from now until GitHub will take requests again."""
        return max(0.0, self.resume_at - time.time())


# ---- the policy -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Retry:
    """Wait `delay` seconds, then try again."""

    delay: float
    reason: RetryReason

    @property
    def rate_limited(self) -> bool:
        return self.reason in ("rate_limit", "retry_after")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5  # tries per request, the first included
    backoff: float = 1.0  # the pause after the first 5xx or timeout; doubles each time
    max_backoff: float = 30.0
    max_wait: float = 120.0  # the longest rate-limit wait slept in-process; beyond: RateLimited
    reset_margin: float = 1.0  # past x-ratelimit-reset, for clock skew between us and GitHub
    secondary_wait: float = 60.0  # a secondary limit without retry-after: GitHub says >= 1 min

    @classmethod
    def from_settings(cls, settings: Settings) -> RetryPolicy:
        """The policy with TRIAGE_GITHUB_BACKOFF and TRIAGE_GITHUB_BACKOFF_MAX; the rest default.

        Kept short on purpose: an outage longer than these few retries is waited out by the
        queue (triage_bot.github_api.outage), not by a worker thread sleeping.
        """
        return cls(backoff=settings.github_backoff, max_backoff=settings.github_backoff_max)

    def backoff_for(self, attempt: int) -> float:
        """The pause after failed try number `attempt` (1-based).

        "Equal jitter": half the exponential step, plus a random part of the other half, so
        workers that failed together spread out yet none retries at once.
        """
        step = min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1))
        return step / 2 + random.uniform(0, step / 2)

    def after_error(self, error: Exception, attempt: int, *, idempotent: bool) -> Retry | None:
        """The retry for a request that got no response, or None to give up."""
        if isinstance(error, httpx.UnsupportedProtocol | httpx.ProxyError):
            return None  # configuration, not weather
        if not isinstance(error, httpx.TransportError):
            return None
        if not idempotent and not request_unsent(error):
            return None
        reason: RetryReason = (
            "timeout" if isinstance(error, httpx.TimeoutException) else "connection"
        )
        return Retry(self.backoff_for(attempt), reason)

    def after_response(
        self,
        status: int,
        headers: Mapping[str, str],
        message: str,
        attempt: int,
        *,
        idempotent: bool,
        now: float,
        endpoint: str,
    ) -> Retry | None:
        """The retry for an error status, None to give up; RateLimited if the wait is too long."""
        if status in (403, 429):
            return self._rate_limit_wait(status, headers, message, now, endpoint)
        if status in RETRYABLE_STATUSES and idempotent:
            return Retry(self.backoff_for(attempt), "5xx")
        return None

    def _rate_limit_wait(
        self, status: int, headers: Mapping[str, str], message: str, now: float, endpoint: str
    ) -> Retry | None:
        # A rate-limit refusal is made before GitHub does anything, so even a POST may resend.
        reset = _number(headers.get("x-ratelimit-reset"))
        if headers.get("x-ratelimit-remaining") == "0" and reset is not None:
            return self._wait(reset + self.reset_margin - now, now, "rate_limit", endpoint)
        retry_after = _number(headers.get("retry-after"))
        if retry_after is not None:
            return self._wait(retry_after, now, "retry_after", endpoint)
        if status == 429 or "secondary rate limit" in message.lower():
            return self._wait(self.secondary_wait, now, "retry_after", endpoint)
        return None  # a plain 403: a permission GitHub will keep refusing

    def _wait(self, seconds: float, now: float, reason: RetryReason, endpoint: str) -> Retry:
        seconds = max(0.0, seconds)
        if seconds > self.max_wait:
            raise RateLimited(endpoint, now + seconds, reason)
        return Retry(seconds, reason)


def request_unsent(error: Exception) -> bool:
    """True when the request certainly never reached GitHub, so resending cannot duplicate."""
    return isinstance(error, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)


def _number(text: str | None) -> float | None:
    # retry-after may also be an HTTP date; GitHub sends seconds. A date counts as absent,
    # so a 429 or a secondary limit then waits `secondary_wait`, the conservative choice.
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def describe(error: Exception) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


# ---- counting -------------------------------------------------------------------------------


def count_call(endpoint: str, status: int | None) -> None:
    metrics.GITHUB_API_CALLS.labels(endpoint, "error" if status is None else str(status)).inc()


def count_retry(retry: Retry) -> None:
    metrics.GITHUB_API_RETRIES.labels(retry.reason).inc()
    if retry.rate_limited:
        metrics.GITHUB_RATE_LIMIT_WAITS.inc(retry.delay)


def pause(retry: Retry) -> None:
    count_retry(retry)
    time.sleep(retry.delay)
