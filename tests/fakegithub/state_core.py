"""Storage, id allocation and the request log shared by every part of the fake's state."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import re
import threading
from collections.abc import Callable

from .models import (
    App,
    CheckRun,
    Comment,
    Installation,
    Job,
    PullRequest,
    RecordedRequest,
    Repo,
    Rerun,
    Role,
    Token,
    User,
    UserType,
    WorkflowRun,
)

# Ids start far apart and large, as on GitHub: job and comment ids no longer fit in 32 bits.
_ID_BASES = {
    "user": 1_000,
    "app": 900_000,
    "installation": 50_000_000,
    "repo": 700_000_000,
    "pull": 1_800_000_000,
    "workflow": 60_000_000,
    "run": 9_100_000_000,
    "job": 25_100_000_000,  # jobs and check runs share one id space, as on GitHub
    "comment": 2_400_000_000,
    "reaction": 300_000_000,
}


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


class StateCore:
    def __init__(self, clock: Callable[[], dt.datetime] = utc_now) -> None:
        self.lock = threading.RLock()
        self.now = clock
        self.users: dict[str, User] = {}
        self.apps: dict[int, App] = {}
        self.installations: dict[int, Installation] = {}
        self.repos: dict[int, Repo] = {}
        self.pulls: dict[tuple[int, int], PullRequest] = {}
        self.runs: dict[int, WorkflowRun] = {}
        self.jobs: dict[int, Job] = {}
        self.comments: dict[int, Comment] = {}
        self.files: dict[tuple[int, str], dict[str, bytes]] = {}
        self.roles: dict[tuple[int, str], Role] = {}
        self.reruns: list[Rerun] = []
        self.check_runs: dict[int, CheckRun] = {}
        self.tokens: dict[str, Token] = {}
        self.requests: list[RecordedRequest] = []
        self._counters = {kind: itertools.count(base) for kind, base in _ID_BASES.items()}
        self._run_numbers = itertools.count(1)
        self._sha_counter = itertools.count(1)

    def next_id(self, kind: str) -> int:
        with self.lock:
            return next(self._counters[kind])

    def next_run_number(self) -> int:
        with self.lock:
            return next(self._run_numbers)

    def new_sha(self) -> str:
        """A deterministic, unique 40-hex commit sha."""
        with self.lock:
            return hashlib.sha1(f"fake-commit-{next(self._sha_counter)}".encode()).hexdigest()

    def user(self, login: str, *, type: UserType = "User", name: str | None = None) -> User:
        """The user with this login, created on first mention."""
        with self.lock:
            if login not in self.users:
                self.users[login] = User(self.next_id("user"), login, type, name)
            return self.users[login]

    # ---- the request log --------------------------------------------------------------------

    def record(self, request: RecordedRequest) -> RecordedRequest:
        with self.lock:
            self.requests.append(request)
            return request

    def requests_matching(
        self, path_pattern: str = "", *, method: str | None = None, host: str | None = "api"
    ) -> list[RecordedRequest]:
        """Logged requests whose path matches the regex `path_pattern` (re.search).

        `host` is "api", "logs", or None for both.
        """
        pattern = re.compile(path_pattern)
        with self.lock:
            return [
                r
                for r in self.requests
                if (host is None or r.host == host)
                and (method is None or r.method == method.upper())
                and pattern.search(r.path)
            ]
