"""GitHubClient: runs, jobs, logs, re-runs, identity, permissions here; pull requests and the
sticky comment, contents, check runs in its mixins (github_pulls.py, github_contents.py,
github_checks.py).

One client speaks for one installation of the App (or one token) on any repository it
reaches; every method takes the repository as "owner/name" and returns the typed records of
github_models.py. The calls go through one httpx transport under one retry policy. PyGithub
only signs the App's JWT (github_auth.py): for the calls its transport (requests and urllib3's
Retry) would need a second adapter of the policy whose hooks do not see the rate-limit headers
of each page, and its lazy objects send requests on attribute access, outside any retry or
metric. The log download has to be httpx anyway, to stream.
"""

from __future__ import annotations

import threading
from types import TracebackType
from urllib.parse import quote

import httpx

from triage_bot.config import DEFAULT_MAX_LOG_BYTES
from triage_bot.github_api.github_auth import InstallationCredentials, TokenAuth
from triage_bot.github_api.github_checks import ChecksMixin
from triage_bot.github_api.github_contents import ContentsMixin
from triage_bot.github_api.github_http import ClientOptions, Transport, tls_context
from triage_bot.github_api.github_logs import Consumer, LogOutcome, SizeHint, stream_job_log
from triage_bot.github_api.github_models import (
    Job,
    Permission,
    RunJobs,
    WorkflowRun,
)
from triage_bot.github_api.github_pulls import PullsMixin
from triage_bot.github_api.github_retry import GitHubError, GitHubStatusError

_RUN = "/repos/{owner}/{repo}/actions/runs/{run_id}"
_JOB = "/repos/{owner}/{repo}/actions/jobs/{job_id}"


class GitHubClient(PullsMixin, ContentsMixin, ChecksMixin):
    """GitHub as one installation (or token) sees it. Thread-safe; close() when done."""

    def __init__(
        self,
        api_url: str,
        credentials: InstallationCredentials | TokenAuth,
        *,
        options: ClientOptions | None = None,
    ) -> None:
        self.api_url = api_url
        self.options = options or ClientOptions()
        self._credentials = credentials
        self._api = Transport(api_url, credentials, self.options)
        # The blob host gets its own client with no credentials to leak, and may redirect.
        self._blobs = httpx.Client(
            verify=tls_context(),
            timeout=httpx.Timeout(self.options.timeout),
            follow_redirects=True,
            headers={"User-Agent": self.options.user_agent},
        )
        self._login_lock = threading.Lock()
        self._login: str | None = None

    def close(self) -> None:
        self._api.close()
        self._blobs.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ---- identity -------------------------------------------------------------------------

    @property
    def login(self) -> str:
        """The account our writes appear under: `<app-slug>[bot]`, or the token's user."""
        with self._login_lock:
            if self._login is None:
                self._login = self._find_login()
            return self._login

    def _find_login(self) -> str:
        credentials = self._credentials
        if isinstance(credentials, InstallationCredentials):
            return credentials.app.bot_login
        if credentials.login:
            return credentials.login
        try:
            return str(self._api.json("GET", "/user", endpoint="/user")["login"])
        except GitHubStatusError as error:
            raise GitHubError(
                "cannot tell which comments are ours: GET /user refused this token "
                f"({error.status}); pass TokenAuth(token, login=...) "
                "(github-actions[bot] for GitHub Actions' GITHUB_TOKEN)"
            ) from error

    # ---- actions --------------------------------------------------------------------------

    def get_run(self, repo: str, run_id: int) -> WorkflowRun:
        return WorkflowRun.from_json(
            self._api.json("GET", f"/repos/{repo}/actions/runs/{run_id}", endpoint=_RUN)
        )

    def list_jobs(self, repo: str, run_id: int, attempt: int | None = None) -> RunJobs:
        """Every job of one attempt of the run, all pages; `.failed` and `.cancelled` split them.

        attempt None: GitHub's filter=latest (the most recent attempt). Pass the attempt the
        webhook names to triage exactly that one, even if a re-run has started since.
        """
        base = f"/repos/{repo}/actions/runs/{run_id}"
        if attempt is None:
            pages = self._api.paginate(
                f"{base}/jobs", endpoint=f"{_RUN}/jobs", params={"filter": "latest"}, key="jobs"
            )
        else:
            pages = self._api.paginate(
                f"{base}/attempts/{attempt}/jobs",
                endpoint=f"{_RUN}/attempts/{{attempt_number}}/jobs",
                key="jobs",
            )
        return RunJobs(tuple(Job.from_json(job) for job in pages))

    def get_job(self, repo: str, job_id: int) -> Job:
        return Job.from_json(
            self._api.json("GET", f"/repos/{repo}/actions/jobs/{job_id}", endpoint=_JOB)
        )

    def stream_job_log(
        self,
        repo: str,
        job_id: int,
        consumer: Consumer,
        max_bytes: int | None = DEFAULT_MAX_LOG_BYTES,
        size_hint: SizeHint | None = None,
    ) -> LogOutcome:
        """Feed job `job_id`'s log to `consumer` as it downloads (see github_logs).

        Never raises for an expired (410), missing (404) or unreachable log: the outcome says
        so. Raises RateLimited when GitHub asks for a wait longer than the policy allows.
        """
        return stream_job_log(self._api, self._blobs, repo, job_id, consumer, max_bytes, size_hint)

    def list_workflow_runs(
        self,
        repo: str,
        workflow_id: int,
        branch: str,
        *,
        status: str | None = None,
        event: str | None = None,
        limit: int = 100,
    ) -> list[WorkflowRun]:
        """Runs of one workflow on `branch`, newest first, among the newest `limit` runs.

        Uses the repository-wide listing filtered here by workflow (the fake GitHub serves
        that one); GitHub's per-workflow listing would need no client-side filter.
        """
        params: dict[str, str | int] = {"branch": branch}
        if status is not None:
            params["status"] = status
        if event is not None:
            params["event"] = event
        pages = self._api.paginate(
            f"/repos/{repo}/actions/runs",
            endpoint="/repos/{owner}/{repo}/actions/runs",
            params=params,
            key="workflow_runs",
            limit=limit,
        )
        runs = (WorkflowRun.from_json(run) for run in pages)
        return [run for run in runs if run.workflow_id == workflow_id]

    def runs_for_commit(self, repo: str, head_sha: str, *, limit: int = 100) -> list[WorkflowRun]:
        """The runs of every workflow for commit `head_sha`, newest first (all attempts'
        latest state: a run re-run is one run with a higher `attempt`)."""
        pages = self._api.paginate(
            f"/repos/{repo}/actions/runs",
            endpoint="/repos/{owner}/{repo}/actions/runs",
            params={"head_sha": head_sha},
            key="workflow_runs",
            limit=limit,
        )
        return [WorkflowRun.from_json(run) for run in pages]

    def rerun_failed_jobs(self, repo: str, run_id: int) -> None:
        self._api.request(
            "POST",
            f"/repos/{repo}/actions/runs/{run_id}/rerun-failed-jobs",
            endpoint=f"{_RUN}/rerun-failed-jobs",
        )

    def rerun_job(self, repo: str, job_id: int) -> None:
        self._api.request(
            "POST", f"/repos/{repo}/actions/jobs/{job_id}/rerun", endpoint=f"{_JOB}/rerun"
        )

    # ---- repository look-ups --------------------------------------------------------------

    def permission(self, repo: str, username: str) -> Permission | None:
        """`username`'s access to the repository; None when GitHub knows no such user."""
        answer = self._api.request(
            "GET",
            f"/repos/{repo}/collaborators/{quote(username, safe='')}/permission",
            endpoint="/repos/{owner}/{repo}/collaborators/{username}/permission",
            allow=(404,),
        )
        if answer.status_code == 404:
            return None
        body = answer.json()
        return Permission(str(body["permission"]), str(body.get("role_name") or body["permission"]))
