"""The GitHub side of triage-bot: import from here.

- `client_for_repo(settings, repo)` / `client_for_installation(app, id)`: a `GitHubClient`
  (client.py) for the App's installation, or for GITHUB_TOKEN; its methods return PyGithub's
  objects (re-exported here: WorkflowRun, WorkflowJob, PullRequest, IssueComment, ...).
- `AppAuth` / `TokenAuth` (auth.py): the App's JWT and shared installation tokens.
- `GitHubClient.stream_job_log` (logs.py): a log streamed into a consumer.
- `RetryPolicy`, `RateLimited`, ... (retry.py): our limits on PyGithub's retry, our errors.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Protocol

from github.CheckRun import CheckRun
from github.ContentFile import ContentFile
from github.IssueComment import IssueComment
from github.PullRequest import PullRequest
from github.WorkflowJob import WorkflowJob
from github.WorkflowRun import WorkflowRun
from github.WorkflowStep import WorkflowStep

from triage_bot.config import DEFAULT_MAX_LOG_BYTES
from triage_bot.github_api.auth import AppAuth, InstallationAuth, TokenAuth
from triage_bot.github_api.client import (
    TRIAGED_CONCLUSIONS,
    CommentResult,
    GitHubClient,
    Permission,
    RunJobs,
    is_sticky,
    job_failed,
    run_from_fork,
    same_text,
)
from triage_bot.github_api.logs import Consumer, LogOutcome, tls_context
from triage_bot.github_api.retry import (
    ClientOptions,
    GitHubError,
    GitHubStatusError,
    GitHubUnavailable,
    RateLimited,
    RetryPolicy,
)

__all__ = [
    "DEFAULT_MAX_LOG_BYTES",
    "TRIAGED_CONCLUSIONS",
    "AppAuth",
    "CheckRun",
    "ClientOptions",
    "CommentResult",
    "Consumer",
    "ContentFile",
    "GitHubClient",
    "GitHubError",
    "GitHubSettings",
    "GitHubStatusError",
    "GitHubUnavailable",
    "InstallationAuth",
    "IssueComment",
    "LogOutcome",
    "Permission",
    "PullRequest",
    "RateLimited",
    "RetryPolicy",
    "RunJobs",
    "TokenAuth",
    "WorkflowJob",
    "WorkflowRun",
    "WorkflowStep",
    "client_for_installation",
    "client_for_job",
    "client_for_repo",
    "is_sticky",
    "job_failed",
    "run_from_fork",
    "same_text",
    "shared_app_auth",
    "tls_context",
]


class GitHubSettings(Protocol):
    """What building a client needs; `triage_bot.config.Settings` has it."""

    @property
    def app_id(self) -> int | None: ...
    @property
    def private_key(self) -> str | None: ...
    @property
    def github_api_url(self) -> str: ...
    @property
    def github_token(self) -> str | None: ...


_apps: dict[tuple[int, str, str, ClientOptions], AppAuth] = {}
_apps_lock = threading.Lock()


def shared_app_auth(
    app_id: int, private_key_pem: str, api_url: str, options: ClientOptions | None = None
) -> AppAuth:
    """The process's one AppAuth for these credentials, so clients share cached tokens."""
    key = (app_id, private_key_pem, api_url, options or ClientOptions())
    with _apps_lock:
        if key not in _apps:
            _apps[key] = AppAuth(app_id, private_key_pem, api_url, options=key[3])
        return _apps[key]


def client_for_installation(app: AppAuth, installation_id: int) -> GitHubClient:
    """A client for the installation a webhook names (no look-up needed)."""
    return GitHubClient(app.api_url, app.credentials(installation_id), options=app.options)


def client_for_repo(
    settings: GitHubSettings,
    repo: str,
    *,
    options: ClientOptions | None = None,
    login: str | None = None,
) -> GitHubClient:
    """A client that reaches `repo` ("owner/name"): as the App's installation there when the
    App's credentials are set (they win), else with GITHUB_TOKEN (`login`: see TokenAuth).

    Raises GitHubError without credentials, GitHubStatusError 404 when the App is not
    installed on the repository.
    """
    if settings.app_id is not None and settings.private_key:
        app = shared_app_auth(
            settings.app_id, settings.private_key, settings.github_api_url, options
        )
        return client_for_installation(app, app.installation_for_repo(repo))
    if settings.github_token:
        token = TokenAuth(settings.github_token, login=login)
        return GitHubClient(settings.github_api_url, token, options=options)
    raise GitHubError("no GitHub credentials: set APP_ID and PRIVATE_KEY, or GITHUB_TOKEN")


def client_for_job(
    settings: GitHubSettings, payload: Mapping[str, Any], options: ClientOptions | None = None
) -> GitHubClient:
    """The installation the webhook named, else whatever reaches the repo (App or token)."""
    installation = payload.get("installation_id")
    if isinstance(installation, int) and settings.app_id is not None and settings.private_key:
        app = shared_app_auth(
            settings.app_id, settings.private_key, settings.github_api_url, options
        )
        return client_for_installation(app, installation)
    return client_for_repo(settings, str(payload["repo"]), options=options)
