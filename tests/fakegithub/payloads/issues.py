"""Issue comments, pull requests and collaborator permissions."""

from __future__ import annotations

from ..http_types import JsonObject
from ..models import App, Comment, PullRequest, Reaction, Repo, User
from .apps import app_payload
from .core import Urls, iso, iso_required, node_id, repo_payload, user_payload

REACTION_KINDS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "eyes", "rocket")
# GitHub's legacy `permission` collapses the five roles onto four values.
LEGACY_PERMISSION = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
}


def comment_payload(
    urls: Urls,
    comment: Comment,
    repo: Repo,
    association: str,
    via_app: App | None,
) -> JsonObject:
    api = f"{urls.repo_api(repo)}/issues/comments/{comment.id}"
    counts = {kind: sum(r.content == kind for r in comment.reactions) for kind in REACTION_KINDS}
    reactions: JsonObject = {"url": f"{api}/reactions", "total_count": len(comment.reactions)}
    reactions.update(counts)
    return {
        "id": comment.id,
        "node_id": node_id("IssueComment", comment.id),
        "url": api,
        "html_url": (
            f"{urls.repo_web(repo)}/pull/{comment.issue_number}#issuecomment-{comment.id}"
        ),
        "body": comment.body,
        "user": user_payload(urls, comment.author),
        "created_at": iso_required(comment.created_at),
        "updated_at": iso_required(comment.updated_at),
        "issue_url": f"{urls.repo_api(repo)}/issues/{comment.issue_number}",
        "author_association": association,
        "performed_via_github_app": app_payload(urls, via_app, 1) if via_app else None,
        "reactions": reactions,
        "pin": None,
        "minimized": None,
    }


def reaction_payload(urls: Urls, reaction: Reaction) -> JsonObject:
    return {
        "id": reaction.id,
        "node_id": node_id("Reaction", reaction.id),
        "user": user_payload(urls, reaction.user),
        "content": reaction.content,
        "created_at": iso_required(reaction.created_at),
    }


def pull_payload(
    urls: Urls, pull: PullRequest, repo: Repo, head_repo: Repo, association: str
) -> JsonObject:
    api = f"{urls.repo_api(repo)}/pulls/{pull.number}"
    issue = f"{urls.repo_api(repo)}/issues/{pull.number}"
    html = f"{urls.repo_web(repo)}/pull/{pull.number}"
    statuses = f"{urls.repo_api(repo)}/statuses/{pull.head_sha}"
    links = {
        "self": api,
        "html": html,
        "issue": issue,
        "comments": f"{issue}/comments",
        "review_comments": f"{api}/comments",
        "review_comment": f"{urls.repo_api(repo)}/pulls/comments{{/number}}",
        "commits": f"{api}/commits",
        "statuses": statuses,
    }
    return {
        "url": api,
        "id": pull.id,
        "node_id": node_id("PullRequest", pull.id),
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": issue,
        "commits_url": f"{api}/commits",
        "review_comments_url": f"{api}/comments",
        "review_comment_url": links["review_comment"],
        "comments_url": f"{issue}/comments",
        "statuses_url": statuses,
        "number": pull.number,
        "state": pull.state,
        "locked": False,
        "title": pull.title,
        "user": user_payload(urls, pull.author),
        "body": pull.body,
        "labels": [],
        "milestone": None,
        "active_lock_reason": None,
        "created_at": iso_required(pull.created_at),
        "updated_at": iso_required(pull.updated_at),
        "closed_at": iso(pull.closed_at),
        "merged_at": None,
        "merge_commit_sha": None,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": _side(urls, head_repo, pull.head_ref, pull.head_sha),
        "base": _side(urls, repo, pull.base_ref, pull.base_sha),
        "_links": {name: {"href": href} for name, href in links.items()},
        "author_association": association,
        "auto_merge": None,
        "draft": pull.draft,
        "merged": pull.merged,
        "mergeable": None,  # GitHub computes this lazily; the first read is often null
        "rebaseable": None,
        "mergeable_state": "unknown",
        "merged_by": None,
        "comments": 0,
        "review_comments": 0,
        "maintainer_can_modify": False,
        "commits": 1,
        "additions": 1,
        "deletions": 0,
        "changed_files": 1,
    }


def _side(urls: Urls, repo: Repo, ref: str, sha: str) -> JsonObject:
    return {
        "label": f"{repo.owner.login}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": user_payload(urls, repo.owner),
        "repo": repo_payload(urls, repo),
    }


def permission_payload(urls: Urls, user: User, role: str | None) -> JsonObject:
    """`role` None: the user has no role on the repository."""
    legacy = LEGACY_PERMISSION.get(role or "", "none")
    collaborator = {
        **user_payload(urls, user),
        "permissions": {
            "admin": legacy == "admin",
            "maintain": role in ("admin", "maintain"),
            "push": legacy in ("admin", "write"),
            "triage": legacy in ("admin", "write") or role == "triage",
            "pull": legacy != "none",
        },
        "role_name": role or "none",
    }
    return {"permission": legacy, "role_name": role or "none", "user": collaborator}
