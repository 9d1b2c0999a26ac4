"""Bugs of the fake itself (a response off-spec, a handler crash), kept to fail the test."""

from __future__ import annotations

import threading


class FakeGitHubError(AssertionError):
    """The fake GitHub misbehaved: fix the fake, not the code under test."""


class Problems:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: list[str] = []

    def add(self, problem: str) -> None:
        with self._lock:
            self._found.append(problem)

    def take(self) -> list[str]:
        """Return and forget what was found (for tests that provoke a problem on purpose)."""
        with self._lock:
            found, self._found = self._found, []
            return found

    def raise_if_any(self) -> None:
        found = self.take()
        if found:
            raise FakeGitHubError("the fake GitHub misbehaved:\n- " + "\n- ".join(found))
