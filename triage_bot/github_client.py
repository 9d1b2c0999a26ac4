"""GitHubClient: runs, jobs, logs, pull requests, comments, permissions, contents, re-runs,
check runs (contents and check runs in github_contents.py and github_checks.py).

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
from triage_bot.github_auth import InstallationCredentials, TokenAuth
from triage_bot.github_checks import ChecksMixin
from triage_bot.github_contents import ContentsMixin
from triage_bot.github_http import ClientOptions, Transport, tls_context
from triage_bot.github_logs import Consumer, LogOutcome, stream_job_log
from triage_bot.github_models import (
    CommentResult,
    IssueComment,
    Job,
    Permission,
    PullRef,
    PullRequest,
    RunJobs,
    WorkflowRun,
)
from triage_bot.github_retry import GitHubError, GitHubStatusError, GitHubUnavailable, Retry, pause
from triage_bot.render import COMMENT_MARKER

_RUN = "/repos/{owner}/{repo}/actions/runs/{run_id}"
_JOB = "/repos/{owner}/{repo}/actions/jobs/{job_id}"
_COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"


def is_sticky(comment: IssueComment, author: str) -> bool:
    """Our sticky comment: written by `author` and starting with the hidden marker.

    Both are needed: anyone can paste the marker (quoting our comment does), and the bot
    may write other comments (replies to commands) that are not the sticky one.
    """
    return comment.author.lower() == author.lower() and comment.body.lstrip().startswith(
        COMMENT_MARKER
    )


class GitHubClient(ContentsMixin, ChecksMixin):
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
        max_bytes: int = DEFAULT_MAX_LOG_BYTES,
    ) -> LogOutcome:
        """Feed job `job_id`'s log to `consumer` as it downloads (see github_logs).

        Never raises for an expired (410), missing (404) or unreachable log: the outcome says
        so. Raises RateLimited when GitHub asks for a wait longer than the policy allows.
        """
        return stream_job_log(self._api, self._blobs, repo, job_id, consumer, max_bytes)

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

    # ---- pull requests --------------------------------------------------------------------

    def get_pull(self, repo: str, number: int) -> PullRequest:
        body = self._api.json(
            "GET",
            f"/repos/{repo}/pulls/{number}",
            endpoint="/repos/{owner}/{repo}/pulls/{pull_number}",
        )
        return PullRequest.from_json(body)

    def pulls_for_run(self, repo: str, run: WorkflowRun) -> list[PullRef]:
        """The pull requests a run belongs to.

        GitHub fills `pull_requests` only for branches of the repository itself; for a fork's
        pull request it is empty, so look for open pull requests whose head is the fork's
        branch (`head=owner:branch`) and whose head commit is the run's.
        """
        if run.pull_requests:
            return list(run.pull_requests)
        if run.head_repository is None or run.head_branch is None:
            return []  # the fork is gone, or the run is not for a branch
        owner = run.head_repository.split("/", 1)[0]
        pages = self._api.paginate(
            f"/repos/{repo}/pulls",
            endpoint="/repos/{owner}/{repo}/pulls",
            params={"head": f"{owner}:{run.head_branch}", "state": "open"},
        )
        found = (PullRequest.from_json(pull) for pull in pages)
        return [
            PullRef(pull.number, pull.head_sha, pull.head_ref, pull.base_ref)
            for pull in found
            if pull.head_sha == run.head_sha
        ]

    # ---- comments -------------------------------------------------------------------------

    def list_comments(self, repo: str, number: int) -> list[IssueComment]:
        """The comments of issue or pull request `number`, oldest first, all pages."""
        pages = self._api.paginate(f"/repos/{repo}/issues/{number}/comments", endpoint=_COMMENTS)
        return [IssueComment.from_json(comment) for comment in pages]

    def create_comment(self, repo: str, number: int, body: str) -> IssueComment:
        """Post a comment. A 5xx or timeout is not resent here (the comment may exist now):
        GitHubUnavailable(ambiguous=True) says so; upsert_comment handles it."""
        answer = self._api.json(
            "POST",
            f"/repos/{repo}/issues/{number}/comments",
            endpoint=_COMMENTS,
            json={"body": body},
        )
        return IssueComment.from_json(answer)

    def edit_comment(self, repo: str, comment_id: int, body: str) -> IssueComment:
        answer = self._api.json(
            "PATCH",
            f"/repos/{repo}/issues/comments/{comment_id}",
            endpoint="/repos/{owner}/{repo}/issues/comments/{comment_id}",
            json={"body": body},
            idempotent=True,  # setting the same body twice is the same as once
        )
        return IssueComment.from_json(answer)

    def find_sticky_comment(self, repo: str, number: int) -> IssueComment | None:
        """Our sticky comment on the pull request (the oldest, if a race left two)."""
        mine = self._sticky_comments(repo, number)
        return mine[0] if mine else None

    def _sticky_comments(self, repo: str, number: int) -> list[IssueComment]:
        author = self.login
        return [c for c in self.list_comments(repo, number) if is_sticky(c, author)]

    def upsert_comment(self, repo: str, number: int, body: str) -> CommentResult:
        """Make our one comment on the pull request say `body`.

        Creates it if absent, edits it only if its body differs, and never posts a second:
        when a create fails ambiguously (5xx, timeout: it may have been made), look again
        before trying anew. Locking against a concurrent triage of the same pull request is
        the caller's (the store's); this is idempotent on its own.
        """
        policy = self.options.retry
        attempt = 0
        while True:
            attempt += 1
            mine = self._sticky_comments(repo, number)
            if mine:
                return self._update(repo, mine, body)
            try:
                made = self.create_comment(repo, number, body)
            except GitHubUnavailable as error:
                if not error.ambiguous or attempt >= policy.attempts:
                    raise
                pause(Retry(policy.backoff_for(attempt), "5xx" if error.status else "timeout"))
                continue
            return CommentResult(made.id, "created", made.html_url)

    def _update(self, repo: str, mine: list[IssueComment], body: str) -> CommentResult:
        keep, duplicates = mine[0], tuple(c.id for c in mine[1:])
        if _same_text(keep.body, body):
            return CommentResult(keep.id, "unchanged", keep.html_url, duplicates)
        edited = self.edit_comment(repo, keep.id, body)
        return CommentResult(edited.id, "updated", edited.html_url, duplicates)

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


def _same_text(old: str, new: str) -> bool:
    # GitHub keeps bodies as sent, but a browser edit turns newlines into CRLF.
    return old.replace("\r\n", "\n") == new.replace("\r\n", "\n")
