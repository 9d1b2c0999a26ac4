"""What the GitHub client returns: small frozen records, read from GitHub's JSON in one place.

Only the fields the bot uses are kept, typed, so the rest of the code never touches raw JSON
or PyGithub's lazy objects (which send requests on attribute access).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Literal

JsonObject = dict[str, Any]

# Job conclusions worth reading the log of. `cancelled` jobs are listed apart: usually a
# sibling's failure cancelled them (fail-fast) or a newer push did, and their logs end where
# they were stopped, so there is nothing of their own to diagnose. `startup_failure` is a
# conclusion of runs, not of jobs: a run that never started has no jobs and no logs, and the
# caller reports it from the run's conclusion.
TRIAGED_CONCLUSIONS = frozenset({"failure", "timed_out"})
CANCELLED = "cancelled"


def _time(value: object) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if isinstance(value, str) and value else None


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True)
class PullRef:
    """A pull request as a workflow run names it (no author, no state)."""

    number: int
    head_sha: str
    head_ref: str
    base_ref: str

    @classmethod
    def from_json(cls, data: JsonObject) -> PullRef:
        return cls(
            int(data["number"]),
            str(data["head"]["sha"]),
            str(data["head"]["ref"]),
            str(data["base"]["ref"]),
        )


@dataclass(frozen=True)
class WorkflowRun:
    id: int
    attempt: int
    name: str
    workflow_id: int
    event: str
    status: str
    conclusion: str | None
    head_sha: str
    head_branch: str | None
    html_url: str
    repository: str  # owner/name of the repository the run belongs to
    head_repository: str | None  # owner/name the head commit comes from (a fork's; None: gone)
    pull_requests: tuple[PullRef, ...]  # empty for pull requests from forks
    path: str = ""  # the workflow's file, ".github/workflows/ci.yml"

    @property
    def from_fork(self) -> bool:
        return self.head_repository is not None and self.head_repository != self.repository

    @classmethod
    def from_json(cls, data: JsonObject) -> WorkflowRun:
        head_repo = data.get("head_repository") or {}
        return cls(
            id=int(data["id"]),
            attempt=int(data.get("run_attempt") or 1),
            name=str(data.get("name") or ""),
            workflow_id=int(data["workflow_id"]),
            event=str(data["event"]),
            status=str(data["status"]),
            conclusion=_opt_str(data.get("conclusion")),
            head_sha=str(data["head_sha"]),
            head_branch=_opt_str(data.get("head_branch")),
            html_url=str(data["html_url"]),
            repository=str(data["repository"]["full_name"]),
            head_repository=_opt_str(head_repo.get("full_name")),
            pull_requests=tuple(PullRef.from_json(p) for p in data.get("pull_requests") or ()),
            path=str(data.get("path") or ""),
        )


@dataclass(frozen=True)
class Step:
    number: int
    name: str
    status: str
    conclusion: str | None
    started_at: dt.datetime | None
    completed_at: dt.datetime | None

    @classmethod
    def from_json(cls, data: JsonObject) -> Step:
        return cls(
            int(data["number"]),
            str(data["name"]),
            str(data["status"]),
            _opt_str(data.get("conclusion")),
            _time(data.get("started_at")),
            _time(data.get("completed_at")),
        )


@dataclass(frozen=True)
class Job:
    id: int
    run_id: int
    run_attempt: int
    name: str
    status: str
    conclusion: str | None
    html_url: str
    started_at: dt.datetime | None
    completed_at: dt.datetime | None
    steps: tuple[Step, ...]
    labels: tuple[str, ...]

    @property
    def failed(self) -> bool:
        """A job whose log is worth triaging (see TRIAGED_CONCLUSIONS)."""
        return self.conclusion in TRIAGED_CONCLUSIONS

    @classmethod
    def from_json(cls, data: JsonObject) -> Job:
        return cls(
            id=int(data["id"]),
            run_id=int(data["run_id"]),
            run_attempt=int(data.get("run_attempt") or 1),
            name=str(data["name"]),
            status=str(data["status"]),
            conclusion=_opt_str(data.get("conclusion")),
            html_url=str(data.get("html_url") or ""),
            started_at=_time(data.get("started_at")),
            completed_at=_time(data.get("completed_at")),
            steps=tuple(Step.from_json(s) for s in data.get("steps") or ()),
            labels=tuple(str(label) for label in data.get("labels") or ()),
        )


@dataclass(frozen=True)
class RunJobs:
    """The jobs of one run attempt, in GitHub's order."""

    jobs: tuple[Job, ...]

    @property
    def failed(self) -> tuple[Job, ...]:
        return tuple(job for job in self.jobs if job.failed)

    @property
    def cancelled(self) -> tuple[Job, ...]:
        return tuple(job for job in self.jobs if job.conclusion == CANCELLED)


@dataclass(frozen=True)
class PullRequest:
    number: int
    state: str
    draft: bool
    title: str
    author: str
    head_sha: str
    head_ref: str
    head_repository: str | None  # None when the fork was deleted
    base_ref: str
    html_url: str

    @classmethod
    def from_json(cls, data: JsonObject) -> PullRequest:
        head, base = data["head"], data["base"]
        return cls(
            number=int(data["number"]),
            state=str(data["state"]),
            draft=bool(data.get("draft")),
            title=str(data.get("title") or ""),
            author=str((data.get("user") or {}).get("login") or ""),
            head_sha=str(head["sha"]),
            head_ref=str(head["ref"]),
            head_repository=_opt_str((head.get("repo") or {}).get("full_name")),
            base_ref=str(base["ref"]),
            html_url=str(data.get("html_url") or ""),
        )


@dataclass(frozen=True)
class IssueComment:
    id: int
    body: str
    author: str  # login; an App's comments are by `<slug>[bot]`
    html_url: str
    updated_at: dt.datetime | None

    @classmethod
    def from_json(cls, data: JsonObject) -> IssueComment:
        return cls(
            int(data["id"]),
            str(data.get("body") or ""),
            str((data.get("user") or {}).get("login") or ""),
            str(data.get("html_url") or ""),
            _time(data.get("updated_at")),
        )


@dataclass(frozen=True)
class CommentResult:
    id: int
    action: Literal["created", "updated", "unchanged"]
    html_url: str
    # Older copies of our comment (left by a race elsewhere): the oldest is kept and edited;
    # these ids are reported, not deleted, so nothing a human may have replied to vanishes.
    duplicates: tuple[int, ...] = ()


@dataclass(frozen=True)
class Permission:
    """A user's access to a repository: `permission` is the legacy admin/write/read/none,
    `role_name` the role (admin, maintain, write, triage, read, or a custom one)."""

    permission: str
    role_name: str

    @property
    def can_write(self) -> bool:
        return self.permission in ("admin", "write")
