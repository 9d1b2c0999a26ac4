"""Pull requests and our one sticky comment on each: look-ups, listing, create, edit, upsert.

A mixin of GitHubClient (github_client.py). A comment is ours when the client's `login`
wrote it and it starts with the hidden marker (is_sticky); upsert_comment keeps it one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from triage_bot.core.render import COMMENT_MARKER
from triage_bot.github_api.github_http import ClientOptions, Transport
from triage_bot.github_api.github_models import (
    CommentResult,
    IssueComment,
    PullRef,
    PullRequest,
    WorkflowRun,
)
from triage_bot.github_api.github_retry import GitHubUnavailable, Retry, pause

_COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"


def is_sticky(comment: IssueComment, author: str) -> bool:
    """Our sticky comment: written by `author` and starting with the hidden marker.

    Both are needed: anyone can paste the marker (quoting our comment does), and the bot
    may write other comments (replies to commands) that are not the sticky one.
    """
    return comment.author.lower() == author.lower() and comment.body.lstrip().startswith(
        COMMENT_MARKER
    )


class PullsMixin:
    _api: Transport
    options: ClientOptions

    if TYPE_CHECKING:  # GitHubClient's property: the account our writes appear under

        @property
        def login(self) -> str: ...

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


def _same_text(old: str, new: str) -> bool:
    # GitHub keeps bodies as sent, but a browser edit turns newlines into CRLF.
    return old.replace("\r\n", "\n") == new.replace("\r\n", "\n")
