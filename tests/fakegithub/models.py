"""The records the fake GitHub keeps: plain mutable dataclasses that tests may edit directly.

Field names follow GitHub's JSON where one exists, so a reader can map a record to the payload
built from it in `payloads/` without a glossary.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal

UserType = Literal["User", "Organization", "Bot"]
Role = Literal["admin", "maintain", "write", "triage", "read"]
RerunKind = Literal["run", "failed_jobs", "job"]
Host = Literal["api", "logs"]


@dataclass
class User:
    id: int
    login: str
    type: UserType = "User"
    name: str | None = None
    site_admin: bool = False


@dataclass
class App:
    id: int
    slug: str
    name: str
    owner: User
    client_id: str
    public_key_pem: bytes
    bot: User  # the `<slug>[bot]` account that authors what an installation token writes
    permissions: dict[str, str]
    events: list[str]
    created_at: dt.datetime
    client_secret: str = ""  # the OAuth client's secret (the user sign-in's access_token)


@dataclass
class Installation:
    id: int
    app_id: int
    account: User
    repository_selection: Literal["all", "selected"]
    repo_ids: set[int]  # used only when repository_selection is "selected"
    permissions: dict[str, str]
    events: list[str]
    created_at: dt.datetime


@dataclass
class Repo:
    id: int
    owner: User
    name: str
    private: bool
    default_branch: str
    fork: bool
    description: str | None
    created_at: dt.datetime

    @property
    def full_name(self) -> str:
        return f"{self.owner.login}/{self.name}"


@dataclass
class PullRequest:
    id: int
    number: int
    repo_id: int
    title: str
    body: str | None
    author: User
    head_repo_id: int
    head_ref: str
    head_sha: str
    base_ref: str
    base_sha: str
    state: Literal["open", "closed"]
    draft: bool
    merged: bool
    created_at: dt.datetime
    updated_at: dt.datetime
    closed_at: dt.datetime | None = None


@dataclass
class Step:
    number: int
    name: str
    status: str
    conclusion: str | None
    started_at: dt.datetime | None
    completed_at: dt.datetime | None


@dataclass
class Job:
    id: int
    run_id: int
    run_attempt: int
    name: str
    status: str
    conclusion: str | None
    steps: list[Step]
    created_at: dt.datetime
    started_at: dt.datetime
    completed_at: dt.datetime | None
    labels: list[str]
    runner_name: str | None
    html_url: str | None  # None: derived from the server's base URL when rendered
    log: bytes | None  # None: GitHub has no log for this job (404)
    log_expired: bool = False  # True: the log aged out of retention (410)


@dataclass
class WorkflowRun:
    id: int
    repo_id: int
    head_repo_id: int
    workflow_id: int
    name: str
    path: str
    run_number: int
    run_attempt: int
    event: str
    status: str
    conclusion: str | None
    head_sha: str
    head_branch: str | None
    display_title: str
    actor: User
    pull_request_numbers: list[int]
    html_url: str | None  # None: derived from the server's base URL when rendered
    created_at: dt.datetime
    updated_at: dt.datetime
    run_started_at: dt.datetime


@dataclass
class Comment:
    id: int
    repo_id: int
    issue_number: int
    author: User
    body: str
    created_at: dt.datetime
    updated_at: dt.datetime
    app_id: int | None  # the App it was made through, when made with an installation token
    reactions: list[Reaction] = field(default_factory=list)


@dataclass
class Reaction:
    id: int
    content: str  # "+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"
    user: User
    created_at: dt.datetime


@dataclass
class Rerun:
    kind: RerunKind
    repo_id: int
    run_id: int
    job_id: int | None
    enable_debug_logging: bool
    requested_by: str
    at: dt.datetime


@dataclass
class CheckRun:
    id: int
    repo_id: int
    app_id: int
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    started_at: dt.datetime | None
    completed_at: dt.datetime | None
    details_url: str | None
    external_id: str | None
    output: dict[str, Any]
    annotations: list[dict[str, Any]]  # every annotation ever sent, in order (GitHub appends)


@dataclass
class Token:
    value: str
    installation_id: int
    expires_at: dt.datetime
    permissions: dict[str, str]
    repo_ids: frozenset[int] | None  # None: every repository the installation can reach


@dataclass
class OAuthCode:
    """A code the web flow's authorize step handed back, redeemed once for a user token."""

    value: str
    app_id: int
    login: str
    redirect_uri: str | None
    expires_at: dt.datetime


@dataclass
class UserToken:
    """A user access token (`ghu_`): acts as the user, through one App."""

    value: str
    app_id: int
    login: str
    expires_at: dt.datetime


@dataclass
class RecordedRequest:
    host: Host
    method: str
    path: str
    query: str
    headers: list[tuple[str, str]]
    body: bytes
    at: float
    request_id: str = ""
    status: int = 0  # filled in once the response is chosen
    notes: list[str] = field(default_factory=list)  # e.g. which fault answered it

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)

    @property
    def authorization(self) -> str | None:
        return self.header("Authorization")
