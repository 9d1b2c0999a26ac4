"""Faults a test injects at runtime: failures, delays, rate limits and slow log bodies.

Rules match a host ("api" or "logs"), an optional method and a regex searched in the request
path; each fires `times` times (None: until `clear()`), and the oldest matching rule wins.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import TypeVar

from .http_types import Trickle
from .models import Host
from .ratelimit import RateLimiter

SECONDARY_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID {request_id}."
)
SECONDARY_LIMIT_DOCS = (
    "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)
_SERVER_ERROR_MESSAGES = {
    500: "Server Error",
    502: "Server Error",
    503: "Service Unavailable",
    504: "We couldn't respond to your request in time. Sorry about that.",
}


@dataclass(frozen=True)
class InjectedError:
    status: int
    message: str
    headers: tuple[tuple[str, str], ...] = ()
    documentation_url: str = "https://docs.github.com/rest"


@dataclass
class _Rule:
    host: Host
    pattern: re.Pattern[str]
    method: str | None
    times: int | None

    def matches(self, host: Host, method: str, path: str) -> bool:
        return (
            self.host == host
            and (self.method is None or self.method == method)
            and self.pattern.search(path) is not None
        )

    def use(self) -> None:
        if self.times is not None:
            self.times -= 1

    @property
    def spent(self) -> bool:
        return self.times is not None and self.times <= 0


@dataclass
class _ErrorRule(_Rule):
    error: InjectedError


@dataclass
class _DelayRule(_Rule):
    seconds: float


@dataclass
class _TrickleRule(_Rule):
    trickle: Trickle


_R = TypeVar("_R", bound=_Rule)


class Faults:
    def __init__(self, rate_limiter: RateLimiter) -> None:
        self._rate_limiter = rate_limiter
        self._lock = threading.Lock()
        self._errors: list[_ErrorRule] = []
        self._delays: list[_DelayRule] = []
        self._trickles: list[_TrickleRule] = []

    # ---- what tests call --------------------------------------------------------------------

    def fail(
        self,
        path_pattern: str,
        *,
        status: int = 502,
        times: int | None = 1,
        method: str | None = None,
        host: Host = "api",
    ) -> None:
        """Answer the next `times` matching requests with a 5xx."""
        message = _SERVER_ERROR_MESSAGES.get(status, "Server Error")
        self._add_error(path_pattern, InjectedError(status, message), times, method, host)

    def forbid(
        self,
        path_pattern: str,
        *,
        times: int | None = 1,
        method: str | None = None,
        message: str = "Resource not accessible by integration",
    ) -> None:
        """403 as GitHub refuses what the App's permissions do not cover (no rate limit)."""
        error = InjectedError(403, message)
        self._add_error(path_pattern, error, times, method, "api")

    def delay(
        self,
        path_pattern: str,
        seconds: float,
        *,
        times: int | None = None,
        method: str | None = None,
        host: Host = "api",
    ) -> None:
        """Hold matching requests for `seconds` before answering (to provoke client timeouts)."""
        rule = _DelayRule(host, re.compile(path_pattern), _upper(method), times, seconds)
        with self._lock:
            self._delays.append(rule)

    def secondary_rate_limit(
        self, path_pattern: str = "", *, retry_after: int = 1, times: int | None = 1
    ) -> None:
        """403 with `retry-after`, the way GitHub throttles bursts of requests."""
        error = InjectedError(
            403,
            SECONDARY_LIMIT_MESSAGE,
            (("retry-after", str(retry_after)),),
            SECONDARY_LIMIT_DOCS,
        )
        self._add_error(path_pattern, error, times, None, "api")

    def too_many_requests(
        self, path_pattern: str = "", *, retry_after: int = 1, times: int | None = 1
    ) -> None:
        """429 with `retry-after`."""
        error = InjectedError(
            429, SECONDARY_LIMIT_MESSAGE, (("retry-after", str(retry_after)),), SECONDARY_LIMIT_DOCS
        )
        self._add_error(path_pattern, error, times, None, "api")

    def exhaust_rate_limit(self, reset_in: float = 2.0) -> None:
        """Primary limit: 0 left (403) until x-ratelimit-reset, `reset_in` s ahead; then full."""
        self._rate_limiter.exhaust(reset_in)

    def slow_logs(
        self, *, chunk_size: int = 64, pause: float = 0.01, times: int | None = None
    ) -> None:
        """Trickle log bodies from the log host in `chunk_size` pieces, `pause` s apart."""
        rule = _TrickleRule("logs", re.compile(""), None, times, Trickle(chunk_size, pause))
        with self._lock:
            self._trickles.append(rule)

    def clear(self) -> None:
        with self._lock:
            self._errors.clear()
            self._delays.clear()
            self._trickles.clear()

    # ---- what the servers call --------------------------------------------------------------

    def take_delay(self, host: Host, method: str, path: str) -> float:
        rule = self._take(self._delays, host, method, path)
        return rule.seconds if rule else 0.0

    def take_error(self, host: Host, method: str, path: str) -> InjectedError | None:
        rule = self._take(self._errors, host, method, path)
        return rule.error if rule else None

    def take_trickle(self, method: str, path: str) -> Trickle | None:
        rule = self._take(self._trickles, "logs", method, path)
        return rule.trickle if rule else None

    def _add_error(
        self,
        path_pattern: str,
        error: InjectedError,
        times: int | None,
        method: str | None,
        host: Host,
    ) -> None:
        rule = _ErrorRule(host, re.compile(path_pattern), _upper(method), times, error)
        with self._lock:
            self._errors.append(rule)

    def _take(self, rules: list[_R], host: Host, method: str, path: str) -> _R | None:
        with self._lock:
            for rule in rules:
                if rule.matches(host, method, path):
                    rule.use()
                    if rule.spent:
                        rules.remove(rule)
                    return rule
            return None


def _upper(method: str | None) -> str | None:
    return method.upper() if method else None
