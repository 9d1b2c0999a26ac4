"""How the bot talks to GitHub's API: PyGithub's requester and `GithubRetry`, with our limits,
our errors and our metrics.

`GitHubRequester` is PyGithub's `Requester` for every REST request the bot makes (each page
of a listing and each completion of a lazy object included): GitHub's refusals become our
errors (GitHubStatusError, GitHubUnavailable, RateLimited), each answer is counted by endpoint
template and status (`triage_bot.metrics`), and a cached installation token GitHub refused
(401: revoked early, clocks apart) is renewed once.

PyGithub sends every REST call through urllib3 under a `GithubRetry`, which already waits out
5xx answers with backoff, `retry-after`, and primary and secondary rate limits. `MeteredRetry`
adds what the bot needs on top:
- a wait longer than `max_wait` is not slept in a worker: `RateLimited` says when to come back,
  so the queue reschedules the job (`retry-after` included, which GithubRetry sleeps uncapped);
- a rate-limit refusal (403/429) is resent even for a POST (GitHub refused before acting), a
  5xx only for methods that are safe to repeat (urllib3's list: no POST, no PATCH);
- the backoff is "equal jitter" from the first retry on (urllib3 waits 0 s before its second
  try), so workers that failed together spread out;
- each retry is counted (`triage_bot.metrics`) under the endpoint template of the call it serves.
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import requests
from github import Auth, GithubException, RateLimitExceededExceedsMaxWait
from github.GithubRetry import GithubRetry
from github.Requester import Requester
from urllib3.util.retry import Retry

from triage_bot import metrics
from triage_bot.config import Settings

RetryReason = Literal["5xx", "timeout", "connection", "rate_limit", "retry_after", "auth"]
RATE_LIMIT_STATUSES = frozenset({403, 429})
T = TypeVar("T")
USER_AGENT = "triage-bot"

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
class RetryPolicy:
    attempts: int = 5  # tries per request, the first included
    backoff: float = 1.0  # the pause after the first 5xx or timeout; doubles each time
    max_backoff: float = 30.0
    max_wait: float = 120.0  # the longest rate-limit wait slept in-process; beyond: RateLimited
    secondary_wait: float = 60.0  # a secondary limit without retry-after: GitHub says >= 1 min

    @classmethod
    def from_settings(cls, settings: Settings) -> RetryPolicy:
        """The policy with TRIAGE_GITHUB_BACKOFF and TRIAGE_GITHUB_BACKOFF_MAX; the rest default.

        Kept short on purpose: an outage longer than these few retries is waited out by the
        queue (triage_bot.github_api.outage), not by a worker thread sleeping.
        """
        return cls(backoff=settings.github_backoff, max_backoff=settings.github_backoff_max)

    def backoff_for(self, attempt: int) -> float:
        """The pause after failed try number `attempt` (1-based): half the exponential step,
        plus a random part of the other half."""
        step = min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1))
        return step / 2 + random.uniform(0, step / 2)

    def urllib3_retry(self, *, post_is_safe: bool = False) -> MeteredRetry:
        """The retry PyGithub's requests run under. `post_is_safe`: a POST that repeats
        harmlessly (the token exchange only mints a second token) is retried after a 5xx."""
        methods = Retry.DEFAULT_ALLOWED_METHODS | ({"POST"} if post_is_safe else set())
        return MeteredRetry(
            self,
            total=self.attempts - 1,
            allowed_methods=methods,
            raise_on_status=False,  # the last answer reaches PyGithub, which raises with it
            secondary_rate_wait=self.secondary_wait,
            max_rate_limit_wait=self.max_wait,
        )


@dataclass(frozen=True)
class ClientOptions:
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout: float = 30.0  # seconds per connect or read (a log body may take longer)
    per_page: int = 100  # GitHub's maximum: fewest requests per listing
    # GitHub asks for at least 1 s between writes ("best practices for using the REST API");
    # reads need no spacing. Tests set both to 0.
    seconds_between_requests: float = 0.0
    seconds_between_writes: float = 1.0
    user_agent: str = USER_AGENT

    @classmethod
    def from_settings(cls, settings: Settings) -> ClientOptions:
        """The defaults, with the retry policy's pauses from the settings (TRIAGE_GITHUB_*)."""
        return cls(retry=RetryPolicy.from_settings(settings))


class MeteredRetry(GithubRetry):
    """GithubRetry with the policy's limits, counted in the metrics (see the module doc)."""

    def __init__(self, policy: RetryPolicy | None = None, **kwargs: Any) -> None:
        self.policy = policy or RetryPolicy()
        super().__init__(**kwargs)

    def new(self, **kw: Any) -> MeteredRetry:
        # urllib3 copies a Retry at each try with type(self)(**params): pass the policy on.
        return super().new(policy=self.policy, **kw)

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if status_code in RATE_LIMIT_STATUSES:  # decided in increment, for any method
            return bool(self.total)
        return super().is_retry(method, status_code, has_retry_after)

    def get_backoff_time(self) -> float:
        return self.policy.backoff_for(len(self.history)) if self.history else 0.0

    def increment(  # type: ignore[override]
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> Retry:
        status: int | None = response.status if response is not None else None
        label = endpoint_label(method or "", url or "")
        told = status in RATE_LIMIT_STATUSES and "Retry-After" in response.headers
        wait: float | None = None
        if told or status == 429:  # GitHub's number, or its "at least a minute"
            wait = _seconds(response.headers.get("Retry-After"), self.policy.secondary_wait)
            if wait > self.policy.max_wait:
                count_call(label, status)
                raise RateLimited(label, time.time() + wait, "retry_after")
        retry = super().increment(method, url, response, error, _pool, _stacktrace)
        if wait is not None:
            retry.get_backoff_time = lambda: wait  # type: ignore[method-assign]
        count_call(label, status)
        count_retry(_reason(status, error, told), retry.get_backoff_time())
        return retry


def _reason(status: int | None, error: Exception | None, told: bool) -> RetryReason:
    if status in RATE_LIMIT_STATUSES:
        # GithubRetry resends a 403 without retry-after only for a rate-limit message.
        return "retry_after" if told or status == 429 else "rate_limit"
    if status is not None:
        return "5xx"
    return "timeout" if "Timeout" in type(error).__name__ else "connection"


def _seconds(text: str | None, default: float) -> float:
    # retry-after may also be an HTTP date; GitHub sends seconds. A date counts as absent.
    try:
        return float(text) if text is not None else default
    except ValueError:
        return default


# ---- the requester --------------------------------------------------------------------------

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
_PATH_PARTS = (
    (re.compile(r"^[a-z]+://[^/]+|[?#].*$"), ""),
    (
        re.compile(r"^(/api/v3)?/repos/[^/]+/[^/]+|^(/api/v3)?/repositories/\d+"),
        "/repos/{owner}/{repo}",
    ),
    (re.compile(r"/contents/.*"), "/contents/{path}"),
    (re.compile(r"/(commits|collaborators|compare)/[^/]+"), r"/\1/{name}"),
    (re.compile(r"/\d+(?=/|$)"), "/{id}"),
)


def endpoint_label(method: str, url: str) -> str:
    """The metrics' name of a request: "GET /repos/{owner}/{repo}/actions/runs/{id}"."""
    for pattern, template in _PATH_PARTS:
        url = pattern.sub(template, url)
    return f"{method} {url}"


class GitHubRequester(Requester):
    """PyGithub's requester with our errors, metrics and token renewal (see the module doc).
    Like PyGithub's, one instance must not be used by two threads at once."""

    def __init__(
        self,
        auth: Auth.Auth | None,
        api_url: str,
        options: ClientOptions,
        *,
        post_is_safe: bool = False,
    ) -> None:
        super().__init__(
            auth,
            api_url.rstrip("/"),
            math.ceil(options.timeout),  # PyGithub takes whole seconds only
            options.user_agent,
            options.per_page,
            True,
            options.retry.urllib3_retry(post_is_safe=post_is_safe),
            None,
            options.seconds_between_requests or None,
            options.seconds_between_writes or None,
            lazy=True,  # naming a repository or a run sends nothing until it is read
        )

    def requestJsonAndCheck(self, verb: str, url: str, *args: Any, **kw: Any) -> tuple[Any, Any]:
        send = super().requestJsonAndCheck
        return self._checked(verb, url, lambda: send(verb, url, *args, **kw))

    def requestBlobAndCheck(self, verb: str, url: str, *args: Any, **kw: Any) -> tuple[Any, Any]:
        send = super().requestBlobAndCheck
        return self._checked(verb, url, lambda: send(verb, url, *args, **kw))

    # requestJson and requestBlob see every final answer, its status included (the *AndCheck
    # methods raise for an error status and return no status for a success): counted here.
    def requestJson(self, verb: str, url: str, *args: Any, **kw: Any) -> tuple[int, Any, str]:
        answer = super().requestJson(verb, url, *args, **kw)
        count_call(endpoint_label(verb, url), answer[0])
        return answer

    def requestBlob(self, verb: str, url: str, *args: Any, **kw: Any) -> tuple[int, Any, str]:
        answer = super().requestBlob(verb, url, *args, **kw)
        count_call(endpoint_label(verb, url), answer[0])
        return answer

    def _checked(self, verb: str, url: str, send: Callable[[], T]) -> T:
        label = endpoint_label(verb, url)
        try:
            return _translated(label, verb, send)
        except GitHubStatusError as error:
            renew = getattr(self.auth, "invalidate", None)
            if error.status != 401 or renew is None or not renew():
                raise
            count_retry("auth", 0.0)
            return _translated(label, verb, send)


def _translated(label: str, verb: str, send: Callable[[], T]) -> T:
    """Send; raise ours for PyGithub's and requests' errors, counting the calls that ended
    without an answer reaching the requester (the answers are counted as they arrive)."""
    idempotent = verb in IDEMPOTENT_METHODS
    try:
        return send()
    except RateLimitExceededExceedsMaxWait as error:  # the retry kept GitHub's answer
        count_call(label, error.status)
        raise RateLimited(label, time.time() + (error.wait or 0.0), "rate_limit") from error
    except GithubException as error:
        raise status_error(label, error, idempotent=idempotent) from error
    except requests.RequestException as error:
        count_call(label, None)
        ambiguous = not idempotent and not request_unsent(error)
        raise GitHubUnavailable(label, describe(error), ambiguous=ambiguous) from error


def status_error(label: str, error: GithubException, *, idempotent: bool) -> GitHubError:
    message = error.message or ""
    if isinstance(error.data, dict):
        message = str(error.data.get("message") or message)
    if error.status >= 500:
        reason = f"{error.status} {message}".rstrip()
        return GitHubUnavailable(label, reason, status=error.status, ambiguous=not idempotent)
    return GitHubStatusError(label, error.status, message)


def request_unsent(error: Exception) -> bool:
    """True when the request certainly never reached GitHub, so resending cannot duplicate."""
    return isinstance(error, requests.ConnectTimeout) or "NewConnectionError" in repr(error)


def describe(error: Exception) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


# ---- counting -------------------------------------------------------------------------------


def count_call(label: str, status: int | None) -> None:
    metrics.GITHUB_API_CALLS.labels(label, "error" if status is None else str(status)).inc()


def count_retry(reason: RetryReason, delay: float) -> None:
    metrics.GITHUB_API_RETRIES.labels(reason).inc()
    if reason in ("rate_limit", "retry_after"):
        metrics.GITHUB_RATE_LIMIT_WAITS.inc(delay)


def pause(reason: RetryReason, delay: float) -> None:
    count_retry(reason, delay)
    time.sleep(delay)
