"""GitHub's primary rate limit: an hourly quota per caller, reported on every response."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

WINDOW_SECONDS = 3600
INSTALLATION_LIMIT = 5000
ANONYMOUS_LIMIT = 60


@dataclass(frozen=True)
class Quota:
    limit: int
    remaining: int
    reset: int  # epoch seconds, as in x-ratelimit-reset
    used: int
    resource: str = "core"

    def headers(self) -> list[tuple[str, str]]:
        return [
            ("x-ratelimit-limit", str(self.limit)),
            ("x-ratelimit-remaining", str(self.remaining)),
            ("x-ratelimit-reset", str(self.reset)),
            ("x-ratelimit-used", str(self.used)),
            ("x-ratelimit-resource", self.resource),
        ]


class RateLimitExceeded(Exception):
    def __init__(self, quota: Quota) -> None:
        super().__init__(f"rate limit exceeded until {quota.reset}")
        self.quota = quota


@dataclass
class _Window:
    started: float
    used: int = 0


class RateLimiter:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._windows: dict[str, _Window] = {}
        self._exhausted_until: float | None = None

    def exhaust(self, reset_in: float) -> None:
        """Every caller has 0 requests left until `reset_in` seconds from now; then full quota."""
        with self._lock:
            # Whole seconds, so recovery happens exactly at the x-ratelimit-reset advertised.
            self._exhausted_until = float(math.ceil(self._clock() + reset_in))

    def consume(self, key: str, limit: int) -> Quota:
        """Count one request for `key`; raise RateLimitExceeded when none are left."""
        with self._lock:
            now = self._clock()
            if self._exhausted(now):
                raise RateLimitExceeded(self._exhausted_quota(limit))
            window = self._window(key, now)
            if window.used >= limit:
                raise RateLimitExceeded(self._quota(window, limit))
            window.used += 1
            return self._quota(window, limit)

    def peek(self, key: str, limit: int) -> Quota:
        with self._lock:
            now = self._clock()
            if self._exhausted(now):
                return self._exhausted_quota(limit)
            return self._quota(self._window(key, now), limit)

    def _exhausted(self, now: float) -> bool:
        if self._exhausted_until is None:
            return False
        if now < self._exhausted_until:
            return True
        # The reset has passed: every caller starts a fresh window from the reset time.
        self._windows.clear()
        self._exhausted_until = None
        return False

    def _exhausted_quota(self, limit: int) -> Quota:
        assert self._exhausted_until is not None
        return Quota(limit, 0, int(self._exhausted_until), limit)

    def _window(self, key: str, now: float) -> _Window:
        window = self._windows.get(key)
        if window is None or now >= window.started + WINDOW_SECONDS:
            window = self._windows[key] = _Window(started=now)
        return window

    @staticmethod
    def _quota(window: _Window, limit: int) -> Quota:
        reset = math.ceil(window.started + WINDOW_SECONDS)
        return Quota(limit, limit - window.used, reset, window.used)
