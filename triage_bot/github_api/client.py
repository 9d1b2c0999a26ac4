"""GitHubClient: GitHub as one installation of the App (or one token) sees it, through PyGithub.

Every method takes the repository as "owner/name" and returns PyGithub's objects (WorkflowRun,
WorkflowJob, PullRequest, IssueComment, ContentFile, CheckRun); what is ours is what PyGithub
lacks: the sticky comment, fork pull requests, the streamed log (logs.py). Every request goes
through our requester (retry.py: our errors, metrics, limits). Objects are lazy: naming a
repository sends nothing, and each method completes only what it returns. PyGithub's requester
is not safe across threads (its connection keeps the request it is about to send), so each
thread gets its own, sharing the one set of credentials.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from types import TracebackType
from typing import Any, Literal, TypeVar
from urllib.parse import quote

from github.CheckRun import CheckRun
from github.ContentFile import ContentFile
from github.GithubObject import GithubObject
from github.IssueComment import IssueComment
from github.PaginatedList import PaginatedList
from github.PullRequest import PullRequest
from github.Repository import Repository
from github.WorkflowJob import WorkflowJob
from github.WorkflowRun import WorkflowRun

from triage_bot.config import DEFAULT_MAX_LOG_BYTES
from triage_bot.core.render import COMMENT_MARKER
from triage_bot.github_api import logs
from triage_bot.github_api.auth import InstallationAuth, TokenAuth
from triage_bot.github_api.retry import (
    ClientOptions,
    GitHubError,
    GitHubRequester,
    GitHubStatusError,
    GitHubUnavailable,
    pause,
)

Obj = TypeVar("Obj", bound=GithubObject)

# Job conclusions worth reading the log of. `cancelled` jobs are listed apart: usually a
# sibling's failure cancelled them (fail-fast) or a newer push did, and their logs end where
# they were stopped, so there is nothing of their own to diagnose. `startup_failure` is a
# conclusion of runs, not of jobs: a run that never started has no jobs and no logs, and the
# caller reports it from the run's conclusion.
TRIAGED_CONCLUSIONS = frozenset({"failure", "timed_out"})


def job_failed(job: WorkflowJob) -> bool:
    """A job whose log is worth triaging (see TRIAGED_CONCLUSIONS)."""
    return job.conclusion in TRIAGED_CONCLUSIONS


def run_from_fork(run: WorkflowRun) -> bool:
    head = run.head_repository
    return head is not None and head.full_name != run.repository.full_name


@dataclass(frozen=True)
class RunJobs:
    """The jobs of one run attempt, in GitHub's order."""

    jobs: tuple[WorkflowJob, ...]

    @property
    def failed(self) -> tuple[WorkflowJob, ...]:
        return tuple(job for job in self.jobs if job_failed(job))

    @property
    def cancelled(self) -> tuple[WorkflowJob, ...]:
        return tuple(job for job in self.jobs if job.conclusion == "cancelled")


@dataclass(frozen=True)
class Permission:
    """A user's access to a repository: `permission` is the legacy admin/write/read/none,
    `role_name` the role (admin, maintain, write, triage, read, or a custom one)."""

    permission: str
    role_name: str

    @property
    def can_write(self) -> bool:
        return self.permission in ("admin", "write")


@dataclass(frozen=True)
class CommentResult:
    id: int
    action: Literal["created", "updated", "unchanged"]
    html_url: str
    # Older copies of our comment (left by a race elsewhere): the oldest is kept and edited;
    # these ids are reported, not deleted, so nothing a human may have replied to vanishes.
    duplicates: tuple[int, ...] = ()


def is_sticky(comment: IssueComment, author: str) -> bool:
    """Our sticky comment: written by `author` and starting with the hidden marker.

    Both are needed: anyone can paste the marker (quoting our comment does), and the bot
    may write other comments (replies to commands) that are not the sticky one.
    """
    body = comment.body or ""
    return comment.user.login.lower() == author.lower() and body.lstrip().startswith(COMMENT_MARKER)


class GitHubClient:
    """GitHub as one installation (or token) sees it. Thread-safe; close() when done."""

    def __init__(
        self,
        api_url: str,
        credentials: InstallationAuth | TokenAuth,
        *,
        options: ClientOptions | None = None,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.options = options or ClientOptions()
        self._credentials = credentials
        self._local = threading.local()
        self._lock = threading.Lock()  # guards the list of requesters
        self._login_lock = threading.Lock()
        self._requesters: list[GitHubRequester] = []
        self._login: str | None = None
        # The log host gets its own client with no credentials to leak (logs.py).
        self._blobs = logs.blob_client(self.options)

    def close(self) -> None:
        with self._lock:
            for requester in self._requesters:
                requester.close()
            self._requesters.clear()
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

    # ---- plumbing -------------------------------------------------------------------------

    def requester(self) -> GitHubRequester:
        """This thread's requester."""
        requester: GitHubRequester | None = getattr(self._local, "requester", None)
        if requester is None:
            requester = GitHubRequester(self._credentials, self.api_url, self.options)
            self._local.requester = requester
            with self._lock:
                self._requesters.append(requester)
        return requester

    def repo(self, repo: str) -> Repository:
        """The repository "owner/name" (lazy: no request)."""
        return Repository(self.requester(), url=f"/repos/{repo}")

    def _list(self, cls: type[Obj], url: str, params: dict[str, Any] | None = None, *,
              item: str = "items", limit: int | None = None) -> list[Obj]:  # fmt: skip
        """Every item of a listing (at most `limit`); `item` names the list in an object body."""
        pages = PaginatedList(cls, self.requester(), url, params, list_item=item)
        return list(islice(pages, limit))

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
        if isinstance(credentials, InstallationAuth):
            return credentials.app.bot_login
        if credentials.login:
            return credentials.login
        try:
            _, body = self.requester().requestJsonAndCheck("GET", "/user")
            return str(body["login"])
        except GitHubStatusError as error:
            raise GitHubError(
                "cannot tell which comments are ours: GET /user refused this token "
                f"({error.status}); pass TokenAuth(token, login=...) "
                "(github-actions[bot] for GitHub Actions' GITHUB_TOKEN)"
            ) from error

    # ---- actions --------------------------------------------------------------------------

    def get_run(self, repo: str, run_id: int) -> WorkflowRun:
        return self.repo(repo).get_workflow_run(run_id).complete()

    def list_jobs(self, repo: str, run_id: int, attempt: int | None = None) -> RunJobs:
        """Every job of one attempt of the run, all pages; `.failed` and `.cancelled` split them.

        attempt None: GitHub's filter=latest (the most recent attempt). Pass the attempt the
        webhook names to triage exactly that one, even if a re-run has started since.
        """
        base = f"/repos/{repo}/actions/runs/{run_id}"
        if attempt is None:
            return RunJobs(
                tuple(self._list(WorkflowJob, f"{base}/jobs", {"filter": "latest"}, item="jobs"))
            )
        return RunJobs(
            tuple(self._list(WorkflowJob, f"{base}/attempts/{attempt}/jobs", item="jobs"))
        )

    def get_job(self, repo: str, job_id: int) -> WorkflowJob:
        return self.repo(repo).get_workflow_job(job_id).complete()

    def stream_job_log(
        self,
        repo: str,
        job_id: int,
        consumer: logs.Consumer,
        max_bytes: int | None = DEFAULT_MAX_LOG_BYTES,
        size_hint: logs.SizeHint | None = None,
    ) -> logs.LogOutcome:
        """Feed job `job_id`'s log to `consumer` as it downloads (see logs.py).

        Never raises for an expired (410), missing (404) or unreachable log: the outcome says
        so. Raises RateLimited when GitHub asks for a wait longer than the policy allows.
        """
        url = f"/repos/{repo}/actions/jobs/{job_id}/logs"

        def ask() -> str:
            # requestBlob does not follow the 302: its location goes to the log host without
            # our token (logs.py), never through PyGithub, which would send it along.
            headers, _ = self.requester().requestBlobAndCheck("GET", url)
            return str(headers.get("location") or "")

        feed = logs.Feed(consumer, max_bytes, size_hint)
        return logs.stream(ask, self._blobs, feed, self.options.retry)

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
        params = {"branch": branch, "status": status, "event": event}
        runs = self._runs(repo, {k: v for k, v in params.items() if v is not None}, limit)
        return [run for run in runs if run.workflow_id == workflow_id]

    def runs_for_commit(self, repo: str, head_sha: str, *, limit: int = 100) -> list[WorkflowRun]:
        """The runs of every workflow for commit `head_sha`, newest first (all attempts'
        latest state: a run re-run is one run with a higher `run_attempt`)."""
        return self._runs(repo, {"head_sha": head_sha}, limit)

    def merge_base(self, repo: str, base: str, head: str) -> str | None:
        """The commit where `head` (a SHA) left `base` (a branch): the compare endpoint's
        `merge_base_commit`; None when GitHub cannot compare them (404: an unknown ref, a
        history without a common commit). One commit per page: only the merge base is read."""
        basehead = f"{quote(base, safe='')}...{quote(head, safe='')}"
        url = f"/repos/{repo}/compare/{basehead}"
        try:
            _, body = self.requester().requestJsonAndCheck("GET", url, {"per_page": 1})
        except GitHubStatusError as error:
            if error.status in (404, 422):
                return None
            raise
        found = (body or {}).get("merge_base_commit") or {}
        sha = found.get("sha") if isinstance(found, dict) else None
        return str(sha) if sha else None

    def _runs(self, repo: str, params: dict[str, str], limit: int) -> list[WorkflowRun]:
        url = f"/repos/{repo}/actions/runs"
        return self._list(WorkflowRun, url, params, item="workflow_runs", limit=limit)

    def rerun_failed_jobs(self, repo: str, run_id: int) -> None:
        url = f"/repos/{repo}/actions/runs/{run_id}/rerun-failed-jobs"
        self.requester().requestJsonAndCheck("POST", url)

    def rerun_job(self, repo: str, job_id: int) -> None:
        self.requester().requestJsonAndCheck("POST", f"/repos/{repo}/actions/jobs/{job_id}/rerun")

    # ---- repository look-ups --------------------------------------------------------------

    def permission(self, repo: str, username: str) -> Permission | None:
        """`username`'s access to the repository; None when GitHub knows no such user."""
        url = f"/repos/{repo}/collaborators/{quote(username, safe='')}/permission"
        try:
            _, body = self.requester().requestJsonAndCheck("GET", url)
        except GitHubStatusError as error:
            if error.status == 404:
                return None
            raise
        return Permission(str(body["permission"]), str(body.get("role_name") or body["permission"]))

    def get_file_blob(self, repo: str, path: str, ref: str | None = None) -> ContentFile | None:
        """A file at `ref` (default branch if None): `.decoded_content`, and `.sha`, the blob
        SHA (equal SHAs, equal content); None if absent or not a file."""
        found = self._contents(repo, path, ref)
        return found if isinstance(found, ContentFile) and found.type == "file" else None

    def file_exists(self, repo: str, path: str, ref: str | None = None) -> bool:
        return self.get_file_blob(repo, path, ref) is not None

    def list_entries(
        self, repo: str, path: str, ref: str | None = None
    ) -> list[ContentFile] | None:
        """A directory's entries (`.path`, `.type`, `.sha`, `.size`) at `ref`; None if absent
        or a file."""
        found = self._contents(repo, path, ref)
        return found if isinstance(found, list) else None

    def _contents(
        self, repo: str, path: str, ref: str | None
    ) -> ContentFile | list[ContentFile] | None:
        kwargs = {"ref": ref} if ref else {}
        try:
            return self.repo(repo).get_contents(path.strip("/"), **kwargs)
        except GitHubStatusError as error:
            if error.status == 404:
                return None
            raise

    # ---- pull requests and our one comment ------------------------------------------------

    def get_pull(self, repo: str, number: int) -> PullRequest:
        return self.repo(repo).get_pull(number).complete()

    def pulls_for_run(self, repo: str, run: WorkflowRun) -> list[PullRequest]:
        """The pull requests a run belongs to (`.number`, `.head.sha`, `.base.ref`).

        GitHub fills `pull_requests` only for branches of the repository itself; for a fork's
        pull request it is empty, so look for open pull requests whose head is the fork's
        branch (`head=owner:branch`) and whose head commit is the run's.
        """
        if run.pull_requests:
            return list(run.pull_requests)
        if run.head_repository is None or run.head_branch is None:
            return []  # the fork is gone, or the run is not for a branch
        owner = run.head_repository.full_name.split("/", 1)[0]
        params = {"head": f"{owner}:{run.head_branch}", "state": "open"}
        found = self._list(PullRequest, f"/repos/{repo}/pulls", params)
        return [pull for pull in found if pull.head.sha == run.head_sha]

    def list_comments(self, repo: str, number: int) -> list[IssueComment]:
        """The comments of issue or pull request `number`, oldest first, all pages."""
        return list(self.repo(repo).get_issue(number).get_comments())

    def create_comment(self, repo: str, number: int, body: str) -> IssueComment:
        """Post a comment. A 5xx or timeout is not resent here (the comment may exist now):
        GitHubUnavailable(ambiguous=True) says so; upsert_comment handles it."""
        return self.repo(repo).get_issue(number).create_comment(body)

    def edit_comment(self, repo: str, comment_id: int, body: str) -> IssueComment:
        comment = IssueComment(self.requester(), url=f"/repos/{repo}/issues/comments/{comment_id}")
        comment.edit(body)
        return comment

    def find_sticky_comment(self, repo: str, number: int) -> IssueComment | None:
        """Our sticky comment on the pull request (the oldest, if a race left two)."""
        mine = self._sticky_comments(repo, number)
        return mine[0] if mine else None

    def _sticky_comments(self, repo: str, number: int) -> list[IssueComment]:
        author = self.login
        return [c for c in self.list_comments(repo, number) if is_sticky(c, author)]

    def upsert_comment(
        self, repo: str, number: int, body: str, *, says: Callable[[str], bool] | None = None
    ) -> CommentResult:
        """Make our one comment on the pull request say `body`.

        Creates it if absent, edits it only if its body differs (`says(old_body)` true: it
        says `body` already, whatever their text), and never posts a second:
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
                return self._update(repo, mine, body, says)
            try:
                made = self.create_comment(repo, number, body)
            except GitHubUnavailable as error:
                if not error.ambiguous or attempt >= policy.attempts:
                    raise
                pause("5xx" if error.status else "timeout", policy.backoff_for(attempt))
                continue
            return CommentResult(made.id, "created", made.html_url)

    def _update(
        self, repo: str, mine: list[IssueComment], body: str, says: Callable[[str], bool] | None
    ) -> CommentResult:
        keep, duplicates = mine[0], tuple(c.id for c in mine[1:])
        shown = keep.body or ""
        if says(shown) if says is not None else same_text(shown, body):
            return CommentResult(keep.id, "unchanged", keep.html_url, duplicates)
        edited = self.edit_comment(repo, keep.id, body)
        return CommentResult(edited.id, "updated", edited.html_url, duplicates)

    def react(self, repo: str, comment_id: int, content: str) -> None:
        """Add our reaction `content` ("eyes", "+1", ...) to comment `comment_id`. GitHub
        answers 200 when we reacted so before, so a job run again reacts once."""
        url = f"/repos/{repo}/issues/comments/{comment_id}/reactions"
        self.requester().requestJsonAndCheck("POST", url, input={"content": content})

    # ---- check runs (the App's `checks: write`; a personal token cannot create them) -------

    def create_check_run(self, repo: str, fields: dict[str, Any]) -> CheckRun:
        """Create a check run (`name`, `head_sha`, and any of GitHub's optional fields).

        Not resent after a 5xx or timeout (it may exist now): callers find it again by its
        external_id before creating another."""
        return self.repo(repo).create_check_run(**fields)

    def update_check_run(self, check: CheckRun, fields: dict[str, Any]) -> CheckRun:
        """Update a check run. GitHub appends the annotations of every update to the ones it
        has: resending one shows it twice, so a PATCH is never resent after a 5xx."""
        check.edit(**fields)
        return check

    def find_check_run(
        self, repo: str, head_sha: str, name: str, external_id: str
    ) -> CheckRun | None:
        """The check run called `name` with `external_id` on commit `head_sha`, if any."""
        found = self._list(
            CheckRun,
            f"/repos/{repo}/commits/{head_sha}/check-runs",
            {"check_name": name, "filter": "all"},
            item="check_runs",
        )
        return next((run for run in found if run.external_id == external_id), None)


def same_text(old: str, new: str) -> bool:
    # GitHub keeps bodies as sent, but a browser edit turns newlines into CRLF.
    return old.replace("\r\n", "\n") == new.replace("\r\n", "\n")
